#!/usr/bin/env bash
# The GPU checks and benchmarks, in one device window (docs/BENCHMARKS.md, "On a GPU"): run from
# the repository root on a CUDA machine, under 8 minutes with the build, 3 files in $OUT:
#   gpu-results.json  the gates and the numbers, rewritten after every run (bench/gpu_results.py)
#   gpu.log           this script's console
#   gpu-runs.tar.gz   everything else (each run's summary, stderr and points; cmake and build logs),
#                     rewritten after every run
# The runs (no evaluation, no checkpoints; a time limit each, after which a run that ignores the
# stop, a hung CUDA or NCCL wait, is killed 10 s later; none started after GPU_SH_BUDGET s):
#   1. tiny fp32, 20 steps: the CPU's composed path (TRAINBENCH_CPU_KERNELS=0) and CUDA, which must
#      agree within 1e-5 (relative) at step 1 and over the 20 steps within 1e-4 or 10x the
#      difference of two CUDA runs (a near-tie in the MoE's top-k parts runs), whichever is larger;
#   2. tiny fp32 on CUDA at ZeRO stage 1 and 3 and with full recomputation: each equal to stage 0
#      within 1e-6 at step 1, and at every step within 1e-6 or 10x the difference of stage 0
#      run twice (CUDA's atomic adds), whichever is larger (one GPU: the sharded paths at W = 1);
#      and runtime.offload (the host step: pinned slabs, side-stream copies) at stage 1 with
#      optimizer, at stage 2 with optimizer (the gradient sums copied down in the last backward)
#      and at stage 3 with all, each against the same stage without offload within the same
#      limits;
#   3. tiny bf16 on CUDA: finite, and the loss falls; bf16 device weights (offload at stage 1,
#      and offload all at stage 3); fp8 at stage 3 with and without offload all (bf16 weights)
#      against fp32 weights under autocast: 1e-6 at step 1, 1e-4 over 20 steps;
#   4. medium bf16 at (m, K) = (8, 1) and (2, 4): tokens/s, MFU (6 x activated parameters x
#      tokens/s / 989 TFLOP/s, the H200's dense bf16 peak), peak memory; and medium fp8 at (8, 1)
#      (runtime.dtype fp8: the block-scaled fp8 products, kernels/fp8_linear_cuda.h): the same
#      numbers, and its loss against the bf16 run's step by step (reported, not gated);
#   5. medium bf16 at (4, 2) with ZeRO stage 3, and with full recomputation.
# Before 4, bench_fp8_cuda_check (test_fp8_cuda's GPU case without Qt): the fp8 Linear on the
# tensor cores against the CPU emulation on the same operands, y, dx and dW within 1e-3 (fp32
# out) or 5e-3 (bf16 out), the bounds tests/engine/fp8_cuda_comparison.h derives.
# The CLI: $TRAINBENCH_CLI if set (a dry run here: TRAINBENCH_CLI=build/bin/trainbench-cli), else
# build-gpu-cli/trainbench-cli carried from a build machine (bench/gpu-carry.sh) when it runs
# against this machine's torch, else a build of the engine and CLI with bench/gpu-deps.sh's
# build-gpu-deps/. Exit 0 when every gate passes.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/gpu-out}"; mkdir -p "$out"
log="$out/gpu.log"; exec > >(tee -a "$log") 2>&1
work="$(mktemp -d)"; mkdir -p "$work/runs"
deps="$root/build-gpu-deps"
tiny_limit="${TINY_LIMIT:-60}"; medium_limit="${MEDIUM_LIMIT:-120}"
budget="${GPU_SH_BUDGET:-480}"  # seconds for the whole script: a run never starts past it
began=$(date +%s)
# torch's libraries and the CUDA wheels beside it (the carried CLI links libcudart itself, and
# the loader reads only the program's own search path for it).
torch_libs="$(python3 -c 'import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
print(":".join([os.path.join(site, "torch", "lib")] + sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))))' 2>/dev/null)"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${torch_libs:+:$torch_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true

archive() {  # what came of the runs so far, in one file
  tar czf "$out/gpu-runs.tar.gz.partial" -C "$work" runs && mv "$out/gpu-runs.tar.gz.partial" "$out/gpu-runs.tar.gz"
}
results() {
  python3 "$root/bench/gpu_results.py" "$work/runs" "$out/gpu-results.json" "$(( $(date +%s) - began ))" >/dev/null
  archive
}

