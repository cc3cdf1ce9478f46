#!/usr/bin/env bash
# Starts an sshd of its own on a free loopback port for the remote-store suite and
# bench/remote.sh: a throwaway host key and user key in DIR, only that key accepted, none of the
# system's ssh configuration read. Writes DIR/ssh (an ssh that logs in with that key, for
# TRAINBENCH_SSH), DIR/port and DIR/sshd.pid. Exit 0 once a login works; 1 with the reason on
# stderr when none can start here (no sshd installed, no privilege separation user, ...).
set -uo pipefail
dir="$1"
sshd="$(command -v sshd || echo /usr/sbin/sshd)"
[ -x "$sshd" ] || { echo "no sshd here (Debian's openssh-server is not installed)" >&2; exit 1; }
command -v ssh-keygen >/dev/null && command -v ssh >/dev/null || { echo "no OpenSSH client here" >&2; exit 1; }
mkdir -p "$dir"
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key" || exit 1
cp "$dir/user_key.pub" "$dir/authorized_keys" && chmod 600 "$dir/authorized_keys"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat > "$dir/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
EOF
# As root, privilege separation needs its empty directory.
[ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
"$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log" || { echo "sshd did not start: $(tail -3 "$dir/sshd.log")" >&2; exit 1; }
cat > "$dir/ssh" <<EOF
#!/bin/sh
exec ssh -F /dev/null -i "$dir/user_key" -o IdentitiesOnly=yes -o UserKnownHostsFile="$dir/known_hosts" \
  -o StrictHostKeyChecking=accept-new -o LogLevel=ERROR "\$@"
EOF
chmod +x "$dir/ssh"
echo "$port" > "$dir/port"
for _ in $(seq 50); do
  if "$dir/ssh" -o BatchMode=yes -p "$port" 127.0.0.1 true 2> "$dir/login.err"; then exit 0; fi
  sleep 0.1
done
echo "sshd did not accept a login: $(tail -2 "$dir/sshd.log") $(tail -2 "$dir/login.err")" >&2
kill "$(cat "$dir/sshd.pid" 2>/dev/null)" 2>/dev/null
exit 1
