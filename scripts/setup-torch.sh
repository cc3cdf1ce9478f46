#!/usr/bin/env bash
# Creates (once) the Python environment that provides LibTorch, and Apache Arrow's C++ libraries
# for data.source parquet (the pyarrow wheel), shared by every checkout.
# Location: $TRAINBENCH_TORCH_ENV, else ~/.cache/trainbench/torch-<version>.
# Prints the environment's path on the last line of stdout.
set -euo pipefail

torch_version="${TRAINBENCH_TORCH_VERSION:-2.11.0}"
pyarrow_version="${TRAINBENCH_PYARROW_VERSION:-26.0.1}"
env_dir="${TRAINBENCH_TORCH_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/trainbench/torch-$torch_version}"
stamp="$env_dir/.trainbench-ready"
arrow_stamp="$env_dir/.trainbench-pyarrow"

# pyarrow ships libarrow, libparquet and their headers, built with the C++11 string ABI torch and
# g++ use (cmake/arrow_parquet.cmake finds them there). An environment made before pyarrow joined gets it
# here, once; without it the build goes on and only data.source parquet is refused.
ensure_pyarrow() {
  if [ -f "$arrow_stamp" ] && [ "$(cat "$arrow_stamp")" = "$pyarrow_version" ]; then return 0; fi
  echo "setup-torch: installing pyarrow==$pyarrow_version into $env_dir (Parquet data, once)" >&2
  if "$env_dir/bin/pip" install --quiet --disable-pip-version-check "pyarrow==$pyarrow_version" >&2; then
    echo "$pyarrow_version" > "$arrow_stamp"
  else
    echo "setup-torch: could not install pyarrow==$pyarrow_version from PyPI; the build goes on without" \
         "data.source parquet (set TRAINBENCH_PYARROW_VERSION to a served version and rerun)." >&2
  fi
}

if [ -f "$stamp" ]; then
  ensure_pyarrow
  echo "setup-torch: using $env_dir (torch $(cat "$stamp"))" >&2
  echo "$env_dir"
  exit 0
fi

python="${TRAINBENCH_PYTHON:-/usr/bin/python3}"
[ -x "$python" ] || python="$(command -v python3)"
echo "setup-torch: creating $env_dir with torch==$torch_version (a few GB, once per machine)" >&2
mkdir -p "$(dirname "$env_dir")"
rm -rf "$env_dir.partial"
"$python" -m venv "$env_dir.partial"
if ! "$env_dir.partial/bin/pip" install --quiet --disable-pip-version-check "torch==$torch_version" numpy >&2; then
  echo "setup-torch: could not install torch==$torch_version from PyPI (registry unreachable or version not served)." >&2
  echo "setup-torch: set TRAINBENCH_TORCH_VERSION to a served 2.x version, or TRAINBENCH_TORCH_ENV to an existing environment." >&2
  rm -rf "$env_dir.partial"
  exit 1
fi
# The venv hard-codes its path in scripts; recreate the activation paths after the move.
rm -rf "$env_dir"
mv "$env_dir.partial" "$env_dir"
sed -i "s#$env_dir.partial#$env_dir#g" "$env_dir"/bin/* 2>/dev/null || true
installed="$("$env_dir/bin/python" -c 'import torch; print(torch.__version__)')"
echo "$installed" > "$stamp"
ensure_pyarrow
echo "setup-torch: ready, torch $installed" >&2
echo "$env_dir"
