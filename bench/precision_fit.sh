#!/usr/bin/env bash
# The planner's largest micro-batch per precision (`plan`'s "precisions": fp32, bf16, fp8, fp8
# with bf16 AdamW moments) and what fp8 gains over bf16 (docs/BENCHMARKS.md, "fp8: the largest
# micro-batch per precision"). Predictions only: nothing is trained.
#   - the small and medium presets on one CPU rank at seq_len 256, 512 and 1024 under a budget
#     (runtime.memory_limit_mb: SMALL_MB, default 8192; MEDIUM_MB, default 32768), at the
#     presets' layout (stage 0, no recomputation);
#   - configs/deepseek/config_16B.json at seq_len 4096 on TARGETS (default "1xh100-80 8xh100-80"),
#     in the layout the planner's advice needs for bf16 there (`plan --target`), every precision
#     planned in that layout against the whole device; then, per precision, the layout the
#     advice itself picks (10 % of the device kept free) with its micro-batch, and the predicted
#     step time per sequence.
# The global batch per rank is m x K = 720720 sequences (m = 1, K = 720720, the least common
# multiple of 1 to 16), so that the largest m is found among its many divisors (every m up to
# 16, then 18, 20, 21, 22, 24, ...) rather than among the powers of two of a preset's batch.
# Usage: bench/precision_fit.sh   (build/bin/trainbench-cli built; jq)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli
batch=(--set train.micro_batch_size=1 --set train.gradient_accumulation_steps=720720)

# One table row from `plan --json`: the largest m of each precision, and fp8's gain over bf16 in %.
row() {
  jq -r --arg name "$1" '.precisions as $p
    | ($p | map(.largest_micro_batch)) as $m
    | def gain(a; b): if b > 0 then ((a / b - 1) * 100 * 10 | round / 10 | tostring) + " %" else "-" end;
      "| \($name) | \($m[0]) | \($m[1]) | \($m[2]) | \($m[3]) | \(gain($m[2]; $m[1])) | \(gain($m[3]; $m[1])) | "
      + "\($p[1].activation_bytes / $p[1].micro_batch_size / 1048576 * 10 | round / 10) / "
      + "\($p[2].activation_bytes / $p[2].micro_batch_size / 1048576 * 10 | round / 10) |"'
}

echo "| config, seq_len, budget | fp32 | bf16 | fp8 | fp8 + bf16 moments | fp8 / bf16 | fp8 + bf16 moments / bf16 | activations per sequence, bf16 / fp8 (MiB) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for preset in small medium; do
  budget=$([ "$preset" = small ] && echo "${SMALL_MB:-8192}" || echo "${MEDIUM_MB:-32768}")
  for seq in 256 512 1024; do
    "$cli" plan "configs/$preset.json" --json "${batch[@]}" --set runtime.device=cpu --set train.seq_len="$seq" \
      --set runtime.memory_limit_mb="$budget" | row "$preset, $seq, $budget MiB (CPU)"
  done
done
config=configs/deepseek/config_16B.json
for target in ${TARGETS:-1xh100-80 8xh100-80}; do
  # The ranks the target has (N x KIND), each with the same global batch per rank.
  ranks=1
  [[ "$target" =~ ^([0-9]+)[xX] ]] && ranks="${BASH_REMATCH[1]}"
  long=(--set train.seq_len=4096 --set train.micro_batch_size=1 --set train.gradient_accumulation_steps=720720
        --set runtime.world_size="$ranks")
  advice=$("$cli" plan "$config" --json --target "$target" "${long[@]}" --set runtime.dtype=bf16 | jq -c '.advice.cheapest')
  if [ "$advice" = null ]; then
    echo "| 16B, 4096, $target | nothing fits in bf16 | | | | | | |"
    continue
  fi
  layout=$(jq -r '"stage \(.zero_stage), \(.activation_checkpointing) recomputation, EP \(.expert_parallel), offload \(.offload)"
                  + (if .offload_nvme then " (NVMe)" else "" end)' <<<"$advice")
  sets=(--set runtime.zero_stage="$(jq -r .zero_stage <<<"$advice")"
        --set runtime.activation_checkpointing="$(jq -r .activation_checkpointing <<<"$advice")"
        --set runtime.expert_parallel="$(jq -r .expert_parallel <<<"$advice")"
        --set runtime.offload="$(jq -r .offload <<<"$advice")")
  [ "$(jq -r .offload_nvme <<<"$advice")" = true ] && sets+=(--set runtime.offload_dir=/planned-nvme)
  "$cli" plan "$config" --json --target "$target" "${long[@]}" "${sets[@]}" | row "16B, 4096, $target: $layout"
done
echo
echo "| 16B, 4096, target | precision | advised layout | m | predicted ms per sequence |"
echo "|---|---|---|---:|---:|"
for target in ${TARGETS:-1xh100-80 8xh100-80}; do
  ranks=1
  [[ "$target" =~ ^([0-9]+)[xX] ]] && ranks="${BASH_REMATCH[1]}"
  for precision in "fp32 fp32" "bf16 fp32" "fp8 fp32" "fp8 bf16"; do
    read -r dtype moments <<<"$precision"
    "$cli" plan "$config" --json --target "$target" --set train.seq_len=4096 --set train.micro_batch_size=1 \
      --set train.gradient_accumulation_steps=720720 --set runtime.world_size="$ranks" --set runtime.dtype="$dtype" \
      --set runtime.optimizer_dtype="$moments" |
      jq -r --arg name "$target" --argjson ranks "$ranks" --arg precision "$dtype, moments $moments" '.advice.cheapest as $a
        | if $a == null then "| \($name) | \($precision) | nothing fits | | |" else
          "| \($name) | \($precision) | stage \($a.zero_stage), \($a.activation_checkpointing) recomputation, EP \($a.expert_parallel), offload \($a.offload) | \($a.micro_batch_size) | "
          + "\($a.step_time.step_s / (720720 * $ranks) * 10000 | round / 10) |" end'
  done
done
