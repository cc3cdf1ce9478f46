#!/usr/bin/env bash
# The engine's floors (engine/README.md), checked on the includes: a folder includes its own
# headers, those of the folders on lower floors and the public headers (trainbench/), never a
# folder on its own floor or above. Every include of an engine header names its folder.
# Prints every include that breaks the rule; exit 1 if any.
set -euo pipefail
engine="${1:-$(cd "$(dirname "$0")/.." && pwd)/engine}"
# Lowest first.
declare -A floor=(
  [files]=0 [config]=0 [metrics]=0 [analysis]=0 [tokenizer]=0 [kernels]=0 [memory]=0 [comm]=0 [tensorboard]=0
  [model]=1 [offload]=1
  [data]=2 [parallel]=2 [weights]=2 [generate]=2
  [train]=3
  [session]=4
  [store]=5 [plan]=5 [interop]=5
  [cli]=6
)
broken=0
for dir in "$engine"/*/; do
  folder="$(basename "$dir")"
  [ "$folder" = include ] && continue
  if [ -z "${floor[$folder]+set}" ]; then echo "engine/$folder: a folder without a floor (add it to engine/README.md and here)"; broken=1; continue; fi
  while IFS=: read -r file line include; do
    target="${include%%/*}"
    [ "$target" = trainbench ] || [ "$target" = "$folder" ] && continue
    if [ -z "${floor[$target]+set}" ]; then continue; fi  # not an engine folder (a library's own path)
    if [ "${floor[$target]}" -ge "${floor[$folder]}" ]; then
      echo "engine/${file#"$engine/"}:$line includes \"$include\": $folder/ (floor ${floor[$folder]}) may not use $target/ (floor ${floor[$target]})"
      broken=1
    fi
  done < <(grep -rnoE '#include "[a-z_]+/[a-z0-9_]+\.h"' "$dir" | sed -E 's/#include "([^"]+)"/\1/')
done
# An include without its folder would slip past the rule above.
if grep -rnE '#include "(\.\./)*[a-z0-9_]+\.h"' "$engine" --include=*.cpp --include=*.h; then
  echo "engine/ includes a header without its folder (above)"; broken=1
fi
exit $broken
