#!/usr/bin/env bash
# The GUI's folder rule (gui/README.md), checked on the includes: a view folder (configure,
# monitor, samples, batch, queue, compare) includes only itself, the shared folders (plotting, runs,
# common) and the engine's public headers; plotting/ and runs/ include only themselves and
# common/, common/ only itself; only app/ puts the views together; nothing in gui/ includes a
# torch header, and every include of a gui header names its folder. Prints every include that breaks it; exit 1 if any.
set -euo pipefail
gui="${1:-$(cd "$(dirname "$0")/.." && pwd)/gui}"
views=(configure monitor samples batch queue compare)
shared=(plotting runs common)
folders=("${views[@]}" "${shared[@]}" app)
broken=0
for folder in "${folders[@]}"; do
  [ -d "$gui/$folder" ] || { echo "gui/$folder: missing"; broken=1; continue; }
  allowed=" $folder plotting runs common trainbench "
  case "$folder" in plotting|runs) allowed=" $folder common trainbench " ;; common) allowed=" common trainbench " ;; esac
  [ "$folder" = app ] && allowed=" ${folders[*]} trainbench "
  while IFS=: read -r file line include; do
    target="${include%%/*}"
    case "$allowed" in *" $target "*) ;; *)
      echo "gui/${file#"$gui/"}:$line includes \"$include\": $folder/ may not use $target/"; broken=1 ;;
    esac
  done < <(grep -rnoE '#include "[a-z_]+/[a-z0-9_]+\.h"' "$gui/$folder" | sed -E 's/#include "([^"]+)"/\1/')
done
# An include without a folder (or climbing out with ../) would slip past the rule above.
if grep -rnE '#include "(\.\./)*[a-z0-9_]+\.h"' "$gui" | grep -v '_autogen\|\.moc"'; then
  echo "gui/ includes a header without its folder (above)"; broken=1
fi
# Torch stays behind the engine's public headers.
if grep -rnE '#include <(torch|ATen|c10)/' "$gui"; then echo "gui/ includes a torch header (above)"; broken=1; fi
# Every source lives in a folder: nothing but the build file and the README at gui/'s root.
for file in "$gui"/*; do
  case "$(basename "$file")" in CMakeLists.txt|README.md) ;; *) [ -d "$file" ] || { echo "gui/$(basename "$file"): outside the folders"; broken=1; } ;; esac
done
exit $broken
