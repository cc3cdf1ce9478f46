#!/usr/bin/env bash
# The remote store's numbers (docs/BENCHMARKS.md, "Remote runs over ssh"): bench_remote through the
# tests' stand-in for ssh (the CLI run here, no network) and, where an sshd can start, through a
# throwaway sshd on the loopback (tests/gui/runs/throwaway_sshd.sh). Usage: bench/remote.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
export QT_QPA_PLATFORM=offscreen
cli="$build/bin/trainbench-cli"
TRAINBENCH_SSH="$root/tests/gui/runs/ssh_stand_in.sh" "$build/bin/bench_remote" "$cli" gpu-node
keys="$(mktemp -d)"
trap 'kill "$(cat "$keys/sshd.pid" 2>/dev/null)" 2>/dev/null; rm -rf "$keys"' EXIT
if bash "$root/tests/gui/runs/throwaway_sshd.sh" "$keys"; then
  TRAINBENCH_SSH="$keys/ssh" "$build/bin/bench_remote" "$cli" "$(id -un)@127.0.0.1:$(cat "$keys/port")"
else
  echo "remote.sh: no sshd here; only the stand-in was measured" >&2
fi
