#!/usr/bin/env bash
# Corpora at scale through the token cache (docs/BENCHMARKS.md, "Corpora at scale"): for a
# JSON Lines corpus of MEGABYTES (and ten times that: the same file ten times over), a Parquet
# file of the same documents, and the JSON Lines through a byte-level BPE of 8,192 ids (when the
# tokenizers test environment is there): the first pass's wall time and MB/s of file, the cache's
# size, the wall time of a cache hit (after `sync`; best of 3, and the same on a one-document
# corpus: the program's start), and the maximum resident set of `data` (first pass and hit) and
# of a 3-step `run` of the tiny preset, each less the same command on a one-document corpus of the
# format (what the corpus adds beyond the program and the model).
#   bench/data_scale.sh [MEGABYTES (600)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="$root/build/bin/trainbench-cli"
megabytes="${1:-600}"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
tokenizers_python="${TRAINBENCH_TEST_PY:-$HOME/.cache/trainbench/test-tokenizers-0.23.3}/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" "$root/bench/make_formats_corpus.py" "$root" "$work/corpus" "$megabytes" > /dev/null
mkdir -p "$work/large" "$work/one"
for _ in $(seq 10); do cat "$work/corpus/corpus.jsonl"; done > "$work/large/corpus.jsonl"
one="$(printf 'one short document, %.0s' $(seq 20))"
printf '{"text": "%s"}\n' "$one" > "$work/one/corpus.jsonl"
"$python" -c 'import pyarrow as pa, pyarrow.parquet as pq, sys
pq.write_table(pa.table({"text": [sys.argv[2]]}), sys.argv[1])' "$work/one/corpus.parquet" "$one"

have_bpe=0
if [ -x "$tokenizers_python" ]; then
  "$tokenizers_python" "$root/bench/train_bpe.py" "$work/corpus/corpus.txt" "$work/bpe.json" >/dev/null 2>&1
  have_bpe=1
fi
rm -f "$work/corpus/corpus.txt"

config() {  # SOURCE PATH TOKENIZER(bytes|bpe) -> config file
  local file="$work/config-$RANDOM$RANDOM.json"
  "$python" - "$root/configs/tiny.json" "$1" "$2" "$3" "$work/bpe.json" "$file" <<'PY'
import json, sys
base, source, path, tok, bpe, out = sys.argv[1:]
c = json.load(open(base))
c["data"] = {"source": source, "path": path, "val_fraction": 0.5}
c["model"]["vocab_size"] = 256
c["train"]["seq_len"] = 4
if tok == "bpe":
    c["data"]["tokenizer"] = bpe
    c["model"]["vocab_size"] = 8192
json.dump(c, open(out, "w"))
PY
  echo "$file"
}

best_hit() {  # CACHE ARGS... -> "best wall_s of 3, max_rss_kb of the last"
  local best="" wall rss
  for _ in 1 2 3; do
    read -r wall rss < <(measure "$@")
    best="$(awk -v a="$best" -v t="$wall" 'BEGIN { print (a == "" || t < a) ? t : a }')"
  done
  echo "$best $rss"
}

measure() {  # CACHE ARGS... -> "wall_s max_rss_kb"; the JSON output in $work/last.json
  local cache="$1"; shift
  TRAINBENCH_TOKEN_CACHE="$cache" /usr/bin/time -f "%e %M" -o "$work/time" "$cli" "$@" > "$work/last.json" 2> "$work/last.err" ||
    { echo "data_scale: trainbench-cli $* failed: $(tail -2 "$work/last.err")" >&2; exit 1; }
  cat "$work/time"
}

row() {  # LABEL SOURCE FILE ONE-DOC-FILE TOKENIZER
  local label="$1" source="$2" file="$3" one="$4" tok="$5"
  local big small
  big="$(config "$source" "$file" "$tok")"
  small="$(config "$source" "$one" "$tok")"
  rm -rf "$work/cache" "$work/cache-one" "$work/store"
  read -r s_first s_first_rss < <(measure "$work/cache-one" data "$small" --json)
  read -r s_hit s_hit_rss < <(best_hit "$work/cache-one" data "$small" --json)
  read -r _ s_run_rss < <(measure "$work/cache-one" run "$small" --set train.steps=3 --store "$work/store")
  read -r first first_rss < <(measure "$work/cache" data "$big" --json)
  sync  # the cache just written reaches the disk first: its writeback would stall the next reads
  local cache_bytes
  cache_bytes="$("$python" -c 'import json, sys; print(sum(c["bytes"] for c in json.load(open(sys.argv[1]))["token_caches"]))' "$work/last.json")"
  read -r hit hit_rss < <(best_hit "$work/cache" data "$big" --json)
  read -r _ run_rss < <(measure "$work/cache" run "$big" --set train.steps=3 --store "$work/store")
  awk -v l="$label" -v mb="$(du -b "$file" | awk '{print $1 / 1e6}')" -v f="$first" -v sf="$s_first" \
      -v c="$cache_bytes" -v h="$hit" -v sh="$s_hit" -v fr="$first_rss" -v sfr="$s_first_rss" -v hr="$hit_rss" \
      -v shr="$s_hit_rss" -v rr="$run_rss" -v srr="$s_run_rss" 'BEGIN {
    printf "| %s | %.0f | %.1f | %.0f | %.0f | %.2f / %.2f | %.1f / %.1f / %.1f |\n", l, mb, f, mb / (f - sf), c / 1e6,
      h, sh, (fr - sfr) / 1024, (hr - shr) / 1024, (rr - srr) / 1024 }'
}

echo "| corpus | file MB | first pass s | MB/s | cache MB | hit s: this corpus / one document | RSS beyond a one-document corpus, MB: first pass / hit / 3-step run |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row "JSON Lines, bytes" jsonl "$work/corpus/corpus.jsonl" "$work/one/corpus.jsonl" bytes
row "Parquet, bytes" parquet "$work/corpus/corpus.parquet" "$work/one/corpus.parquet" bytes
[ "$have_bpe" = 1 ] && row "JSON Lines, BPE 8,192" jsonl "$work/corpus/corpus.jsonl" "$work/one/corpus.jsonl" bpe
row "JSON Lines x 10, bytes" jsonl "$work/large/corpus.jsonl" "$work/one/corpus.jsonl" bytes
[ "$have_bpe" = 1 ] && row "JSON Lines x 10, BPE 8,192" jsonl "$work/large/corpus.jsonl" "$work/one/corpus.jsonl" bpe
