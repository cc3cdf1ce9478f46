#!/usr/bin/env bash
# The planner's step time against measurement on this machine's CPU rank threads: the small
# preset at stage 3, W 2, K 4, whole blocks recomputed, offload none / optimizer / all (all in
# offload_dir's files) under both window orders. The planner plans for "here" with this
# machine's probed figures (`trainbench-cli probe`, its "plan with these" flags); each case
# trains STEPS steps REPEATS times and takes the median over the runs of each run's median step
# time after its first step.
# Usage: bench/plan_vs_measured.sh [OFFLOAD_DIR] [STEPS] [REPEATS]  (default /work/offbench, 4, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli
dir=${1:-/work/offbench}
steps=${2:-4}
repeats=${3:-3}
mkdir -p "$dir"
common=(--set runtime.zero_stage=3 --set runtime.world_size=2 --set train.gradient_accumulation_steps=4
        --set runtime.activation_checkpointing=full --set train.eval_every=0 --set train.final_checkpoint=false)
probe=$("$cli" probe configs/small.json "${common[@]}" --set runtime.offload=all --set runtime.offload_dir="$dir" \
  --dir "$dir" --mib 256 2>/dev/null)
probe_flags=$(sed -n 's/^plan with these: //p' <<<"$probe")
# (on CPU ranks the probe gives the compute too: a rank's fp32 matrix rate and the MFU one
# micro-batch of small reaches of it)
echo "probe: $probe_flags"
store="${TMPDIR:-/tmp}/plan-vs-measured"
printf '| offload | schedule | predicted step | bound | measured step (median of %s) | measured / predicted |\n' "$repeats"
printf '|---|---|---|---|---|---|\n'
for offload in none optimizer all; do
  extra=()
  [ "$offload" != none ] && extra=(--set runtime.offload=$offload --set runtime.offload_dir="$dir")
  for schedule in micro_batch unit; do
    # shellcheck disable=SC2086
    predicted=$("$cli" plan configs/small.json "${common[@]}" "${extra[@]}" --set runtime.window_schedule=$schedule \
      $probe_flags --json | python3 -c 'import json,sys; t=json.load(sys.stdin)["step_time"]; print(t["step_s"], t["bound"])')
    times=()
    for r in $(seq "$repeats"); do
      rm -rf "$store"
      "$cli" run configs/small.json "${common[@]}" "${extra[@]}" --set runtime.window_schedule=$schedule \
        --set train.steps="$steps" --store "$store" >/dev/null 2>&1
      id=$("$cli" runs --store "$store" | awk 'NR==2 {print $1}')
      times+=("$("$cli" export "$id" --store "$store" --format csv |
        awk -F, '$4=="perf/step_time_s" && $1>1 {print $5}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')")
    done
    measured=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    python3 - "$offload" "$schedule" $predicted "$measured" <<'PY'
import sys
offload, schedule, predicted, bound, measured = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
print("| %s | %s | %.2f s | %s | %.2f s | %.2f |" % (offload, schedule, predicted, bound, measured, measured / predicted))
PY
  done
done
