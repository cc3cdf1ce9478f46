#!/usr/bin/env bash
# The floor check must fail on the breaks it exists for: an upward include through a public
# header, an upward include of a private folder, a public header that names no floor, and one
# whose <name>.cpp lives in another folder than it says. Each planted in a copy of engine/.
set -uo pipefail
check="$1/scripts/check-engine-layering.sh"
engine="$1/engine"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0

# `expect_caught NAME PATTERN`: the check on $scratch/engine exits 1 and prints PATTERN.
expect_caught() {
  local output
  output="$(bash "$check" "$scratch/engine" 2>&1)"
  local rc=$?
  if [ $rc -ne 1 ] || ! grep -qF -- "$2" <<<"$output"; then
    echo "FAIL $1: exit $rc, expected 1 with \"$2\"; the check printed:"; echo "$output"; failures=$((failures + 1))
  else
    echo "ok   $1"
  fi
}
fresh_copy() { rm -rf "$scratch/engine"; cp -r "$engine" "$scratch/engine"; }

fresh_copy
if ! bash "$check" "$scratch/engine" >/dev/null; then echo "FAIL: the unplanted copy does not pass"; exit 1; fi

fresh_copy
printf '#include "trainbench/run_store.h"\n' > "$scratch/engine/data/planted.cpp"
expect_caught "data/ through the store's public header" 'data/planted.cpp:1 includes "trainbench/run_store.h": data/ (floor 3) may not use store/ (floor 7)'

fresh_copy
printf '#include "trainbench/training_session.h"\n' > "$scratch/engine/train/planted.h"
expect_caught "train/ through the session's public header" 'train/planted.h:1 includes "trainbench/training_session.h": train/ (floor 5) may not use session/ (floor 6)'

fresh_copy
printf '#include "parallel/part_layout.h"\n' > "$scratch/engine/data/planted.cpp"
expect_caught "data/ beside parallel/ on its own floor" 'may not use parallel/ (floor 3)'

fresh_copy
printf '#pragma once\n' > "$scratch/engine/include/trainbench/planted.h"
expect_caught "a public header without a floor" 'planted.h: no "// Floor: <folder>/" line'

fresh_copy
printf '// Floor: config/\n#pragma once\n' > "$scratch/engine/include/trainbench/planted.h"
touch "$scratch/engine/train/planted.cpp"
expect_caught "a public header naming the wrong folder" 'says "// Floor: config/" but train/planted.cpp defines it'

fresh_copy
printf '// Floor: memory/\n#pragma once\n#include "trainbench/memory_plan.h"\n' > "$scratch/engine/include/trainbench/planted.h"
expect_caught "a public header including upwards" 'memory/ (floor 1) may not use plan/ (floor 4)'

exit $((failures > 0))
