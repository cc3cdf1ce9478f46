#!/usr/bin/env bash
# Prepares what the GPU check machine lacks (it has python3 with torch, CMake, ninja and nvcc,
# no registry and no pkg-config): the small libraries the engine and CLI build against and
# pkg-config itself, as Debian packages unpacked into build-gpu-deps/ (git-ignored; or the
# folder given as $1), carried there by the device run.
# The packages' .pc files say prefix=/usr; they are rewritten relative to their own folder
# (${pcfiledir}), so pkg-config finds the headers and libraries wherever the folder lands.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-gpu-deps}"
packages=(nlohmann-json3-dev libcli11-dev libsqlite3-dev libsqlite3-0
          libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
          libsentencepiece-dev libsentencepiece0 pkgconf-bin libpkgconf3 libaio-dev libaio1
          zlib1g-dev libzstd-dev libzstd1 libgloo-dev)
rm -rf "$out" && mkdir -p "$out/debs"
cd "$out/debs"
apt-get download "${packages[@]}" >/dev/null
for deb in *.deb; do dpkg -x "$deb" "$out"; done
rm -rf "$out/debs" "$out/usr/share/doc" "$out/usr/share/man"
for pc in "$out"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$out"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i 's#^prefix=/usr$#prefix=${pcfiledir}/../../..#' "$pc"
done
# usr/share/pkgconfig sits one level higher than usr/lib/<triplet>/pkgconfig.
for pc in "$out"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i 's#^prefix=${pcfiledir}/../../..$#prefix=${pcfiledir}/../..#' "$pc"
done
echo "unpacked into $out: $(du -sh "$out" | cut -f1)"
