#!/usr/bin/env bash
# Offload all against none on the small preset at stage 3, K = 1, 4, 16 (docs/BENCHMARKS.md).
# Usage: bench/offload_all.sh [OFFLOAD_DIR] (default /work/offbench; a directory on a real disk)
cd "$(dirname "$0")/.."
for K in 1 4 16; do
 for v in none all-host all-dir; do
  extra=""
  case $v in all-host) extra="--set runtime.offload=all";; all-dir) extra="--set runtime.offload=all --set runtime.offload_dir=${1:-/work/offbench}";; esac
  out=$(build/bin/trainbench-cli run configs/small.json --set train.steps=4 --set train.eval_every=0 --set train.final_checkpoint=false --set runtime.zero_stage=3 --set train.gradient_accumulation_steps=$K $extra --store "${TMPDIR:-/tmp}/offload-all-store" 2>/dev/null | tail -1)
  echo "$K $v $out"
 done
done
