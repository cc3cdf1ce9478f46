#!/usr/bin/env bash
# The GPU machine's configure step, here: bench/gpu-deps.sh's Debian packages unpacked into a
# fresh folder, then bench/gpu-configure.sh with pkg-config limited to that folder (Ninja, the
# engine and CLI only). It fails when a dependency is missing from the carried packages, when a
# .pc file points outside the folder, or (REQUIRE_NCCL=1) when ProcessGroupNCCL would be left out.
# Usage: check_gpu_configure.sh BUILD_DIR TORCH_PYTHON REQUIRE_NCCL
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(cd "$1" && pwd)/gpu-configure-check"
rm -rf "$work" && mkdir -p "$work"
bash "$root/bench/gpu-deps.sh" "$work/deps"
# Unpacked, the .pc files name no absolute prefix: they travel with the folder.
if grep -l "^prefix=/" "$work"/deps/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$work"/deps/usr/share/pkgconfig/*.pc; then
  echo "check_gpu_configure: a .pc file above still names an absolute prefix"; exit 1
fi
PYTHON="$2" REQUIRE_NCCL="$3" bash "$root/bench/gpu-configure.sh" "$work/deps" "$work/build" "$work/cmake.log"
rm -rf "$work"
