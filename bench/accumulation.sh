#!/usr/bin/env bash
# What accumulation costs: the same tokens per optimizer step split as (m, K, W), trained by
# trainbench-cli on this machine, one JSON line per split:
#   bench/accumulation.sh PRESET "m K W [DTYPE]" ...     e.g. accumulation.sh tiny "16 1 1" "8 2 1" "2 8 1"
# DTYPE is runtime.dtype (fp32 when left out): "8 2 1 fp32" "8 2 1 bf16" compares the two.
# SETS adds overrides to every run, e.g. SETS="--set runtime.zero_stage=1".
# Splits alternate (A B C A B C ..., ROUNDS times, default 3); reported are the medians of the
# per-step time after WARMUP steps (tokens/s from it), of the collectives per optimizer step
# (comm/collectives), of the process's peak resident memory and of the peak bytes the engine's
# tracking allocator saw on any rank (the run's tensors, without the libraries' own memory). 2 threads in all (with W ranks
# they share them), fp32 unless the split names a dtype, eval and checkpoints off, synthetic Markov data.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="$1"; shift
steps="${STEPS:-30}"; warmup="${WARMUP:-5}"; rounds="${ROUNDS:-3}"
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
bash "$root/scripts/setup-system.sh" time >&2  # /usr/bin/time measures the peak resident memory
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

declare -A times collectives rss peaks
for ((r = 0; r < rounds; r++)); do
  for split in "$@"; do
    read -r m k w dtype <<<"$split"
    sets=(--set "runtime.dtype=${dtype:-fp32}" --set "train.micro_batch_size=$m" --set "train.gradient_accumulation_steps=$k" --set "runtime.world_size=$w"
          --set train.global_batch_size=null --set "train.steps=$steps" --set train.eval_every=0
          --set train.checkpoint_every=0 --set runtime.threads=2 ${SETS:-})
    /usr/bin/time -f "%M" -o "$work/rss" "$cli" run "$root/configs/$preset.json" "${sets[@]}" \
      --store "$work/store" --name "acc-$m-$k-$w" >"$work/run.json" 2>/dev/null
    run_id="$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' "$work/run.json")"
    read -r t c < <("$cli" export "$run_id" --store "$work/store" --format jsonl | "$python" -c '
import json, sys, statistics
w = int(sys.argv[1])
points = [p for p in map(json.loads, sys.stdin) if p["step"] > w]
t = [p["value"] for p in points if p["key"] == "perf/step_time_s"]
c = [p["value"] for p in points if p["key"] == "comm/collectives"]
print(statistics.median(t), statistics.median(c))' "$warmup")
    peak="$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["peak_memory_bytes"])' "$work/run.json")"
    times[$split]+="$t "; collectives[$split]+="$c "; rss[$split]+="$(cat "$work/rss") "; peaks[$split]+="$peak "
  done
done

for split in "$@"; do
  read -r m k w dtype <<<"$split"
  "$cli" config "$root/configs/$preset.json" ${SETS:-} --set "train.micro_batch_size=$m" \
    --set "train.gradient_accumulation_steps=$k" --set "runtime.world_size=$w" --set train.global_batch_size=null \
    >"$work/config.json"
  "$python" - "$preset" "$m" "$k" "$w" "${dtype:-fp32}" "${times[$split]}" "${collectives[$split]}" "${rss[$split]}" "${peaks[$split]}" "$work/config.json" <<'PY'
import json, statistics, sys
preset, m, k, w, dtype, t, c, rss, peaks, config = sys.argv[1:]
seq_len = json.load(open(config))["train"]["seq_len"]
tokens = int(m) * int(k) * int(w) * seq_len
med = lambda s: statistics.median(float(v) for v in s.split())
print(json.dumps({"preset": preset, "m": int(m), "K": int(k), "W": int(w), "dtype": dtype, "tokens_per_step": tokens,
                  "step_time_s": round(med(t), 4), "tokens_per_s": round(tokens / med(t)),
                  "collectives_per_step": med(c), "peak_rss_mib": round(med(rss) / 1024),
                  "peak_tracked_mib": round(med(peaks) / 2**20, 2)}))
PY
done
