#!/usr/bin/env bash
# Installs Hugging Face `datasets` (DATASETS_VERSION, default 5.2.0) and what it imports into a
# folder of its own beside the torch environment, for the hf_dataset source's test only (the
# reference reading of a save_to_disk folder): the product never imports it. Idempotent; prints
# the folder (use it as PYTHONPATH with the torch environment's python).
set -euo pipefail
version="${DATASETS_VERSION:-5.2.0}"
torch_env="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}"
site="${TRAINBENCH_DATASETS_SITE:-$HOME/.cache/trainbench/test-datasets-$version}"
if [ ! -f "$site/.complete" ]; then
  rm -rf "$site.partial"
  "$torch_env/bin/pip" install --quiet --disable-pip-version-check --retries 1 --timeout 20 \
    --target "$site.partial" "datasets==$version" >&2
  # torch, numpy and pyarrow come from the torch environment; copies here would shadow them.
  rm -rf "$site.partial"/torch "$site.partial"/numpy "$site.partial"/numpy.libs "$site.partial"/pyarrow \
    "$site.partial"/pyarrow.libs "$site.partial"/bin
  touch "$site.partial/.complete"
  mv "$site.partial" "$site"
fi
echo "$site"
