#!/usr/bin/env bash
# Runs every fuzz target of build-fuzz for a bounded time (seconds per target, default 60).
# Each target grows its own corpus in build-fuzz/corpus/<target>, seeded from
# tests/fuzz/corpus/<target> and tests/fuzz/regressions/<target>; a crashing input lands in
# build-fuzz/crashes/<target>/. Exit status 1 when any target crashed.
set -uo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
status=0
for binary in "$build"/fuzz_*; do
  # The targets only: a second run finds the first one's fuzz_<target>.log files beside them.
  case "$binary" in *.log) continue ;; esac
  [ -f "$binary" ] && [ -x "$binary" ] || continue
  target="$(basename "$binary")"; target="${target#fuzz_}"
  corpus="$build/corpus/$target"; crashes="$build/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  seeds=("$root/tests/fuzz/corpus/$target")
  [ -d "$root/tests/fuzz/regressions/$target" ] && seeds+=("$root/tests/fuzz/regressions/$target")
  log="$build/fuzz_$target.log"
  "$binary" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" >"$log" 2>&1
  rc=$?
  runs="$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1)"
  if [ $rc -eq 0 ]; then
    echo "fuzz $target: ${runs:-done}, no crash ($(ls "$corpus" | wc -l) inputs in the corpus)"
  else
    status=1
    echo "fuzz $target: CRASH (exit $rc); input in $crashes/, log in $log"
    grep -E 'ERROR|what\(\)|SUMMARY' "$log" | head -3 | sed 's/^/  /'
    echo "  once fixed, copy the input into tests/fuzz/regressions/$target/ so make test replays it"
  fi
done
exit $status
