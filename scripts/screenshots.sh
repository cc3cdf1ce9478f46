#!/usr/bin/env bash
# Remakes the pictures of docs/images from a fresh store: `make screenshots` (after `make build`).
# Each view is captured offscreen at 1280x800 by the app's --screenshot, after it has trained
# what it shows.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
app="$root/build/bin/trainbench"
cli="$root/build/bin/trainbench-cli"
out="$root/docs/images"
store="$(mktemp -d)"; trap 'rm -rf "$store"' EXIT
export QT_QPA_PLATFORM=offscreen TRAINBENCH_SETTINGS="$store/settings.ini"
cd "$root"

"$app" configs/tiny.json --store "$store" --run-steps 150 --screenshot "$out/workbench.png"
"$app" configs/tiny.json --store "$store" --view configure --screenshot "$out/configure.png"
"$app" configs/tiny.json --store "$store" --explore --screenshot "$out/batch.png"
# Three seeds at two learning rates: Compare groups each rate's seeds as a mean with a band.
"$app" configs/tiny.json --store "$store" --grid train.seed=1,2,3 --grid train.lr=3e-3,1e-2 --run-queue \
  --screenshot "$out/queue.png"
ids="$("$cli" runs --store "$store" --json | python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin) if r["name"].startswith("tiny seed=")]
print(",".join(r["run_id"] for r in sorted(runs, key=lambda r: r["name"])))')"
"$app" configs/tiny.json --store "$store" --compare "$ids" --screenshot "$out/compare.png"
# The adaptive batch: K doubles each time the critical batch has stayed above 2 x B for 16 steps.
"$cli" config configs/tiny.json --set train.global_batch_size=null --set train.micro_batch_size=4 \
  --set train.gradient_accumulation_steps=4 --set train.batch_policy=adaptive \
  --set train.batch_adapt_max_accumulation=32 --set train.batch_adapt_dwell_tokens=16384 >"$store/tiny_adaptive.json"
"$app" "$store/tiny_adaptive.json" --store "$store" --run-steps 300 --screenshot "$out/adaptive.png"
# Planning on this machine for another: DeepSeek-V2-Lite (16B) in bf16 at 4,096 tokens, planned for 8 x H100 80 GB.
python3 -c '
import json, sys
model = json.load(open("configs/deepseek/config_16B.json"))
json.dump({"model": model, "runtime": {"dtype": "bf16"}, "train": {"seq_len": 4096},
           "target": {"kind": "h100-80", "devices": 8}}, open(sys.argv[1], "w"), indent=2)' "$store/config_16B_on_8xh100.json"
"$app" "$store/config_16B_on_8xh100.json" --store "$store" --view batch --screenshot "$out/batch_target.png"
echo "screenshots: $out/{workbench,configure,batch,queue,compare,adaptive,batch_target}.png"
