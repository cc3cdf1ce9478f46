#!/usr/bin/env bash
# The planner's table: the published DeepSeek configs on 1, 4 and 8 GPUs of 80 GB (H100 nodes
# with their DGX's host memory and NVMe), seq_len 4096, bf16, a global batch of 64 sequences.
# For each: what fits (layout, m, K, offload, host and NVMe per node) and the predicted step.
# Usage: bench/offload_plan.sh [KIND] [EXTRA --set ...]   (KIND default h100-80)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli
kind=${1:-h100-80}
shift || true
printf '| config | GPUs | layout that fits | m x K | host / node | NVMe / node | predicted step | bound |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for config in 16B 236B 671B; do
  for gpus in 1 4 8; do
    "$cli" plan "configs/deepseek/config_$config.json" --json --target "${gpus}x$kind" \
      --set train.seq_len=4096 --set train.micro_batch_size=1 \
      --set train.gradient_accumulation_steps=$((64 / gpus)) --set runtime.dtype=bf16 "$@" |
      python3 -c '
import json, sys
config, gpus = sys.argv[1], sys.argv[2]
p = json.load(sys.stdin)
a = p["advice"]
c = a.get("cheapest")
gib = lambda b: "%.0f GiB" % (b / 2**30) if b < 2**40 else "%.1f TiB" % (b / 2**40)
def when(s):
    return "%.1f min" % (s / 60) if s >= 90 else "%.1f s" % s
if not c:
    print("| %s | %s | none: %s | | | | | |" % (config, gpus, a.get("why_none", "")))
    sys.exit()
layout = "stage %d, recompute %s%s, offload %s%s" % (c["zero_stage"], c["activation_checkpointing"],
    ", EP %d" % c["expert_parallel"] if c["expert_parallel"] > 1 else "", c["offload"],
    " (NVMe)" if c["offload_nvme"] else (" (host)" if c["offload"] != "none" else ""))
rpn = min(int(gpus), 8)
k = 64 // int(gpus) // c["micro_batch_size"]
t = c.get("step_time", {})
print("| %s | %s | %s | %d x %d | %s | %s | %s | %s |" % (config, gpus, layout, c["micro_batch_size"], k,
    gib(c["host_bytes"] * rpn), gib(c["nvme_bytes"] * rpn) if c["nvme_bytes"] else "-",
    when(t.get("step_s", 0)), t.get("bound", "")))
' "$config" "$gpus"
  done
done
