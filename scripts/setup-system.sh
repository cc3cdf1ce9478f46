#!/usr/bin/env bash
# Installs the Debian packages Trainbench builds against, only those missing.
# Idempotent: a second run installs nothing and prints one line. Extra package names given as
# arguments are added (make fuzz asks for clang's libFuzzer this way).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev libqt6opengl6-dev libqcustomplot-dev
  nlohmann-json3-dev libsqlite3-dev sqlite3 libcli11-dev
  libpcre2-dev libsentencepiece-dev sentencepiece libaio-dev zlib1g-dev libzstd-dev
  libgloo-dev
  python3 python3-venv python3-dev
  xvfb xauth fonts-dejavu-core desktop-file-utils
  gzip zstd
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-system: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "setup-system: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-system: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "setup-system: apt-get update failed: the Debian package registry is unreachable; could not install ${missing[*]}" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "setup-system: apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi
echo "setup-system: done"
