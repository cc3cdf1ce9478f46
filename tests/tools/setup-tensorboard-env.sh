#!/usr/bin/env bash
# Installs TensorBoard (TENSORBOARD_VERSION, default 2.21.0) and what it imports into a folder of
# its own beside the torch environment, for the TensorBoard event-file tests only: the product
# never imports it. Idempotent; prints the folder on the last line of stdout (use it as
# PYTHONPATH with the torch environment's python); exits 1 with the reason on stderr when it
# cannot be made (no network).
set -euo pipefail
version="${TENSORBOARD_VERSION:-2.21.0}"
torch_env="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}"
site="${TRAINBENCH_TENSORBOARD_SITE:-$HOME/.cache/trainbench/test-tensorboard-$version}"
if [ ! -f "$site/.complete" ]; then
  if [ ! -x "$torch_env/bin/pip" ]; then
    echo "setup-tensorboard-env: no pip in $torch_env (make setup makes the torch environment; TRAINBENCH_TORCH_ENV points elsewhere)" >&2
    exit 1
  fi
  rm -rf "$site.partial"
  # Few retries and a short timeout: offline, the test that calls this should skip soon.
  if ! "$torch_env/bin/pip" install --quiet --disable-pip-version-check --retries 1 --timeout 20 \
      --target "$site.partial" "tensorboard==$version" >&2; then
    echo "setup-tensorboard-env: could not install tensorboard==$version from PyPI (no network, or version not served)" >&2
    rm -rf "$site.partial"
    exit 1
  fi
  # numpy comes from the torch environment; a copy here would shadow it.
  rm -rf "$site.partial"/numpy "$site.partial"/numpy.libs "$site.partial"/numpy-*.dist-info "$site.partial"/bin
  touch "$site.partial/.complete"
  rm -rf "$site"
  mv "$site.partial" "$site"
fi
echo "$site"
