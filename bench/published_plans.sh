#!/usr/bin/env bash
# What the planner says of the published configs on devices of one size (default 80 GiB) at
# seq_len 4096: the fewest ranks that train each at micro_batch_size 1 and with which layout,
# the cheapest layout and its largest micro-batch on 8 ranks and on that many, and the model
# states per rank beside DeepSpeed's published estimators for the same P and W
# (ZeRO-2: 2P + 18P/W bytes with bf16 weights; ZeRO-3: 4 x the largest layer + 18P/W).
# Prints one JSON line per config, then the two tables of docs/BENCHMARKS.md's "What fits: the
# planner's answer for the published configs" as Markdown, made from those lines.
#   bench/published_plans.sh [MIB_PER_DEVICE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="$root/build/bin/trainbench-cli"
mib="${1:-81920}"
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
for config in "$root"/configs/deepseek/*.json; do
  common=(--set runtime.device=cuda --set "runtime.memory_limit_mb=$mib" --set train.seq_len=4096
          --set train.micro_batch_size=1 --set train.gradient_accumulation_steps=1 --set train.global_batch_size=null)
  params="$("$cli" params "$config" --json)"
  at8="$("$cli" plan "$config" "${common[@]}" --set runtime.world_size=8 --set train.gradient_accumulation_steps=64 --json)"
  fewest="$(python3 -c 'import json,sys; a=json.loads(sys.argv[1])["advice"]["fewest_ranks"]; print(a["world_size"] if a else 0)' "$at8")"
  # On the fewest ranks (or 4096 when none fits), with a per-rank batch of 64 sequences to find
  # the largest m.
  ranks=$(( fewest > 0 ? fewest : 4096 ))
  spread="$("$cli" plan "$config" "${common[@]}" --set "runtime.world_size=$ranks" \
            --set train.gradient_accumulation_steps=64 --json)"
  stage2="$("$cli" plan "$config" "${common[@]}" --set "runtime.world_size=$ranks" --set runtime.zero_stage=2 --json)"
  stage3="$("$cli" plan "$config" "${common[@]}" --set "runtime.world_size=$ranks" --set runtime.zero_stage=3 --json)"
  model="$("$cli" config "$config" --set data.vocab_size=256)"
  python3 - "$(basename "$config" .json)" "$params" "$at8" "$spread" "$stage2" "$stage3" "$model" "$fewest" "$ranks" <<'PY'
import json, sys
name, params, at8, spread, stage2, stage3, model, fewest, ranks = sys.argv[1:]
P = json.loads(params)["total_params"]
at8, spread, s2, s3 = (json.loads(x) for x in (at8, spread, stage2, stage3))
m = json.loads(model)["model"]
W = int(ranks)
gib = lambda b: round(b / 2**30, 1)
def layout(l):
    return None if not l else {k: l[k] for k in ("zero_stage", "expert_parallel", "activation_checkpointing", "micro_batch_size")} | {"peak_gib": gib(l["peak_bytes"])}
states = lambda p: p["weight_bytes"] + p["gradient_bytes"] + p["bucket_bytes"] + p["optimizer_bytes"]
largest_layer = m["vocab_size"] * m["dim"]
print(json.dumps({
    "config": name, "params": P, "fewest_ranks_at_m1": int(fewest),
    "fewest_ranks_layout": layout(at8["advice"]["fewest_ranks"]["layout"]) if int(fewest) else None,
    "largest_unit_gib": gib(s3["weight_bytes"] - s3["gradient_bytes"]),
    "on_8_ranks": layout(at8["advice"]["cheapest"]),
    "on_fewest_ranks_cheapest": layout(spread["advice"]["cheapest"]),
    "model_states_gib": {"ranks": W, "ours_stage2": gib(states(s2)), "ours_stage3": gib(states(s3)),
                         "deepspeed_zero2": gib(2 * P + 18 * P / W), "deepspeed_zero3": gib(4 * largest_layer + 18 * P / W)},
}))
PY
done | tee "$lines"
echo
python3 - "$lines" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
def layout(l):
    if not l:
        return "no layout"
    parts = ["stage %d" % l["zero_stage"]]
    if l["expert_parallel"] > 1:
        parts.append("EP %d" % l["expert_parallel"])
    if l["activation_checkpointing"] != "none":
        parts.append(l["activation_checkpointing"] + " recomputation")
    return ", ".join(parts) + ", m %d, %.1f GiB" % (l["micro_batch_size"], l["peak_gib"])
print("| config | P | on 8 x 80 GiB | fewest 80 GiB ranks at m = 1 | largest unit (fp32) |")
print("|---|---|---|---|---|")
for r in rows:
    fewest = "%d (%s)" % (r["fewest_ranks_at_m1"], layout(r["fewest_ranks_layout"])) if r["fewest_ranks_at_m1"] else "none up to 4096"
    print("| %s | %.1f B | %s | %s | %.1f GiB |" % (r["config"], r["params"] / 1e9, layout(r["on_8_ranks"]), fewest,
                                                  r["largest_unit_gib"]))
print()
print("| config, W | ours stage 2 | DeepSpeed ZeRO-2 | ours stage 3 | DeepSpeed ZeRO-3 |")
print("|---|---|---|---|---|")
for r in rows:
    s = r["model_states_gib"]
    print("| %s, W = %d | {:,.1f} GiB | {:,.1f} GiB | {:,.1f} GiB | {:,.1f} GiB |".format(
        s["ours_stage2"], s["deepspeed_zero2"], s["ours_stage3"], s["deepspeed_zero3"]) % (r["config"], s["ranks"]))
PY
