#!/usr/bin/env bash
# The small preset trained in bf16 and in fp8 on the CPU from the same seed: the loss of each
# every STEPS/10 steps, fp8's relative difference to bf16 and its trend, and the tokens/s of
# each (fp8 on the CPU is the recipe's emulation: a numerical reference, not a speed path).
# Usage: bench/fp8_loss.sh [STEPS] [SEQ_LEN] [MICRO_BATCH]   (default 300 64 2; docs/BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300} seq=${2:-64} m=${3:-2}
store=$(mktemp -d "${TMPDIR:-/tmp}/fp8-loss.XXXXXX")
trap 'rm -rf "$store"' EXIT
for dtype in bf16 fp8; do
  summary=$(build/bin/trainbench-cli run configs/small.json --store "$store" --name "small-$dtype" \
    --set runtime.device=cpu --set runtime.dtype=$dtype --set train.steps=$steps \
    --set train.seq_len=$seq --set train.micro_batch_size=$m --set train.gradient_accumulation_steps=1 \
    --set train.warmup_steps=$((steps / 10)) --set train.eval_every=0 --set train.final_checkpoint=false \
    2>/dev/null | tail -1)
  echo "$summary" > "$store/$dtype.json"
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$store/$dtype.json")
  build/bin/trainbench-cli export "$id" --format jsonl --store "$store" > "$store/$dtype.jsonl"
done
python3 - "$store" "$steps" <<'PY'
import json, sys
store, steps = sys.argv[1], int(sys.argv[2])
def losses(dtype):
    out = {}
    for line in open(f"{store}/{dtype}.jsonl"):
        p = json.loads(line)
        if p.get("key") == "train/loss":
            out[int(p["step"])] = float(p["value"])
    return out
def rate(dtype):
    return json.load(open(f"{store}/{dtype}.json")).get("tokens_per_s", 0.0)
bf16, fp8 = losses("bf16"), losses("fp8")
every = max(1, steps // 10)
print(f"{'step':>6} {'bf16':>10} {'fp8':>10} {'fp8/bf16-1':>11}")
for s in sorted(bf16):
    if s % every == 0 or s == max(bf16):
        print(f"{s:>6} {bf16[s]:>10.4f} {fp8[s]:>10.4f} {fp8[s] / bf16[s] - 1:>+11.3%}")
def mean_last(d, n):
    keys = sorted(d)[-n:]
    return sum(d[k] for k in keys) / len(keys)
n = max(1, steps // 10)
print(f"mean of the last {n} steps: bf16 {mean_last(bf16, n):.4f}, fp8 {mean_last(fp8, n):.4f}, "
      f"fp8/bf16-1 {mean_last(fp8, n) / mean_last(bf16, n) - 1:+.3%}")
print(f"tokens/s: bf16 {rate('bf16'):.0f}, fp8 {rate('fp8'):.0f} (emulated)")
PY
