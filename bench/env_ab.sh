#!/usr/bin/env bash
# One binary under two environments, alternated, on the same token data:
#   bench/env_ab.sh PRESET "ENV_A" "ENV_B" "m K" ["m K" ...]
#   e.g. bench/env_ab.sh tiny "TRAINBENCH_CPU_KERNELS=0" "TRAINBENCH_CPU_KERNELS=1" "16 1" "2 8"
# Runs `trainbench-cli run` ROUNDS times (default 4) under each environment in turn, STEPS
# steps each (default 30), 2 threads, fp32 (DTYPE=bf16: bf16), the token data compare.sh makes, and prints per
# (m, K) the medians over rounds of each run's median step time after step 5, and B / A.
# STAT=p10 takes each run's tenth percentile instead: the steps this VM did not slow, which
# separates changes of a few per cent that its drift hides in the medians.
# SETS_A / SETS_B: more `--set` arguments for A's and B's runs (a config choice instead of, or
# beside, an environment), e.g.
#   SETS_A="--set runtime.head_chunk_tokens=0" SETS_B="--set runtime.head_chunk_tokens=auto" \
#     bench/env_ab.sh small "" "" "4 1"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="$1"; env_a="$2"; env_b="$3"; shift 3
steps="${STEPS:-30}"; rounds="${ROUNDS:-4}"; stat="${STAT:-median}"
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
vocab="$("$cli" config "$root/configs/$preset.json" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["model"]["vocab_size"])')"
"$python" "$root/bench/make_token_data.py" "$work" "$vocab"
step_ms() {  # ENV m k SETS -> median step time in ms of one run
  local out id
  # shellcheck disable=SC2086  # (ENV and SETS are lists of words)
  out="$(env $1 "$cli" run "$root/configs/$preset.json" --set data.source=tokens --set "data.path=$work/train.bin" \
    --set "data.val_path=$work/val.bin" --set "train.micro_batch_size=$2" --set "train.gradient_accumulation_steps=$3" \
    --set train.global_batch_size=null --set "train.steps=$steps" --set runtime.threads=2 --set "runtime.dtype=${DTYPE:-fp32}" \
    --set train.eval_every=0 --set train.checkpoint_every=0 $4 --store "$work/store" 2>/dev/null | tail -1)"
  id="$(echo "$out" | "$python" -c 'import json,sys; print(json.loads(sys.stdin.read())["run_id"])')"
  "$cli" export "$id" --store "$work/store" --format jsonl | "$python" -c '
import json, statistics, sys
t = sorted(p["value"] for p in map(json.loads, sys.stdin) if p["key"] == "perf/step_time_s" and p["step"] > 5)
print(1e3 * (t[len(t) // 10] if sys.argv[1] == "p10" else statistics.median(t)))' "$stat"
}
for split in "$@"; do
  read -r m k <<<"$split"
  a=(); b=()
  for ((r = 0; r < rounds; r++)); do
    a+=("$(step_ms "$env_a" "$m" "$k" "${SETS_A:-}")")
    b+=("$(step_ms "$env_b" "$m" "$k" "${SETS_B:-}")")
  done
  "$python" -c '
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
print("%s x %s: A (%s) %.2f ms, B (%s) %.2f ms, B / A %.3f" % (sys.argv[3], sys.argv[4], sys.argv[5], statistics.median(a),
      sys.argv[6], statistics.median(b), statistics.median(b) / statistics.median(a)))' "${a[*]}" "${b[*]}" "$m" "$k" "$env_a ${SETS_A:-}" "$env_b ${SETS_B:-}"
done
