#!/usr/bin/env bash
# Creates (once) the test-only Python environment with Hugging Face `tokenizers`, the
# independent reference for the tokenizer suite. Never a product dependency.
# Location: $TRAINBENCH_TEST_PY, else ~/.cache/trainbench/test-tokenizers-<version>.
# Prints the environment's python on the last line of stdout; exits 1 (with the reason on
# stderr) when it cannot be made, e.g. without network.
set -euo pipefail

version="${TRAINBENCH_TOKENIZERS_VERSION:-0.23.3}"
env_dir="${TRAINBENCH_TEST_PY:-${XDG_CACHE_HOME:-$HOME/.cache}/trainbench/test-tokenizers-$version}"
stamp="$env_dir/.complete"

if [ -f "$stamp" ]; then
  echo "setup-tokenizers-env: using $env_dir (tokenizers $(cat "$stamp"))" >&2
  echo "$env_dir/bin/python"
  exit 0
fi

python="${TRAINBENCH_PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "setup-tokenizers-env: no python3 found; set TRAINBENCH_PYTHON to a Python 3 interpreter." >&2
  exit 1
fi
echo "setup-tokenizers-env: creating $env_dir with tokenizers==$version (once per machine)" >&2
if ! mkdir -p "$(dirname "$env_dir")" 2>/dev/null; then
  echo "setup-tokenizers-env: cannot create $(dirname "$env_dir"); point TRAINBENCH_TEST_PY at a writable folder." >&2
  exit 1
fi
rm -rf "$env_dir.partial"
if ! "$python" -m venv "$env_dir.partial" >&2; then
  echo "setup-tokenizers-env: '$python -m venv' failed in $env_dir.partial (unwritable folder, or no venv module)." >&2
  rm -rf "$env_dir.partial"
  exit 1
fi
# Few retries and a short timeout: offline, the test that calls this should skip soon.
if ! "$env_dir.partial/bin/python" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 10 \
    "tokenizers==$version" >&2; then
  echo "setup-tokenizers-env: could not install tokenizers==$version from PyPI (no network, or version not served)." >&2
  rm -rf "$env_dir.partial"
  exit 1
fi
# A venv's text scripts name its own path; fix them after the move. The interpreter links are
# left alone (sed -i would replace a link with a copy of its target).
rm -rf "$env_dir"
mv "$env_dir.partial" "$env_dir"
grep -lI --no-messages "$env_dir.partial" "$env_dir"/bin/* | while read -r script; do
  [ -L "$script" ] || sed -i "s#$env_dir.partial#$env_dir#g" "$script"
done
installed="$("$env_dir/bin/python" -c 'import tokenizers; print(tokenizers.__version__)')"
echo "$installed" > "$stamp"
echo "setup-tokenizers-env: ready, tokenizers $installed" >&2
echo "$env_dir/bin/python"
