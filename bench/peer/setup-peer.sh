#!/usr/bin/env bash
# Installs the peer's Python packages (transformers and what it imports) into a folder of
# their own beside the torch environment, never into it: the product does not depend on them.
# Prints the folder; run the peer with PYTHONPATH set to it and the torch environment's python.
set -euo pipefail
# TRANSFORMERS_VERSION picks the release (default 4.57.1, the first peer; 5.x is the newest line).
version="${TRANSFORMERS_VERSION:-4.57.1}"
torch_env="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}"
peer="${TRAINBENCH_PEER_SITE:-$HOME/.cache/trainbench/peer-transformers-$version}"
if [ ! -f "$peer/.complete" ]; then
  rm -rf "$peer.partial"
  hub="huggingface_hub"
  [ "${version%%.*}" -lt 5 ] && hub="huggingface_hub<1.0"  # 4.x predates hub 1.0
  "$torch_env/bin/pip" install --quiet --disable-pip-version-check --target "$peer.partial" \
    "transformers==$version" "safetensors" "$hub" "tokenizers" "regex" "pyyaml" "tqdm" \
    "packaging" "filelock" "requests" >&2
  # torch and numpy come from the torch environment; a copy here would shadow them.
  rm -rf "$peer.partial"/torch "$peer.partial"/numpy "$peer.partial"/numpy.libs "$peer.partial"/bin
  touch "$peer.partial/.complete"
  mv "$peer.partial" "$peer"
fi
echo "$peer"
