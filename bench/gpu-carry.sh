#!/usr/bin/env bash
# Stages this machine's CLI for the GPU machine, so a device window spends no minutes building:
# build-gpu-cli/trainbench-cli and bench_fp8_cuda_check (stripped), carried with build-gpu-deps/ by the device run
# (carry: ["build-gpu-deps", "build-gpu-cli"]). The torch wheel there is the one here
# (2.11.0+cu130), so the CLI runs against its libraries (gpu.sh puts them on LD_LIBRARY_PATH,
# and checks that it starts; else it builds). Usage: bench/gpu-carry.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
grep -q "^TRAINBENCH_NCCL_INCLUDE:PATH=/" "$build/CMakeCache.txt" || {
  echo "gpu-carry: $build was configured without ProcessGroupNCCL; CUDA ranks could not reduce"; exit 1; }
out="$root/build-gpu-cli"
rm -rf "$out" && mkdir -p "$out"
cp "$build/bin/trainbench-cli" "$out/"
strip "$out/trainbench-cli"
# test_fp8_cuda's GPU case without Qt (gpu.sh runs it).
if [ -x "$build/bin/bench_fp8_cuda_check" ]; then
  cp "$build/bin/bench_fp8_cuda_check" "$out/" && strip "$out/bench_fp8_cuda_check"
fi
# Apache Arrow's libraries (data.source parquet) come from the pyarrow beside torch here, which the
# GPU machine's python lacks: they travel stripped and xz-compressed (49 MB as 13.5 MB), and gpu.sh
# unpacks them beside the CLI.
for lib in $(ldd "$out/trainbench-cli" | awk '$1 ~ /^lib(arrow|parquet)\.so/ {print $3}'); do
  strip -o "$out/$(basename "$lib")" "$lib"
  xz -T0 -6 -f "$out/$(basename "$lib")"
done
# Anything it needs beyond torch, the CUDA wheels (libcu*, libnv*, libnccl) and the C runtime must be
# among the carried packages (build-gpu-deps/).
ldd "$out/trainbench-cli" | awk '/=>/ {print $1}' | grep -v -E '^(libarrow\.|libparquet\.|libtorch|libc10|libcu|libnccl|libnv|libgomp|libutil|libc\.|libm\.|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux|linux-vdso)' \
  | sort > "$out/needs.txt" || true
echo "staged $out/trainbench-cli ($(du -h "$out/trainbench-cli" | cut -f1), with Arrow's libraries $(du -sh "$out" | cut -f1));" \
  "beyond torch it needs: $(tr '\n' ' ' < "$out/needs.txt")"
