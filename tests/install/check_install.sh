#!/usr/bin/env bash
# Installs the build into a temporary prefix (cmake --install) and runs the installed programs
# from another folder, as a desktop user would: the CLI counts a published config and trains
# 3 steps, the GUI saves a screenshot offscreen. Usage: check_install.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check_install: $*" >&2; exit 1; }

prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for file in bin/trainbench bin/trainbench-cli share/applications/trainbench.desktop \
    share/icons/hicolor/scalable/apps/trainbench.svg share/icons/hicolor/48x48/apps/trainbench.png \
    share/icons/hicolor/256x256/apps/trainbench.png share/trainbench/configs/tiny.json \
    share/trainbench/configs/deepseek/config_671B.json; do
  [ -f "$prefix/$file" ] || fail "the install has no $file"
done
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$prefix/share/applications/trainbench.desktop" || fail "the desktop entry is not valid"
fi
# The installed programs must not lean on the build tree.
for program in trainbench trainbench-cli; do
  if readelf -d "$prefix/bin/$program" | grep -E 'R(UN)?PATH' | grep -qF "$build"; then
    fail "bin/$program looks for libraries in the build folder $build"
  fi
done

mkdir "$work/elsewhere"
cd "$work/elsewhere"
export TRAINBENCH_STORE="$work/store" TRAINBENCH_SETTINGS="$work/settings.ini"
unset LD_LIBRARY_PATH
cli="$prefix/bin/trainbench-cli"
params="$("$cli" params "$prefix/share/trainbench/configs/deepseek/config_671B.json" --json)"
case "$params" in *'"state_dict_tensors":45395'*) ;; *) fail "params of config_671B printed: $params" ;; esac
summary="$("$cli" run "$prefix/share/trainbench/configs/tiny.json" --set train.steps=3 --set train.eval_every=0 2>/dev/null | tail -n 1)"
case "$summary" in *'"status":"completed"'*'"steps":3'*|*'"steps":3'*'"status":"completed"'*) ;; *) fail "the 3-step run printed: $summary" ;; esac

QT_QPA_PLATFORM=offscreen "$prefix/bin/trainbench" --view configure --screenshot "$work/shot.png" ||
  fail "the installed GUI could not save a screenshot"
[ "$(head -c 8 "$work/shot.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "the screenshot is not a PNG"
echo "check_install: installed into $prefix; the CLI and the GUI ran from $work/elsewhere"
