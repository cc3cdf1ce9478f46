#!/usr/bin/env bash
# The window's order (runtime.window_schedule) on the small preset: micro_batch against unit at
# stage 3 with whole blocks recomputed, K = 4, one rank, offload none, all in host memory and all
# in offload_dir's files. Prints per case the median tokens/s of steps 2..STEPS (step 1 warms up)
# and the offload files' bytes read in the last step (io/read_bytes, offload_dir only).
# Usage: bench/window_order.sh [OFFLOAD_DIR] [STEPS]  (default /work/offbench, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/work/offbench}
steps=${2:-5}
mkdir -p "$dir"
store="${TMPDIR:-/tmp}/window-order-store"
printf '| offload | schedule | tokens/s (median of steps 2-%s) | offload_dir read per step |\n|---|---|---|---|\n' "$steps"
for v in none all-host all-dir; do
  for schedule in micro_batch unit; do
    extra=""
    case $v in
      all-host) extra="--set runtime.offload=all" ;;
      all-dir) extra="--set runtime.offload=all --set runtime.offload_dir=$dir" ;;
    esac
    rm -rf "$store"
    # shellcheck disable=SC2086
    build/bin/trainbench-cli run configs/small.json --set train.steps="$steps" --set train.eval_every=0 \
      --set train.final_checkpoint=false --set runtime.zero_stage=3 --set runtime.activation_checkpointing=full \
      --set train.gradient_accumulation_steps=4 --set runtime.window_schedule=$schedule $extra \
      --store "$store" >"$store.log" 2>&1
    rate=$(grep -o 'tokens/s [0-9]*' "$store.log" | awk 'NR>1 {print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    id=$(build/bin/trainbench-cli runs --store "$store" | awk 'NR==2 {print $1}')
    read_bytes=$(build/bin/trainbench-cli export "$id" --store "$store" --format csv |
      awk -F, '$4=="io/read_bytes" {v=$5} END {if (v != "") printf "%.1f MiB", v / 1048576}')
    printf '| %s | %s | %s | %s |\n' "$v" "$schedule" "$rate" "${read_bytes:--}"
  done
done
