#!/usr/bin/env bash
# Creates (once) the Python environment that provides LibTorch, shared by every checkout.
# Location: $TRAINBENCH_TORCH_ENV, else ~/.cache/trainbench/torch-<version>.
# Prints the environment's path on the last line of stdout.
set -euo pipefail

torch_version="${TRAINBENCH_TORCH_VERSION:-2.11.0}"
env_dir="${TRAINBENCH_TORCH_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/trainbench/torch-$torch_version}"
stamp="$env_dir/.trainbench-ready"

if [ -f "$stamp" ]; then
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
echo "setup-torch: ready, torch $installed" >&2
echo "$env_dir"
