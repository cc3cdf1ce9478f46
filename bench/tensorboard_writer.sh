#!/usr/bin/env bash
# The live TensorBoard recorder's cost per step: the tiny preset for STEPS steps without and with
# runtime.tensorboard_dir, alternated REPEATS times (docs/BENCHMARKS.md). Prints one line per run:
# the variant, wall seconds, tokens/s, and the event file's size.
# Usage: bench/tensorboard_writer.sh [STEPS] [REPEATS] [THREADS]   (default 300, 3 and runtime.threads'
# default; build/bin/trainbench-cli built). On a shared machine run it alone (nothing building).
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-300}"
repeats="${2:-3}"
threads="${3:-0}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorboard-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
for ((i = 1; i <= repeats; ++i)); do
  for variant in none tensorboard; do
    extra=()
    [ "$variant" = tensorboard ] && extra=(--set "runtime.tensorboard_dir=$work/tb")
    line=$(build/bin/trainbench-cli run configs/tiny.json --set train.steps="$steps" --set train.eval_every=0 \
      --set train.final_checkpoint=false --set runtime.threads="$threads" "${extra[@]}" --store "$work/store" 2>/dev/null | tail -1)
    python3 - "$line" "$variant" "$work/tb" <<'PY'
import glob, json, os, sys
s = json.loads(sys.argv[1])
files = glob.glob(os.path.join(sys.argv[3], s["run_id"], "*tfevents*"))
size = f"{os.path.getsize(files[0])} bytes" if files else "-"
print(f"{sys.argv[2]:12s} wall {s['wall_time_s']:.3f} s  tokens/s {s['tokens_per_s']:.0f}  "
      f"{s['wall_time_s'] / s['steps'] * 1e3:.2f} ms/step  event file {size}")
PY
  done
done
