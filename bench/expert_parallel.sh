#!/usr/bin/env bash
# Expert parallelism on CPU rank threads: the same run at runtime.expert_parallel EP for each EP
# given, alternating (ROUNDS times, default 3), one JSON line per EP with the medians after
# WARMUP steps of the step time, tokens/s and the seconds rank 0 spent in the token exchanges
# (perf/all_to_all_s, waiting for the slowest rank of its group included):
#   bench/expert_parallel.sh PRESET "m K W" EP...     e.g. expert_parallel.sh tiny "2 2 4" 1 2 4
# SETS adds overrides to every run. 2 threads in all, shared by the W ranks; eval and
# checkpoints off.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="$1"; read -r m k w <<<"$2"; shift 2
steps="${STEPS:-30}"; warmup="${WARMUP:-5}"; rounds="${ROUNDS:-3}"
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
declare -A times exchanges
for ((r = 0; r < rounds; r++)); do
  for ep in "$@"; do
    "$cli" run "$root/configs/$preset.json" --set "train.micro_batch_size=$m" --set "train.gradient_accumulation_steps=$k" \
      --set "runtime.world_size=$w" --set "runtime.expert_parallel=$ep" --set train.global_batch_size=null \
      --set "train.steps=$steps" --set train.eval_every=0 --set train.checkpoint_every=0 --set runtime.threads=2 ${SETS:-} \
      --store "$work/store" --name "ep-$ep" >"$work/run.json" 2>/dev/null
    run_id="$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' "$work/run.json")"
    read -r t x < <("$cli" export "$run_id" --store "$work/store" --format jsonl | "$python" -c '
import json, sys, statistics
w = int(sys.argv[1])
points = [p for p in map(json.loads, sys.stdin) if p["step"] > w]
t = [p["value"] for p in points if p["key"] == "perf/step_time_s"]
x = [p["value"] for p in points if p["key"] == "perf/all_to_all_s"] or [0.0]
print(statistics.median(t), statistics.median(x))' "$warmup")
    times[$ep]+="$t "; exchanges[$ep]+="$x "
  done
done
seq_len="$("$cli" config "$root/configs/$preset.json" ${SETS:-} | "$python" -c 'import json,sys; print(json.load(sys.stdin)["train"]["seq_len"])')"
for ep in "$@"; do
  "$python" - "$preset" "$m" "$k" "$w" "$ep" "$seq_len" "${times[$ep]}" "${exchanges[$ep]}" <<'PY'
import json, statistics, sys
preset, m, k, w, ep, seq_len, t, x = sys.argv[1:]
med = lambda s: statistics.median(float(v) for v in s.split())
tokens = int(m) * int(k) * int(w) * int(seq_len)
print(json.dumps({"preset": preset, "m": int(m), "K": int(k), "W": int(w), "EP": int(ep),
                  "step_time_s": round(med(t), 4), "tokens_per_s": round(tokens / med(t)),
                  "all_to_all_s": round(med(x), 4), "all_to_all_share": round(med(x) / med(t), 3)}))
PY
done
