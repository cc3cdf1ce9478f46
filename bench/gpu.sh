#!/usr/bin/env bash
# The GPU checks and benchmarks, run on a CUDA machine from the repository root (see
# docs/BENCHMARKS.md, "On a GPU"): builds the engine and CLI only, then
#  1. tiny preset, W = 1, fp32: CPU run and CUDA run (ProcessGroupNCCL), losses compared
#     step by step (issue: equal within 1e-4 relative);
#  2. tiny preset, bf16 on CUDA: trains, loss falls;
#  3. medium preset, bf16: tokens/s, MFU (6 x activated parameters x tokens/s / 989 TFLOP/s,
#     the H200's dense bf16 peak), peak memory, at (m, K) = (8, 1), (4, 2), (2, 4), (1, 8):
#     the accumulation overhead on a GPU;
#  4. medium bf16 at (4, 2) with runtime.zero_stage 1 and 3 (NCCL's reduce-scatter and
#     all-gather on flat buckets; stage 3 gathers every unit in the forward and the backward)
#     and with activation recomputation (full, and the feed-forward parts): status, tokens/s
#     and peak memory.
# Results: $OUT/gpu-results.json and $OUT/gpu.log. Needs bench/gpu-deps.sh's build-gpu-deps/.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/gpu-out}"; mkdir -p "$out"
log="$out/gpu.log"; exec > >(tee -a "$log") 2>&1
deps="$root/build-gpu-deps"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
torch_dir="$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

cli="${TRAINBENCH_CLI:-}"  # a CLI already built: skips the build (a dry run of the script)
if [ -z "$cli" ]; then
echo "== build (engine and CLI)"
start=$(date +%s)
cmake -S "$root" -B "$root/build-gpu" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" \
  -DCMAKE_PREFIX_PATH="$deps/usr" -DTRAINBENCH_BUILD_GUI=OFF -DTRAINBENCH_BUILD_TESTS=OFF \
  -DTRAINBENCH_BUILD_BENCH=OFF >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
grep "ProcessGroupNCCL" "$out/cmake.log"
cmake --build "$root/build-gpu" -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -B2 -A8 "error" "$out/build.log" | head -60; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
cli="$root/build-gpu/bin/trainbench-cli"
fi
store="$(mktemp -d)"

# run NAME CONFIG [--set ...]: one run; prints its summary line, keeps it in $out/NAME.json.
run() {
  local name="$1" config="$2"; shift 2
  timeout 300 "$cli" run "$root/configs/$config.json" --store "$store" --name "$name" \
    --set train.eval_every=0 --set train.checkpoint_every=0 "$@" >"$out/$name.json" 2>"$out/$name.err"
  local code=$?
  echo "$name: exit $code $(tail -1 "$out/$name.json")"
  [ "$code" -eq 0 ] || echo "  $(tail -1 "$out/$name.err")"
}
series() {  # series NAME KEY: that metric per step of the run, as JSON lines
  local id; id="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' "$out/$1.json")"
  "$cli" export "$id" --store "$store" --format jsonl > "$out/$1.points.jsonl"
}

echo "== 1. tiny fp32: CPU against CUDA"
run tiny-cpu tiny --set train.steps=20 --set runtime.device=cpu --set runtime.dtype=fp32
run tiny-cuda tiny --set train.steps=20 --set runtime.device=cuda --set runtime.dtype=fp32
echo "== 2. tiny bf16 on CUDA"
run tiny-bf16 tiny --set train.steps=20 --set runtime.device=cuda --set runtime.dtype=bf16
echo "== 3. medium bf16: throughput and accumulation"
for split in "8 1" "4 2" "2 4" "1 8"; do
  read -r m k <<<"$split"
  run "medium-$m-$k" medium --set train.steps=30 --set runtime.device=cuda --set runtime.dtype=bf16 \
    --set train.micro_batch_size=$m --set train.gradient_accumulation_steps=$k --set train.global_batch_size=null
done
echo "== 4. medium bf16 at ZeRO stages 1 and 3 and with recomputation (the NCCL reduce-scatter and all-gather)"
for stage in 1 3; do
  run "medium-stage$stage" medium --set train.steps=20 --set runtime.device=cuda --set runtime.dtype=bf16 \
    --set runtime.zero_stage=$stage --set train.micro_batch_size=4 --set train.gradient_accumulation_steps=2 \
    --set train.global_batch_size=null
done
run medium-feedforward medium --set train.steps=20 --set runtime.device=cuda --set runtime.dtype=bf16 \
  --set runtime.activation_checkpointing=feedforward --set train.micro_batch_size=4 --set train.gradient_accumulation_steps=2 \
  --set train.global_batch_size=null
run medium-recompute medium --set train.steps=20 --set runtime.device=cuda --set runtime.dtype=bf16 \
  --set runtime.activation_checkpointing=full --set train.micro_batch_size=4 --set train.gradient_accumulation_steps=2 \
  --set train.global_batch_size=null
for name in tiny-cpu tiny-cuda tiny-bf16 medium-8-1 medium-4-2 medium-2-4 medium-1-8 medium-stage1 medium-stage3 \
    medium-recompute medium-feedforward; do
  [ -s "$out/$name.json" ] && series "$name"
done
"$cli" params "$root/configs/medium.json" --json > "$out/medium-params.json" 2>/dev/null

python3 - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
def points(name, key, after=0):
    path = f"{out}/{name}.points.jsonl"
    if not os.path.exists(path): return []
    return [p["value"] for p in map(json.loads, open(path)) if p["key"] == key and p["step"] > after]
def summary(name):
    try: return json.loads(open(f"{out}/{name}.json").read().strip().splitlines()[-1])
    except Exception: return {}
result = {}
cpu, cuda = points("tiny-cpu", "train/loss"), points("tiny-cuda", "train/loss")
if cpu and len(cpu) == len(cuda):
    result["tiny_fp32_max_relative_loss_difference"] = max(abs(a - b) / abs(a) for a, b in zip(cuda, cpu))
result["tiny_cuda_collectives_per_step"] = sorted(set(points("tiny-cuda", "comm/collectives")))
bf16 = points("tiny-bf16", "train/loss")
if bf16: result["tiny_bf16_first_last_loss"] = [bf16[0], bf16[-1]]
activated = None
try: activated = json.load(open(f"{out}/medium-params.json"))["activated_params"]
except Exception: pass
result["medium_activated_parameters"] = activated
for split in ["8-1", "4-2", "2-4", "1-8", "stage1", "stage3", "recompute", "feedforward"]:
    name = f"medium-{split}"
    step = points(name, "perf/step_time_s", after=5)
    tps = points(name, "perf/tokens_per_s", after=5)
    s = summary(name)
    error = s.get("error")
    if not s and os.path.exists(f"{out}/{name}.err"):
        lines = open(f"{out}/{name}.err").read().strip().splitlines()
        error = lines[-1] if lines else "no summary"
    row = {"status": s.get("status"), "peak_memory_bytes": s.get("peak_memory_bytes"), "error": error}
    if tps:
        row["tokens_per_s"] = statistics.median(tps)
        if activated: row["mfu"] = 6 * activated * row["tokens_per_s"] / 989e12
    if step: row["step_time_s"] = statistics.median(step)
    result[name] = row
json.dump(result, open(f"{out}/gpu-results.json", "w"), indent=1)
print(json.dumps(result, indent=1))
PY
