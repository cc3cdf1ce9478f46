#!/usr/bin/env bash
# Installs the peer's Python packages (transformers and what it imports) into a folder of
# their own beside the torch environment, never into it: the product does not depend on them.
# Prints the folder; run the peer with PYTHONPATH set to it and the torch environment's python.
set -euo pipefail
torch_env="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}"
peer="${TRAINBENCH_PEER_SITE:-$HOME/.cache/trainbench/peer-transformers-4.57.1}"
if [ ! -f "$peer/.complete" ]; then
  rm -rf "$peer.partial"
  "$torch_env/bin/pip" install --quiet --target "$peer.partial" \
    "transformers==4.57.1" "safetensors" "huggingface_hub<1.0" "tokenizers" "regex" "pyyaml" "tqdm" \
    "packaging" "filelock" "requests" >&2
  # torch and numpy come from the torch environment; a copy here would shadow them.
  rm -rf "$peer.partial"/torch "$peer.partial"/numpy "$peer.partial"/numpy.libs "$peer.partial"/bin
  touch "$peer.partial/.complete"
  mv "$peer.partial" "$peer"
fi
echo "$peer"
