#!/usr/bin/env bash
# A fixed global batch against the adaptive policy over the same tokens, on one preset:
#   bench/adaptive_batch.sh PRESET TOKENS "NAME SETTINGS..." ...
# e.g. bench/adaptive_batch.sh tiny 614400 "fixed-16 m=4 K=4" "fixed-64 m=4 K=16" \
#        "adaptive m=4 K=4 policy=adaptive max=32 dwell=20480"
# Each run trains TOKENS token positions (train.tokens) from the same seed on 2 threads, one
# rank, eval at the end only. Reported per run, one JSON line: steps, wall time, the final
# validation loss, and the tokens and seconds until its train loss (the mean over the last
# 16,384 token positions) first reached TARGET (and the optimizer steps until then), the highest such final mean over the runs (or
# the TARGET environment variable): the loss every run reaches.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="$1"; tokens="$2"; shift 2
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

for spec in "$@"; do
  read -r name rest <<<"$spec"
  sets=(--set "train.tokens=$tokens" --set train.steps=1 --set train.global_batch_size=null --set train.eval_every=1000000
        --set train.checkpoint_every=0 --set runtime.threads=2 ${SETS:-})
  for kv in $rest; do
    key="${kv%%=*}"; value="${kv#*=}"
    case "$key" in
      m) sets+=(--set "train.micro_batch_size=$value") ;;
      K) sets+=(--set "train.gradient_accumulation_steps=$value") ;;
      policy) sets+=(--set "train.batch_policy=$value") ;;
      max) sets+=(--set "train.batch_adapt_max_accumulation=$value") ;;
      dwell) sets+=(--set "train.batch_adapt_dwell_tokens=$value") ;;
      threshold) sets+=(--set "train.batch_adapt_threshold=$value") ;;
      *) sets+=(--set "$kv") ;;
    esac
  done
  "$cli" run "$root/configs/$preset.json" "${sets[@]}" --store "$work/store" --name "$name" >"$work/$name.run" 2>"$work/$name.err" ||
    { cat "$work/$name.err" >&2; exit 1; }
  run_id="$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' "$work/$name.run")"
  "$cli" export "$run_id" --store "$work/store" --format jsonl >"$work/$name.jsonl"
done

"$python" - "$work" "${TARGET:-}" "$@" <<'PY'
import json, sys, collections
work, target, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
window = 16384
runs = {}
for spec in specs:
    name = spec.split()[0]
    points = [json.loads(line) for line in open(f"{work}/{name}.jsonl")]
    loss = [(p["tokens"], p["wall_time"], p["value"]) for p in points if p["key"] == "train/loss"]
    batch = [p["value"] for p in points if p["key"] == "train/global_batch"]
    evals = [p["value"] for p in points if p["key"] == "eval/loss"]
    # The mean loss over the last `window` token positions, at every step.
    smooth, q = [], collections.deque()
    previous = 0
    for tokens, wall, value in loss:
        q.append((tokens - previous, value)); previous = tokens
        while sum(t for t, _ in q) - q[0][0] >= window: q.popleft()
        smooth.append((tokens, wall, sum(t * v for t, v in q) / sum(t for t, _ in q), len(smooth) + 1))
    runs[name] = dict(smooth=smooth, steps=len(loss), wall=loss[-1][1], eval=evals[-1] if evals else None,
                      batches=sorted(set(int(b) for b in batch)))
goal = float(target) if target else max(r["smooth"][-1][2] for r in runs.values())
for name, r in runs.items():
    hit = next(((t, w, s) for t, w, v, s in r["smooth"] if v <= goal), (None, None, None))
    print(json.dumps({"run": name, "steps": r["steps"], "wall_s": round(r["wall"], 1), "final_eval_loss": r["eval"],
                      "target_loss": round(goal, 4), "tokens_to_target": hit[0], "steps_to_target": hit[2],
                      "seconds_to_target": None if hit[1] is None else round(hit[1], 1), "batches": r["batches"]}))
PY
