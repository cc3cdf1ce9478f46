#!/usr/bin/env bash
# The engine's floors (engine/README.md), checked on the includes: a folder includes its own
# headers and those of folders on lower floors, never a folder on its own floor or above. A
# public header (include/trainbench/) belongs to the folder that defines it, which its line
# "// Floor: <folder>/" names, so including it is including that folder: a public header is not
# a way around the rule. Every include of an engine header names its folder.
# Prints every include that breaks the rule; exit 1 if any.
set -euo pipefail
engine="${1:-$(cd "$(dirname "$0")/.." && pwd)/engine}"
# Lowest first.
declare -A floor=(
  [files]=0 [config]=0
  [metrics]=1 [analysis]=1 [tokenizer]=1 [kernels]=1 [memory]=1 [comm]=1
  [tensorboard]=2 [model]=2 [offload]=2
  [data]=3 [parallel]=3 [weights]=3 [generate]=3
  [plan]=4
  [train]=5
  [session]=6
  [store]=7 [explore]=7 [interop]=7
  [cli]=8
)
broken=0

# The owner of each public header: the folder its "// Floor:" line names. A header whose
# functions a folder's <name>.cpp defines must name that folder.
declare -A owner=()
for header in "$engine"/include/trainbench/*.h; do
  name="$(basename "$header" .h)"
  folder="$(sed -nE 's|^// Floor: ([a-z_]+)/.*|\1|p' "$header" | head -n 1)"
  if [ -z "$folder" ]; then
    echo "engine/include/trainbench/$name.h: no \"// Floor: <folder>/\" line (name the folder that defines it)"; broken=1; continue
  fi
  if [ -z "${floor[$folder]+set}" ]; then
    echo "engine/include/trainbench/$name.h: \"// Floor: $folder/\" is not an engine folder"; broken=1; continue
  fi
  for source in "$engine"/*/"$name".cpp; do
    [ -e "$source" ] || continue
    defined_in="$(basename "$(dirname "$source")")"
    if [ "$defined_in" != "$folder" ]; then
      echo "engine/include/trainbench/$name.h: says \"// Floor: $folder/\" but $defined_in/$name.cpp defines it"; broken=1
    fi
  done
  owner[$name]="$folder"
done

# Checks the includes in `files` (grep -rno output) of code on `folder`'s floor.
check_includes() {
  local folder="$1" file line include target name
  while IFS=: read -r file line include; do
    target="${include%%/*}"
    if [ "$target" = trainbench ]; then
      name="$(basename "$include" .h)"
      if [ -z "${owner[$name]+set}" ]; then continue; fi  # reported above, or not a header here
      target="${owner[$name]}"
    fi
    [ "$target" = "$folder" ] && continue
    if [ -z "${floor[$target]+set}" ]; then continue; fi  # not an engine folder (a library's own path)
    if [ "${floor[$target]}" -ge "${floor[$folder]}" ]; then
      echo "engine/${file#"$engine/"}:$line includes \"$include\": $folder/ (floor ${floor[$folder]}) may not use $target/ (floor ${floor[$target]})"
      broken=1
    fi
  done
}

for dir in "$engine"/*/; do
  folder="$(basename "$dir")"
  [ "$folder" = include ] && continue
  if [ -z "${floor[$folder]+set}" ]; then echo "engine/$folder: a folder without a floor (add it to engine/README.md and here)"; broken=1; continue; fi
  check_includes "$folder" < <(grep -rnoE '#include "[a-z_]+/[a-z0-9_]+\.h"' "$dir" | sed -E 's/#include "([^"]+)"/\1/')
done
# A public header's own includes: it sits on its owner's floor.
for header in "$engine"/include/trainbench/*.h; do
  name="$(basename "$header" .h)"
  [ -n "${owner[$name]+set}" ] || continue
  check_includes "${owner[$name]}" < <(grep -noE '#include "[a-z_]+/[a-z0-9_]+\.h"' "$header" | sed -E "s|^|$header:|; s/#include \"([^\"]+)\"/\1/")
done
# An include without its folder would slip past the rule above.
if grep -rnE '#include "(\.\./)*[a-z0-9_]+\.h"' "$engine" --include=*.cpp --include=*.h; then
  echo "engine/ includes a header without its folder (above)"; broken=1
fi
exit $broken
