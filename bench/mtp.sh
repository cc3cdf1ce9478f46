#!/usr/bin/env bash
# Multi-token prediction on the small preset (docs/BENCHMARKS.md, "Multi-token prediction"):
#   - training: model.n_mtp_depth 0 and 1 over the same tokens (STEPS optimizer steps of 16 x 256
#     bytes of the repository's docs, fp32, this machine's threads): tokens/s, the last step's
#     main and depth-1 losses, and the main validation loss of the final weights (`eval`, the
#     main loss alone either way);
#   - decoding: `generate --temperature 0` with and without `--speculative mtp` on the D = 1
#     weights (decode tokens/s, tokens per main-model forward, the acceptance of the drafts), the
#     same greedy tokens checked, and the acceptance of freshly initialised weights.
# Usage: bench/mtp.sh [STEPS] [NEW_TOKENS]   (build/bin/trainbench-cli built; jq)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="$root/build/bin/trainbench-cli"
steps="${1:-40}"
new_tokens="${2:-64}"
threads="$(nproc)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat "$root"/docs/*.md "$root"/docs/design/*.md >"$work/corpus.txt"
config="$root/configs/small.json"
common=(--set data.source=text --set "data.path=$work/corpus.txt" --set "train.steps=$steps" --set train.warmup_steps=5
        --set train.eval_every=0 --set train.sample_every=0 --set "runtime.threads=$threads" --set runtime.dtype=fp32)
echo "small preset, $steps steps of 16 x 256 bytes ($(wc -c <"$work/corpus.txt") bytes of docs), $threads threads"
printf "%-6s %10s %12s %14s %12s\n" "D" "tokens/s" "train loss" "mtp loss (1)" "eval loss"
for depth in 0 1; do
  summary="$("$cli" run "$config" --store "$work/store" --name "d$depth" "${common[@]}" --set "model.n_mtp_depth=$depth" | tail -1)"
  run_id="$(jq -r .run_id <<<"$summary")"
  checkpoint="$(ls -d "$work/store/checkpoints/$run_id"/step-* | tail -1)"
  cp -r "$checkpoint" "$work/weights-d$depth"
  mtp="-"
  [ "$depth" = 1 ] && mtp="$("$cli" export "$run_id" --store "$work/store" | jq -s -r '[.[] | select(.key == "train/mtp_loss/1")] | last | .value * 1000 | round / 1000')"
  eval_loss="$("$cli" eval "$config" "${common[@]}" --set "model.n_mtp_depth=$depth" --checkpoint "$work/weights-d$depth" | jq '.loss * 1000 | round / 1000')"
  printf "%-6s %10.0f %12.3f %14s %12s\n" "$depth" "$(jq .tokens_per_s <<<"$summary")" "$(jq .final_loss <<<"$summary")" "$mtp" "$eval_loss"
done

prompt="$(head -c 2000 "$work/corpus.txt" | tail -c 48 | tr -d '\n')"
gen=(generate "$config" "${common[@]}" --set model.n_mtp_depth=1 --prompt "$prompt" --temperature 0
     --max-new-tokens "$new_tokens" --json)
"$cli" init "$config" --set model.n_mtp_depth=1 "${common[@]}" --seed 1 --out "$work/init.safetensors" >/dev/null
echo
printf "%-34s %14s %18s %12s\n" "decoding ($new_tokens new tokens, 1 prompt)" "decode tok/s" "tokens / forward" "acceptance"
best() { for _ in 1 2 3; do "$cli" "${gen[@]}" "$@"; done | jq -s 'max_by(.decode_tokens_per_s)'; }
plain="$(best --checkpoint "$work/weights-d1")"
spec="$(best --checkpoint "$work/weights-d1" --speculative mtp)"
fresh="$("$cli" "${gen[@]}" --checkpoint "$work/init.safetensors" --speculative mtp)"
printf "%-34s %14.0f %18s %12s\n" "plain greedy (trained)" "$(jq .decode_tokens_per_s <<<"$plain")" "1.00" "-"
printf "%-34s %14.0f %18.2f %12.3f\n" "speculative mtp (trained)" "$(jq .decode_tokens_per_s <<<"$spec")" \
  "$(jq .tokens_per_forward <<<"$spec")" "$(jq .acceptance_rate <<<"$spec")"
printf "%-34s %14.0f %18.2f %12.3f\n" "speculative mtp (initialisation)" "$(jq .decode_tokens_per_s <<<"$fresh")" \
  "$(jq .tokens_per_forward <<<"$fresh")" "$(jq .acceptance_rate <<<"$fresh")"
if [ "$(jq -c '.completions[0].ids' <<<"$plain")" = "$(jq -c '.completions[0].ids' <<<"$spec")" ]; then
  echo "greedy tokens: the same with and without --speculative mtp"
else
  echo "greedy tokens DIFFER with --speculative mtp" >&2
  exit 1
fi
