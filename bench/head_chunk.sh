#!/usr/bin/env bash
# The output head in chunks against the whole logits, as the planner counts them
# (runtime.head_chunk_tokens auto against 0; docs/BENCHMARKS.md, "The output head in chunks").
# Predictions only: nothing is trained.
#   - the small and medium presets on one CPU rank at seq_len 256 and 1024 under a budget
#     (runtime.memory_limit_mb: SMALL_MB, default 8192; MEDIUM_MB, default 32768, as
#     bench/precision_fit.sh), fp32 and bf16: the head's bytes at m 1 and the largest
#     micro-batch;
#   - the published configs at seq_len 4096 on their targets (config_16B on 1 and 8 H100 80 GB,
#     config_236B on 128, config_671B on 256: the fewest ranks that train them, BENCHMARKS.md
#     "What fits"), bf16: the head's bytes at m 1 in the layout the advice picks with whole
#     logits, and the cheapest layout with its largest micro-batch under each head.
# The global batch per rank is m x K = 720720 sequences (m 1, K 720720, the least common multiple
# of 1 to 16), so the largest m is found among many divisors, not among a preset's powers of two.
# Usage: bench/head_chunk.sh   (build/bin/trainbench-cli built; jq)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli
batch=(--set train.micro_batch_size=1 --set train.gradient_accumulation_steps=720720 --set train.global_batch_size=null)
whole=(--set runtime.head_chunk_tokens=0)
chunked=(--set runtime.head_chunk_tokens=auto)
mib() { jq -r "$1 / 1048576 * 10 | round / 10"; }

echo "| preset, seq_len, dtype, budget | head at m 1: whole / chunked (MiB) | chunk (tokens, at the largest m) | largest m: whole / chunked | gain |"
echo "|---|---:|---:|---:|---:|"
for preset in small medium; do
  budget=$([ "$preset" = small ] && echo "${SMALL_MB:-8192}" || echo "${MEDIUM_MB:-32768}")
  for seq in 256 1024; do
    for dtype in fp32 bf16; do
      common=("configs/$preset.json" --json "${batch[@]}" --set runtime.device=cpu --set train.seq_len="$seq"
              --set runtime.dtype="$dtype" --set runtime.memory_limit_mb="$budget")
      a="$("$cli" plan "${common[@]}" "${whole[@]}")"
      b="$("$cli" plan "${common[@]}" "${chunked[@]}")"
      ma=$(jq .largest_fitting_micro_batch <<<"$a")
      mb=$(jq .largest_fitting_micro_batch <<<"$b")
      at=-
      [ "$mb" -gt 0 ] && at=$("$cli" plan "${common[@]}" "${chunked[@]}" --set train.micro_batch_size="$mb" \
                                --set train.gradient_accumulation_steps=1 | jq .head_chunk_tokens)
      echo "| $preset, $seq, $dtype, $budget MiB | $(jq .logits_bytes <<<"$a" | mib .) / $(jq .logits_bytes <<<"$b" | mib .) | $at | $ma / $mb |" \
           "$(jq -rn --argjson a "$ma" --argjson b "$mb" 'if $a > 0 then (($b / $a - 1) * 1000 | round / 10 | tostring) + " %" else "-" end') |"
    done
  done
done

echo
echo "| config on target (seq_len 4096, bf16) | head at m 1: whole / chunked (GiB) | cheapest layout, whole logits | cheapest layout, chunked |"
echo "|---|---:|---|---|"
layout='if .advice.cheapest == null then "none fits" else .advice.cheapest | "stage \(.zero_stage), EP \(.expert_parallel), \(.activation_checkpointing) recomputation, offload \(.offload), **m \(.micro_batch_size)**, \(.peak_bytes / 1073741824 * 10 | round / 10) GiB" end'
for case in "config_16B 1xh100-80" "config_16B 8xh100-80" "config_236B 128xh100-80" "config_671B 256xh100-80"; do
  read -r name target <<<"$case"
  ranks="${target%%x*}"
  common=("configs/deepseek/$name.json" --json --target "$target" "${batch[@]}" --set train.seq_len=4096
          --set runtime.world_size="$ranks" --set runtime.dtype=bf16)
  a="$("$cli" plan "${common[@]}" "${whole[@]}")"
  b="$("$cli" plan "${common[@]}" "${chunked[@]}")"
  # The head's bytes at m 1 in the layout the whole logits' advice picks (else the config's).
  sets=()
  if [ "$(jq -c .advice.cheapest <<<"$a")" != null ]; then
    sets=(--set runtime.zero_stage="$(jq -r .advice.cheapest.zero_stage <<<"$a")"
          --set runtime.expert_parallel="$(jq -r .advice.cheapest.expert_parallel <<<"$a")"
          --set runtime.activation_checkpointing="$(jq -r .advice.cheapest.activation_checkpointing <<<"$a")"
          --set runtime.offload="$(jq -r .advice.cheapest.offload <<<"$a")")
  fi
  ha=$("$cli" plan "${common[@]}" "${sets[@]}" "${whole[@]}" | jq '.logits_bytes / 1073741824 * 100 | round / 100')
  hb=$("$cli" plan "${common[@]}" "${sets[@]}" "${chunked[@]}" | jq '.logits_bytes / 1073741824 * 100 | round / 100')
  echo "| $name on $target | $ha / $hb | $(jq -r "$layout" <<<"$a") | $(jq -r "$layout" <<<"$b") |"
done
