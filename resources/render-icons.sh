#!/usr/bin/env bash
# Renders resources/icons/trainbench.svg to the PNG sizes the desktop and the window use. Run it
# after changing the SVG and commit the PNGs (the build uses them as they are; rsvg-convert is
# Debian's librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/icons"
command -v rsvg-convert >/dev/null || bash ../../scripts/setup-system.sh librsvg2-bin
for size in 16 24 32 48 64 128 256 512; do
  rsvg-convert -w "$size" -h "$size" trainbench.svg -o "trainbench-$size.png"
done
