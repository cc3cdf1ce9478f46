#!/usr/bin/env bash
# Installs transformers (TRANSFORMERS_VERSION, default 5.24.0) and what it imports into a folder
# of its own beside the torch environment, for the Hugging Face round-trip tests only: the
# product never imports it. Idempotent; prints the folder (use it as PYTHONPATH with the torch
# environment's python).
set -euo pipefail
version="${TRANSFORMERS_VERSION:-5.24.0}"
torch_env="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}"
site="${TRAINBENCH_TRANSFORMERS_SITE:-$HOME/.cache/trainbench/test-transformers-$version}"
if [ ! -f "$site/.complete" ]; then
  rm -rf "$site.partial"
  "$torch_env/bin/pip" install --quiet --disable-pip-version-check --target "$site.partial" \
    "transformers==$version" safetensors tokenizers >&2
  # torch and numpy come from the torch environment; copies here would shadow them.
  rm -rf "$site.partial"/torch "$site.partial"/numpy "$site.partial"/numpy.libs "$site.partial"/bin
  touch "$site.partial/.complete"
  mv "$site.partial" "$site"
fi
echo "$site"
