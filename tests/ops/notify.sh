#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sd_notify exchange a Type=notify unit relies on: READY=1 only once the
# mount answers, STATUS= with the transport and the workers, WATCHDOG=1 when
# asked for, and STOPPING=1 then exit status 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_need_root
t_need_daemon
[[ -e /dev/fuse ]] || t_skip_all "no /dev/fuse"

tmp=$(mktemp -d)
daemon_pid='' listener_pid=''
cleanup() {
	[[ -n $daemon_pid ]] && kill -KILL "$daemon_pid" 2>/dev/null
	[[ -n $listener_pid ]] && kill "$listener_pid" 2>/dev/null
	findmnt -M "$tmp/mnt" >/dev/null && fusermount3 -uz "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
not_mounted() {
	! findmnt -M "$1" >/dev/null
}
mkdir "$tmp/src" "$tmp/mnt"
: >"$tmp/empty.conf"
log=$tmp/notify.log
: >"$log"

listen=$srcdir/tests/ops/notify-listen.py
refused() {
	! /usr/bin/python3 "$listen" --check "$1" >/dev/null
}
t_check "the readiness check refuses a directory that is not mounted" refused "$tmp/mnt"

/usr/bin/python3 "$listen" "$tmp/notify.sock" "$tmp/mnt" "$log" &
listener_pid=$!
wait_for 10 test -S "$tmp/notify.sock" || t_skip_all "the listener did not start"

# No WATCHDOG_PID: systemd sets it, but any process may then pet the watchdog.
NOTIFY_SOCKET=$tmp/notify.sock WATCHDOG_USEC=2000000 \
	"$daemon" -f --config "$tmp/empty.conf" "$tmp/src" "$tmp/mnt" 2>"$tmp/daemon.err" &
daemon_pid=$!

t_check "READY=1 arrives" wait_for 30 grep -q '^msg READY=1$' "$log"
t_check "when READY=1 arrives the mount answers statfs and reads" \
	wait_for 10 grep -qx 'ready-check ok' "$log"
{ grep '^ready-check fail' "$log" || true; } | t_diag
t_check "READY=1 is sent once" test "$(grep -c '^msg READY=1$' "$log")" = 1
t_check "STATUS= names the transport and the workers" \
	grep -Eq '^msg STATUS=transport=(uring|dev) workers=[0-9]+ ' "$log"
t_check "WATCHDOG=1 arrives when WATCHDOG_USEC is set" \
	wait_for 10 grep -q '^msg WATCHDOG=1$' "$log"

kill -TERM "$daemon_pid"
status=0
wait "$daemon_pid" || status=$?
daemon_pid=''
t_result "$status" "SIGTERM ends the daemon with status 0 (got $status)"
t_check "STOPPING=1 arrives" wait_for 10 grep -q '^msg STOPPING=1$' "$log"
t_check "the mount is gone" not_mounted "$tmp/mnt"

wait "$listener_pid" || true
listener_pid=''
t_diag <"$tmp/daemon.err"
t_done
