#!/usr/bin/env bash
# Reading and tokenising the same documents from each format the document sources read: text,
# parquet, jsonl and jsonl.zst (docs/BENCHMARKS.md, "Data formats"). For each format and each
# tokenization (bytes; a byte-level BPE of 8,192 ids trained on the corpus with Hugging Face
# `tokenizers`, when its test environment is there): `trainbench-cli data --json` on a fresh
# token cache, best wall time of REPEATS, less the same command on a one-document file of that
# format (the CLI's start), as MB/s of document text; the files' sizes and the token cache's.
# Every format must give the same token counts: the script stops when one differs.
#   bench/data_formats.sh [MEGABYTES (64)] [REPEATS (3)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="$root/build/bin/trainbench-cli"
megabytes="${1:-64}"
repeats="${2:-3}"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
tokenizers_python="${TRAINBENCH_TEST_PY:-$HOME/.cache/trainbench/test-tokenizers-0.23.3}/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

text_bytes="$("$python" "$root/bench/make_formats_corpus.py" "$root" "$work/corpus" "$megabytes")"
zstd -q -3 -T0 "$work/corpus/corpus.jsonl" -o "$work/corpus/corpus.jsonl.zst"
# One document per format: the CLI's start and the source's fixed costs.
mkdir -p "$work/one"
one="$(printf 'one short document, %.0s' $(seq 20))"
printf '%s' "$one" > "$work/one/corpus.txt"
printf '{"text": "%s"}\n' "$one" > "$work/one/corpus.jsonl"
zstd -q "$work/one/corpus.jsonl" -o "$work/one/corpus.jsonl.zst"
"$python" -c 'import pyarrow as pa, pyarrow.parquet as pq, sys
pq.write_table(pa.table({"text": [sys.argv[2]]}), sys.argv[1])' "$work/one/corpus.parquet" "$one"

tokenizations=(bytes)
if [ -x "$tokenizers_python" ]; then
  "$tokenizers_python" "$root/bench/train_bpe.py" "$work/corpus/corpus.txt" "$work/bpe.json" >/dev/null 2>&1
  tokenizations+=(bpe)
else
  echo "(no $tokenizers_python: bytes only; tests/tools/setup-tokenizers-env.sh makes it)"
fi

# A config per format and tokenization: the tiny preset with a data section of its own.
config() {  # FORMAT TOKENIZATION PATH -> config file
  local format="$1" tok="$2" path="$3" file="$work/$1-$2-$(basename "$(dirname "$3")").json"
  "$python" - "$root/configs/tiny.json" "$format" "$tok" "$path" "$work/bpe.json" "$file" <<'EOF'
import json, sys
base, fmt, tok, path, bpe, out = sys.argv[1:]
c = json.load(open(base))
c["data"] = {"source": "text" if fmt == "text" else ("parquet" if fmt == "parquet" else "jsonl"), "path": path,
             "val_fraction": 0.5}  # both parts hold windows of the one-document file too
c["model"]["vocab_size"] = 256
c["train"]["seq_len"] = 4
if tok == "bpe":
    c["data"]["tokenizer"] = bpe
    c["model"]["vocab_size"] = 8192
json.dump(c, open(out, "w"))
EOF
  echo "$file"
}

seconds() {  # CONFIG -> best wall seconds of REPEATS, each on a fresh token cache; the JSON in $work/last.json
  local best=""
  for _ in $(seq "$repeats"); do
    rm -rf "$work/cache"
    local start end
    start=$(date +%s.%N)
    if ! TRAINBENCH_TOKEN_CACHE="$work/cache" "$cli" data "$1" --json > "$work/last.json" 2> "$work/last.err"; then
      echo "data_formats: trainbench-cli data $1 failed: $(tail -1 "$work/last.err")" >&2; exit 1
    fi
    end=$(date +%s.%N)
    best="$(awk -v a="$best" -v s="$start" -v e="$end" 'BEGIN { t = e - s; print (a == "" || t < a) ? t : a }')"
  done
  echo "$best"
}

echo "$megabytes MB of documents ($text_bytes bytes of text), $(nproc) threads, best of $repeats"
printf "%-10s %-6s %12s %10s %10s %12s %14s\n" format ids "file MB" "wall s" "start s" "MB/s" "cache MB"
reference=""
for tok in "${tokenizations[@]}"; do
  for format in text parquet jsonl jsonl.zst; do
    name="corpus.$format"; [ "$format" = text ] && name=corpus.txt
    file="$work/corpus/$name"
    start_s="$(seconds "$(config "$format" "$tok" "$work/one/$name")")"
    wall_s="$(seconds "$(config "$format" "$tok" "$file")")"
    tokens="$("$python" -c 'import json, sys
s = json.load(open(sys.argv[1])); print(s["train_tokens"] + s["val_tokens"])' "$work/last.json")"
    cache_mb="-"
    [ -d "$work/cache" ] && cache_mb="$(du -sb "$work/cache" | awk '{printf "%.1f", $1 / 1e6}')"
    if [ "$format" = text ]; then reference="$tokens"; elif [ "$tokens" != "$reference" ]; then
      echo "data_formats: $format gives $tokens tokens ($tok), text gives $reference"; exit 1
    fi
    printf "%-10s %-6s %12.1f %10.2f %10.2f %12.1f %14s\n" "$format" "$tok" \
      "$(du -b "$file" | awk '{print $1 / 1e6}')" "$wall_s" "$start_s" \
      "$(awk -v b="$text_bytes" -v w="$wall_s" -v s="$start_s" 'BEGIN { print b / 1e6 / (w - s) }')" "$cache_mb"
  done
  echo "  ($tok: $reference tokens in every format)"
done
