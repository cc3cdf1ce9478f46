#!/usr/bin/env bash
# Prepares what the GPU check machine lacks (it has python3 with torch, CMake and nvcc, no
# registry): the header-only and small libraries the engine and CLI build against, as Debian
# packages unpacked into build-gpu-deps/ (git-ignored), carried there by the device run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build-gpu-deps"
rm -rf "$out" && mkdir -p "$out/debs"
cd "$out/debs"
apt-get download nlohmann-json3-dev libcli11-dev libsqlite3-dev libsqlite3-0 >/dev/null
for deb in *.deb; do dpkg -x "$deb" "$out"; done
rm -rf "$out/debs" "$out/usr/share/doc"
echo "unpacked into $out: $(du -sh "$out" | cut -f1)"
