#!/usr/bin/env bash
# Stages this machine's CLI for the GPU machine, so a device window spends no minutes building:
# build-gpu-cli/trainbench-cli (stripped), carried with build-gpu-deps/ by the device run
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
# Anything it needs beyond torch, the CUDA wheels (libcu*, libnv*, libnccl) and the C runtime must be
# among the carried packages (build-gpu-deps/).
ldd "$out/trainbench-cli" | awk '/=>/ {print $1}' | grep -v -E '^(libtorch|libc10|libcu|libnccl|libnv|libgomp|libutil|libc\.|libm\.|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux|linux-vdso)' \
  | sort > "$out/needs.txt" || true
echo "staged $out/trainbench-cli ($(du -h "$out/trainbench-cli" | cut -f1)); beyond torch it needs: $(tr '\n' ' ' < "$out/needs.txt")"
