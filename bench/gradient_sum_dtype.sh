#!/usr/bin/env bash
# The small preset trained with its gradient slice sums in fp32 and in bf16
# (runtime.gradient_sum_dtype) from the same seed and data, at ZeRO stage 2 on two CPU rank
# threads with K micro-batches a window (each window's sums rounded K times in bf16): the loss of
# each every STEPS/10 steps, bf16's relative difference, the mean over the last tenth, the largest
# difference, and the first step's gradient norm of each.
# Usage: bench/gradient_sum_dtype.sh [STEPS] [SEQ_LEN] [MICRO_BATCH] [K]   (default 300 64 1 4;
# docs/BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300} seq=${2:-64} m=${3:-1} k=${4:-4}
store=$(mktemp -d "${TMPDIR:-/tmp}/gradient-sums.XXXXXX")
trap 'rm -rf "$store"' EXIT
for dtype in fp32 bf16; do
  summary=$(build/bin/trainbench-cli run configs/small.json --store "$store" --name "small-sums-$dtype" \
    --set runtime.device=cpu --set runtime.world_size=2 --set runtime.zero_stage=2 \
    --set runtime.gradient_sum_dtype=$dtype --set train.steps=$steps \
    --set train.seq_len=$seq --set train.micro_batch_size=$m --set train.gradient_accumulation_steps=$k \
    --set train.warmup_steps=$((steps / 10)) --set train.eval_every=0 --set train.final_checkpoint=false \
    2>/dev/null | tail -1)
  echo "$summary" > "$store/$dtype.json"
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$store/$dtype.json")
  build/bin/trainbench-cli export "$id" --format jsonl --store "$store" > "$store/$dtype.jsonl"
done
python3 - "$store" "$steps" <<'PY'
import json, sys
store, steps = sys.argv[1], int(sys.argv[2])
def series(dtype, key):
    out = {}
    for line in open(f"{store}/{dtype}.jsonl"):
        p = json.loads(line)
        if p.get("key") == key:
            out[int(p["step"])] = float(p["value"])
    return out
fp32, bf16 = series("fp32", "train/loss"), series("bf16", "train/loss")
every = max(1, steps // 10)
print(f"{'step':>6} {'fp32 sums':>10} {'bf16 sums':>10} {'bf16/fp32-1':>12}")
for s in sorted(fp32):
    if s % every == 0 or s == max(fp32):
        print(f"{s:>6} {fp32[s]:>10.4f} {bf16[s]:>10.4f} {bf16[s] / fp32[s] - 1:>+12.3%}")
n = max(1, steps // 10)
last = sorted(fp32)[-n:]
a, b = sum(fp32[s] for s in last) / n, sum(bf16[s] for s in last) / n
print(f"mean of the last {n} steps: fp32 {a:.4f}, bf16 {b:.4f}, bf16/fp32-1 {b / a - 1:+.3%}")
worst = max(fp32, key=lambda s: abs(bf16[s] / fp32[s] - 1))
print(f"largest difference: {bf16[worst] / fp32[worst] - 1:+.3%} at step {worst}")
g32, g16 = series("fp32", "train/grad_norm"), series("bf16", "train/grad_norm")
first = min(g32)
print(f"first step's gradient norm: fp32 {g32[first]:.6f}, bf16 {g16[first]:.6f} ({g16[first] / g32[first] - 1:+.4%})")
for dtype in ("fp32", "bf16"):
    print(f"tokens/s {dtype} sums: {json.load(open(f'{store}/{dtype}.json')).get('tokens_per_s', 0.0):.0f}")
PY
