#!/usr/bin/env bash
# Generation speed on the CPU: prefill and decode tokens/s of `trainbench-cli generate` on the
# small preset (fresh weights, fp32), with MLA's naive and absorbed caches, one prompt and
# model.max_batch_size (8) prompts at once, against Hugging Face transformers' generate() on the
# same weights (export-hf, fp32); and the cache bytes per token of each form (`plan`).
#   bench/generate.sh [PROMPT_BYTES] [NEW_TOKENS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="$root/build/bin/trainbench-cli"
prompt_bytes="${1:-64}"
new_tokens="${2:-64}"
threads="$(nproc)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$root/configs/small.json"
text=(--set data.source=text --set data.path=/dev/null --set "runtime.threads=$threads")
"$cli" init "$config" --seed 1 --out "$work/small.safetensors" >/dev/null
"$cli" export-hf --checkpoint "$work/small.safetensors" "$config" --out "$work/hf" --dtype fp32 >/dev/null 2>&1
prompt="$(python3 -c "print(('the cat sat on the mat and the dog ran in the park ' * 8)[:$prompt_bytes])")"
echo "small preset, prompt $prompt_bytes bytes, $new_tokens new tokens, greedy, $threads threads, best of 3"
printf "%-24s %5s %14s %14s\n" "engine" "rows" "prefill tok/s" "decode tok/s"
for rows in 1 8; do
  for cache in naive absorb; do
    best="$(for _ in 1 2 3; do
      args=()
      for _ in $(seq "$rows"); do args+=(--prompt "$prompt"); done
      "$cli" generate "$config" "${text[@]}" --checkpoint "$work/small.safetensors" "${args[@]}" --temperature 0 \
        --max-new-tokens "$new_tokens" --cache "$cache" --json
    done | python3 -c '
import json, sys
runs = [json.loads(line) for line in sys.stdin]
print("%.0f %.0f" % (max(r["prefill_tokens_per_s"] for r in runs), max(r["decode_tokens_per_s"] for r in runs)))')"
    printf "%-24s %5d %14s %14s\n" "trainbench ($cache)" "$rows" ${best}
  done
  site="$(bash "$root/tests/tools/setup-transformers-env.sh")"
  peer="$(PYTHONPATH="$site" "${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python" \
          "$root/bench/peer/hf_generate.py" "$work/hf" "$prompt_bytes" "$new_tokens" "$rows" 3 "$threads" 2>/dev/null)"
  printf "%-24s %5d %14s %14s\n" "transformers generate" "$rows" \
    $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%.0f %.0f" % (r["prefill_tokens_per_s"], r["decode_tokens_per_s"]))' "$peer")
done
# The same greedy tokens on both sides: every one of transformers' (which runs NEW_TOKENS steps)
# up to where trainbench stopped, and trainbench stops early only at byte 0, the end of a
# document, which it keeps. A difference, or a shorter output without that end, fails the script.
ours="$("$cli" generate "$config" "${text[@]}" --checkpoint "$work/small.safetensors" --prompt "$prompt" --temperature 0 \
        --max-new-tokens "$new_tokens" --json)"
theirs="$(PYTHONPATH="$site" "${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python" \
          "$root/bench/peer/hf_generate.py" "$work/hf" "$prompt_bytes" "$new_tokens" 1 1 "$threads" 2>/dev/null)"
python3 -c '
import json, sys
ours = json.loads(sys.argv[1])["completions"][0]["ids"]
theirs = json.loads(sys.argv[2])["ids"]
same = 0
while same < min(len(ours), len(theirs)) and ours[same] == theirs[same]: same += 1
ended = len(ours) < len(theirs) and same == len(ours) and ours and ours[-1] == 0
agree = same == len(theirs) == len(ours) or ended
print("greedy tokens: %d equal of trainbench'"'"'s %d and transformers'"'"' %d%s: %s" % (
    same, len(ours), len(theirs), " (trainbench ended at byte 0)" if ended else "", "agree" if agree else "DIFFER"))
sys.exit(0 if agree else 1)
' "$ours" "$theirs"
"$cli" plan "$config" | sed -n '/inference cache/,$p'
