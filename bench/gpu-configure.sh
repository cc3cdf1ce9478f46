#!/usr/bin/env bash
# Configures the engine, CLI and benchmarks (no GUI or tests) the way the GPU check machine
# does: Ninja, the torch of the `python3` given as $PYTHON (default python3), and only the
# carried Debian packages of DEPS (bench/gpu-deps.sh) for pkg-config, SQLite, CLI11 and JSON.
# Fails fast, saying what is missing, when the configure fails, when PCRE2 or SentencePiece
# come from anywhere but DEPS, or (REQUIRE_NCCL=1, the default) ProcessGroupNCCL is not built in.
# Usage: bench/gpu-configure.sh DEPS BUILD_DIR LOG
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
deps="$(cd "$1" 2>/dev/null && pwd)" || { echo "gpu-configure: $1 is missing (bench/gpu-deps.sh makes it; carry it)"; exit 1; }
build="$2"; log="$3"
python="${PYTHON:-python3}"
torch_dir="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch" || {
  echo "gpu-configure: $python has no torch"; exit 1; }
libdir="$deps/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# pkg-config sees the carried folder and nothing else: what the GPU machine has.
export PKG_CONFIG_LIBDIR="$libdir/pkgconfig:$deps/usr/share/pkgconfig"
unset PKG_CONFIG_PATH
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" \
  -DCMAKE_PREFIX_PATH="$deps/usr" -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkgconf" \
  -DTRAINBENCH_BUILD_GUI=OFF -DTRAINBENCH_BUILD_TESTS=OFF -DTRAINBENCH_BUILD_BENCH=ON >"$log" 2>&1 || {
  tail -30 "$log"; echo "gpu-configure: cmake failed (log: $log)"; exit 1; }
for lib in pkgcfg_lib_PCRE2_pcre2-8 pkgcfg_lib_SentencePiece_sentencepiece; do
  found="$(grep "^$lib:" "$build/CMakeCache.txt" | cut -d= -f2-)"
  case "$found" in
    "$deps"/*) ;;
    *) echo "gpu-configure: $lib is '$found', not in $deps"; exit 1 ;;
  esac
done
if [ "${REQUIRE_NCCL:-1}" = 1 ] && ! grep -q "ProcessGroupNCCL: built in" "$log"; then
  grep "ProcessGroupNCCL" "$log"; echo "gpu-configure: no ProcessGroupNCCL: CUDA ranks could not reduce"; exit 1
fi
grep "ProcessGroupNCCL" "$log"
echo "gpu-configure: configured $build"
