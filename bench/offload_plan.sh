#!/usr/bin/env bash
# The planner's table: the published DeepSeek configs on GPUs of 80 GB (H100 nodes with their
# DGX's host memory and NVMe), seq_len 4096, bf16, a global batch of 64 sequences, under both
# window orders: micro_batch, and auto (the unit order wherever the layout streams the weights).
# For each: what fits (layout, m, K, offload), the peak of each tier and the predicted step.
# Usage: bench/offload_plan.sh [KIND] [EXTRA --set ...]   (KIND default h100-80)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli
kind=${1:-h100-80}
shift || true
printf '| config | GPUs | host / node | order | layout that fits | m x K | device peak | host used / node | NVMe / node | predicted step | bound |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
# config, GPUs, host memory of a node in GiB (0: the kind's)
for row in "16B 1 0" "236B 1 0" "236B 4 0" "236B 8 0" "671B 8 0" "671B 8 4096"; do
  read -r config gpus host <<<"$row"
  for order in micro_batch auto; do
    "$cli" plan "configs/deepseek/config_$config.json" --json --target "${gpus}x$kind" \
      --set train.seq_len=4096 --set train.micro_batch_size=1 \
      --set train.gradient_accumulation_steps=$((64 / gpus)) --set runtime.dtype=bf16 \
      --set runtime.window_schedule=$order --set target.host_memory_gib=$host "$@" |
      python3 -c '
import json, sys
config, gpus, host, order = sys.argv[1:5]
p = json.load(sys.stdin)
a = p["advice"]
c = a.get("cheapest")
gib = lambda b: "%.0f GiB" % (b / 2**30) if b < 2**40 else "%.1f TiB" % (b / 2**40)
node = "2 TiB" if host == "0" else gib(int(host) * 2**30)
def when(s):
    return "%.1f min" % (s / 60) if s >= 90 else "%.1f s" % s
if not c:
    print("| %s | %s | %s | %s | none: %s | | | | | | |" % (config, gpus, node, order, a.get("why_none", "")))
    sys.exit()
unit = c["window_schedule"] == "unit"
sums = c["gradient_sums"]
layout = "stage %d, recompute %s%s, offload %s%s%s" % (c["zero_stage"], c["activation_checkpointing"],
    ", EP %d" % c["expert_parallel"] if c["expert_parallel"] > 1 else "", c["offload"],
    " (NVMe)" if c["offload_nvme"] else (" (host)" if c["offload"] != "none" else ""),
    ", sums on NVMe" if sums == "file" else "")
rpn = min(int(gpus), 8)
k = 64 // int(gpus) // c["micro_batch_size"]
t = c.get("step_time", {})
print("| %s | %s | %s | %s | %s | %d x %d | %s | %s | %s | %s | %s |" % (config, gpus, node,
    "unit" if unit else "micro_batch", layout, c["micro_batch_size"], k, gib(c["peak_bytes"]),
    gib(c["host_bytes"] * rpn), gib(c["nvme_bytes"] * rpn) if c["nvme_bytes"] else "-",
    when(t.get("step_s", 0)), t.get("bound", "")))
' "$config" "$gpus" "$host" "$order"
  done
done