cli="${TRAINBENCH_CLI:-}"
carried="$root/build-gpu-cli/trainbench-cli"
# The Arrow libraries the carried CLI links (data.source parquet), carried compressed (gpu-carry.sh).
for packed in "$root"/build-gpu-cli/*.so.*.xz; do
  [ -f "$packed" ] && python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[1][:-3], "wb") as o: shutil.copyfileobj(i, o)' "$packed"
done
export LD_LIBRARY_PATH="$root/build-gpu-cli:$LD_LIBRARY_PATH"
if [ -z "$cli" ] && [ -x "$carried" ]; then
  if "$carried" schema >/dev/null 2>"$work/runs/carried-cli.err"; then
    cli="$carried"; echo "== the carried CLI runs against this torch: no build"
  else
    echo "== the carried CLI does not run here ($(tail -1 "$work/runs/carried-cli.err")): building"
  fi
fi
if [ -z "$cli" ]; then
  echo "== build (engine and CLI)"
  start=$(date +%s)
  # Fails fast, before the long build, when ProcessGroupNCCL is not in.
  REQUIRE_NCCL=1 bash "$root/bench/gpu-configure.sh" "$deps" "$root/build-gpu" "$work/runs/cmake.log" || { results; exit 1; }
  cmake --build "$root/build-gpu" --target trainbench-cli bench_fp8_cuda_check -j "$(nproc)" >"$work/runs/build.log" 2>&1 || {
    grep -B2 -A8 "error" "$work/runs/build.log" | head -60; results; exit 1; }
  echo "built in $(( $(date +%s) - start )) s"
  cli="$root/build-gpu/bin/trainbench-cli"
  fp8_check="$root/build-gpu/bin/bench_fp8_cuda_check"
fi
# test_fp8_cuda's GPU case without Qt: beside the CLI (carried by gpu-carry.sh, or built above).
fp8_check="${fp8_check:-$(dirname "$cli")/bench_fp8_cuda_check}"
store="$work/store"

# run NAME CONFIG LIMIT_S [--set ...]: one run; its summary, stderr and points under runs/NAME.*,
# then the results and the archive rewritten.
run() {
  local name="$1" config="$2" limit="$3"; shift 3
  local start; start=$(date +%s)
  local left=$(( began + budget - start ))
  if [ "$left" -lt 20 ]; then
    echo "$name: skipped, the window's $budget s are spent" | tee "$work/runs/$name.err"; results; return
  fi
  [ "$left" -lt "$limit" ] && limit="$left"
  timeout -k 10 "$limit" "$cli" run "$root/configs/$config.json" --store "$store" --name "$name" \
    --set train.eval_every=0 --set train.checkpoint_every=0 --set train.final_checkpoint=false "$@" \
    >"$work/runs/$name.json" 2>"$work/runs/$name.err"
  local code=$?
  echo "$name: exit $code in $(( $(date +%s) - start )) s: $(tail -1 "$work/runs/$name.json")"
  [ "$code" -eq 0 ] || echo "  $(tail -1 "$work/runs/$name.err")"
  local id
  id="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' \
        "$work/runs/$name.json" 2>/dev/null)"
  [ -n "$id" ] && "$cli" export "$id" --store "$store" --format jsonl >"$work/runs/$name.points.jsonl" 2>/dev/null
  results
}

"$cli" params "$root/configs/medium.json" --json >"$work/runs/medium-params.json" 2>/dev/null
tiny=(--set train.steps=20 --set runtime.dtype=fp32)
cuda=(--set runtime.device=cuda)
echo "== 1. tiny fp32: the CPU's composed path against CUDA"
TRAINBENCH_CPU_KERNELS=0 run tiny-cpu tiny "$tiny_limit" "${tiny[@]}" --set runtime.device=cpu
run tiny-cuda tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}"
# The same run again: CUDA's atomic adds (MoE's index_add) make two runs differ in the last
# bits, the floor under which the layouts' differences mean nothing.
run tiny-cuda-repeat tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}"
echo "== 2. tiny fp32 on CUDA: ZeRO stages 1 and 3, full recomputation, offload at stages 1 and 3"
run tiny-cuda-stage1 tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=1
run tiny-cuda-stage3 tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=3
run tiny-cuda-recompute tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.activation_checkpointing=full
run tiny-cuda-stage1-offload tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=1 \
  --set runtime.offload=optimizer
run tiny-cuda-stage2 tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=2
run tiny-cuda-stage2-offload tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=2 \
  --set runtime.offload=optimizer
run tiny-cuda-stage3-offload-all tiny "$tiny_limit" "${tiny[@]}" "${cuda[@]}" --set runtime.zero_stage=3 \
  --set runtime.offload=all
echo "== 3. tiny bf16 on CUDA"
run tiny-bf16 tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=bf16
# bf16 device weights (offload at stage 1 under bf16) against fp32 weights under autocast.
run tiny-bf16-stage1 tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=bf16 \
  --set runtime.zero_stage=1
run tiny-bf16-stage1-offload tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=bf16 \
  --set runtime.zero_stage=1 --set runtime.offload=optimizer
# At stage 3 under offload all: bf16 shards and units against fp32 ones under autocast.
run tiny-bf16-stage3 tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=bf16 \
  --set runtime.zero_stage=3
run tiny-bf16-stage3-offload-all tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=bf16 \
  --set runtime.zero_stage=3 --set runtime.offload=all
# fp8 at stage 3 under offload all: the fp8 products quantise bf16 device weights (their
# gradients fp32) against fp32 weights without offload; close, not equal (docs/design/fp8.md).
run tiny-fp8-stage3 tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=fp8 \
  --set runtime.zero_stage=3
run tiny-fp8-stage3-offload-all tiny "$tiny_limit" --set train.steps=20 "${cuda[@]}" --set runtime.dtype=fp8 \
  --set runtime.zero_stage=3 --set runtime.offload=all
echo "== 4a. fp8 on the tensor cores against the CPU emulation, the same operands (test_fp8_cuda's bounds)"
if [ -x "$fp8_check" ]; then
  timeout -k 10 60 "$fp8_check" >"$work/runs/fp8-cuda-check.json" 2>"$work/runs/fp8-cuda-check.err"
  echo "fp8-cuda-check: exit $?: $(tail -c 600 "$work/runs/fp8-cuda-check.json")"
else
  echo "fp8-cuda-check: no $fp8_check (carry it with gpu-carry.sh, or let gpu.sh build)" | tee "$work/runs/fp8-cuda-check.err"
fi
results
echo "== 4. medium bf16: throughput at (8, 1) and (2, 4); medium fp8 at (8, 1)"
medium=(--set runtime.dtype=bf16 --set train.global_batch_size=null "${cuda[@]}")
run medium-8-1 medium "$medium_limit" "${medium[@]}" --set train.steps=20 \
  --set train.micro_batch_size=8 --set train.gradient_accumulation_steps=1
# fp8 next to the bf16 run it is compared with (same shape, same data, same steps).
run medium-fp8-8-1 medium "$medium_limit" "${medium[@]}" --set runtime.dtype=fp8 --set train.steps=20 \
  --set train.micro_batch_size=8 --set train.gradient_accumulation_steps=1
run medium-2-4 medium "$medium_limit" "${medium[@]}" --set train.steps=20 \
  --set train.micro_batch_size=2 --set train.gradient_accumulation_steps=4
echo "== 5. medium bf16 at (4, 2): ZeRO stage 3, full recomputation"
run medium-stage3 medium "$medium_limit" "${medium[@]}" --set train.steps=12 \
  --set train.micro_batch_size=4 --set train.gradient_accumulation_steps=2 --set runtime.zero_stage=3
run medium-recompute medium "$medium_limit" "${medium[@]}" --set train.steps=12 \
  --set train.micro_batch_size=4 --set train.gradient_accumulation_steps=2 --set runtime.activation_checkpointing=full

results
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r["gates"], indent=1)); sys.exit(0 if r["all_gates_pass"] else 1)' \
  "$out/gpu-results.json"
code=$?
echo "== done in $(( $(date +%s) - began )) s; files in $out: $(ls "$out" | wc -l)"
exit $code
