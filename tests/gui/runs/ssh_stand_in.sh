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
exec sh -c "$1"
