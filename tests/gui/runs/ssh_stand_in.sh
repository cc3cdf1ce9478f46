#!/bin/sh
# A stand-in for ssh (TRAINBENCH_SSH) for the remote-store suites: it skips ssh's options up to
# "--", drops the host, and runs the command line locally through sh, as the remote shell would.
# STAND_IN_SSH_REFUSE=1 answers as ssh does when BatchMode finds no usable key.
while [ $# -gt 0 ]; do
  case "$1" in --) shift; break ;; esac
  shift
done
shift  # the host
if [ -n "${STAND_IN_SSH_REFUSE:-}" ]; then
  echo "me@gpu-node: Permission denied (publickey,password)." >&2
  exit 255
fi
# STAND_IN_SSH_SLOW=1 passes the output on a line at a time, 20 ms apart, as a slow link would.
if [ -n "${STAND_IN_SSH_SLOW:-}" ]; then
  sh -c "$1" | while IFS= read -r line; do printf '%s\n' "$line"; sleep 0.02; done
  exit 0
fi
exec sh -c "$1"
