#!/usr/bin/env bash
# CPU ranks as processes (Gloo) against rank threads (the in-process hub), three tables:
#   1. Gloo's all-reduce between 2 processes under torchrun at 1, 16 and 64 MiB (bench_gloo_allreduce);
#   2. the small preset's tokens/s at W 2 and 4, processes against threads (median of steps 2..STEPS);
#   3. the hub against Gloo between the threads of one process (TRAINBENCH_CPU_COLLECTIVES=gloo)
#      on the conformance splits (tiny, m 4 x K 2, ZeRO 0-3, W 2 and 4): the median step time.
# Every rank gets one thread (runtime.threads 1): on a machine of few cores the processes and the
# threads then compete for the same cores alike.
# Usage: bench/processes.sh [STEPS]  (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-5}
python="${TRAINBENCH_TORCH_PYTHON:-$HOME/.cache/trainbench/torch-2.11.0/bin/python}"
cli=build/bin/trainbench-cli
work="${TMPDIR:-/tmp}/processes-bench"
rm -rf "$work" && mkdir -p "$work"
port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
torchrun() { local n=$1; shift; "$python" -m torch.distributed.run --nproc-per-node "$n" --master-port "$(port)" --no-python "$@"; }
# The median of a run log's "tokens/s N" from step 2 on (step 1 warms up).
median_rate() { grep -o 'tokens/s [0-9]*' "$1" | awk 'NR>1 {print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "1. Gloo all-reduce, 2 processes on this machine (fp32 sum, bus rate 2(W-1)/W x bytes / s)"
printf '| MiB | ms per call | bus GB/s |\n|---|---|---|\n'
torchrun 2 build/bin/bench_gloo_allreduce 2>/dev/null | grep '"engine"' |
  "$python" -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line); print("| %d | %.2f | %.2f |" % (r["mib"], r["seconds"] * 1e3, r["bus_gb_per_s"]))'

echo
echo "2. small, m 4 x K 4, tokens/s (median of steps 2-$steps)"
printf '| W | threads | processes |\n|---|---|---|\n'
for w in 2 4; do
  common=(run configs/small.json --set train.steps="$steps" --set train.eval_every=0 --set train.final_checkpoint=false
          --set runtime.threads=1 --set runtime.device=cpu --store "$work/store")
  "$cli" "${common[@]}" --set runtime.world_size=$w >"$work/threads.log" 2>&1
  torchrun $w "$cli" "${common[@]}" >"$work/processes.log" 2>&1
  printf '| %s | %s | %s |\n' $w "$(median_rate "$work/threads.log")" "$(median_rate "$work/processes.log")"
done

echo
echo "3. rank threads of one process: the hub against Gloo (tiny, m 4 x K 2, 20 steps; ms per step, median of steps 2-20)"
printf '| W | ZeRO | hub | Gloo | Gloo / hub |\n|---|---|---|---|---|\n'
for w in 2 4; do
  for stage in 0 1 2 3; do
    common=(run configs/tiny.json --set train.steps=20 --set train.eval_every=0 --set train.final_checkpoint=false
            --set runtime.threads=1 --set train.micro_batch_size=4 --set runtime.world_size=$w
            --set runtime.zero_stage=$stage --store "$work/store")
    "$cli" "${common[@]}" >"$work/hub.log" 2>&1
    TRAINBENCH_CPU_COLLECTIVES=gloo "$cli" "${common[@]}" >"$work/gloo.log" 2>&1
    hub=$(median_rate "$work/hub.log"); gloo=$(median_rate "$work/gloo.log")
    # tokens per step: m 4 x K 2 x W x 64 positions
    awk -v w=$w -v s=$stage -v h="$hub" -v g="$gloo" 'BEGIN {
      t = 4 * 2 * w * 64; printf "| %d | %d | %.1f | %.1f | %.2f |\n", w, s, 1e3 * t / h, 1e3 * t / g, h / g }'
  done
done
