#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A mount helper is silent on success: "mount -t fuse.uringfs" and an fstab
# "mount MOUNTPOINT" print nothing when the mount works, and what the daemon
# chose goes to syslog instead; a failure still prints one line on stderr
# and exits non-zero; "uringfs -f" still logs everything on stderr.
#
# As in fstab-mount.sh, the test runs in a mount namespace of its own, where
# /usr/local/sbin holds a link to the built daemon and a test fstab covers
# /etc/fstab.  The syslog lines are read from an AF_UNIX datagram socket of
# the test's: bound at /dev/log when there is none (and removed after), or,
# when a syslog daemon has one, bind-mounted over it inside the namespace,
# so the rest of the system still logs to its own.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_mount_namespace "$@"

tmp=$(mktemp -d)
listener='' devlog_ours=''
# daemon_pids: the daemons serving this test's mount point (looked up, never matched to kill).
daemon_pids() {
	pgrep -f -- " $tmp/mnt" || true
}
# no_daemon: none is left (a function: wait_for asks again each time).
no_daemon() {
	[[ -z $(daemon_pids) ]]
}
cleanup() {
	local pid
	findmnt -M "$tmp/mnt" >/dev/null && umount -l "$tmp/mnt"
	for pid in $(daemon_pids); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	[[ -n $listener ]] && kill "$listener" 2>/dev/null
	[[ -n $devlog_ours ]] && rm -f /dev/log
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/mnt"
t_cover_helpers "$tmp"

printf '[general]\nstats_file = quiet-stats\n' >"$tmp/uringfs.conf"
opts=config=$tmp/uringfs.conf
printf '%s %s fuse.uringfs defaults,%s 0 0\n' "$tmp/src" "$tmp/mnt" "$opts" >"$tmp/fstab"
mount --bind "$tmp/fstab" /etc/fstab

# The syslog socket: every datagram a line of $tmp/syslog.
syslog_note=''
listen() {
	/usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "a", encoding="utf-8") as out:
    while True:
        out.write(s.recv(65536).decode(errors="replace").rstrip("\n") + "\n")
        out.flush()
' "$1" "$tmp/syslog" &
	listener=$!
	wait_for 10 test -S "$1"
}
: >"$tmp/syslog"
if [[ ! -e /dev/log ]]; then
	devlog_ours=1
	listen /dev/log || syslog_note="the test's listener did not bind /dev/log"
elif [[ -S /dev/log ]]; then
	if ! listen "$tmp/log.sock"; then
		syslog_note="the test's listener did not bind $tmp/log.sock"
	elif ! err=$(mount --bind "$tmp/log.sock" /dev/log 2>&1); then
		syslog_note="cannot cover this system's /dev/log in the test's namespace: $err"
	fi
else
	syslog_note="/dev/log is there but not a socket: $(stat -c %F /dev/log)"
fi

is_mounted() {
	findmnt -M "$tmp/mnt" >/dev/null
}

# mounted COMMAND...: run COMMAND, which must mount $tmp/mnt; its stderr in $tmp/stderr.
mounted() {
	local code=0
	"$@" 2>"$tmp/stderr" </dev/null >/dev/null || code=$?
	t_result "$code" "$*: exits 0 (got $code)"
	t_check "$*: mounts $tmp/mnt" is_mounted
	t_check "$*: nothing on stderr" test ! -s "$tmp/stderr"
	[[ -s $tmp/stderr ]] && t_diag <"$tmp/stderr"
	return 0
}

# unmounted: umount, then the daemon must go.
unmounted() {
	t_check "umount exits 0" umount "$tmp/mnt"
	t_check "the daemon then exits" wait_for 30 no_daemon
}

logged() {
	grep -q "uringfs\[[0-9]*\]: $1" "$tmp/syslog"
}

mounted mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts"
t_check "the mount serves" grep -q '^transport ' "$tmp/mnt/quiet-stats"
if [[ -n $syslog_note ]]; then
	t_skip "the daemon's start-up lines reach syslog" "$syslog_note"
else
	t_check "syslog has the start-up line" wait_for 10 logged "uringfs .* starting: $tmp/src on $tmp/mnt"
	t_check "syslog has what the daemon chose (transport, workers, ...)" \
		wait_for 10 logged "serving $tmp/src at $tmp/mnt: transport=[a-z]* workers="
	# Anything else that reached the socket (not expected; shown for a failure).
	{ grep -v "uringfs\[[0-9]*\]: " "$tmp/syslog" || true; } | t_diag
fi
unmounted

mounted mount "$tmp/mnt"
unmounted

# fails WHAT WORD COMMAND...: COMMAND must exit non-zero with one line naming
# WORD, and leave the mount point as it was.
fails() {
	local what=$1 word=$2 code=0 before=mounted
	shift 2
	is_mounted || before=unmounted
	"$@" 2>"$tmp/stderr" </dev/null >/dev/null || code=$?
	t_check "$what: exits non-zero" test "$code" != 0
	t_check "$what: one line on stderr" test "$(wc -l <"$tmp/stderr")" = 1
	t_check "$what: naming $word" grep -qF -- "$word" "$tmp/stderr"
	t_diag <"$tmp/stderr"
	t_check "$what: $tmp/mnt stays $before" eval "[[ \$(is_mounted && echo mounted || echo unmounted) == $before ]]"
}
fails "a missing source" "$tmp/no-such-src" \
	mount -t fuse.uringfs "$tmp/no-such-src" "$tmp/mnt" -o "$opts"
fails "an unknown option" "no_such_option" \
	mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts,no_such_option=1"
fails "a refused combination" "posix_acl=off" \
	mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts,allow_other,posix_acl=off"

# Refused after the start-up line: the mount point is served already.
mounted mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts"
first=$(daemon_pids)
fails "a served mount point" "--take-over" \
	mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts"
# A warning before detaching is the caller's to see: a mount whose daemon died.
for pid in $first; do
	kill -KILL "$pid"
done
t_check "the killed daemon is gone" wait_for 30 no_daemon
code=0
mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts" 2>"$tmp/stderr" </dev/null || code=$?
t_result "$code" "mount over a dead mount: exits 0 (got $code)"
t_check "mount over a dead mount: one line on stderr" test "$(wc -l <"$tmp/stderr")" = 1
t_check "mount over a dead mount: the warning" \
	grep -q "^uringfs: warn: a uringfs mount at $tmp/mnt that no daemon serves" "$tmp/stderr"
t_diag <"$tmp/stderr"
t_check "mount over a dead mount: the mount serves" test -e "$tmp/mnt/quiet-stats"
unmounted

# -f logs to stderr as before: the start-up lines and what it chose.
"$daemon" -f --config "$tmp/uringfs.conf" "$tmp/src" "$tmp/mnt" </dev/null >/dev/null \
	2>"$tmp/foreground" &
fg_pid=$!
t_check "uringfs -f: the mount serves" wait_for 30 test -e "$tmp/mnt/quiet-stats"
t_check "uringfs -f: start-up lines on stderr" \
	wait_for 10 grep -q "^uringfs: info: serving $tmp/src at $tmp/mnt: transport=" \
	"$tmp/foreground"
t_check "uringfs -f: umount exits 0" umount "$tmp/mnt"
code=0
wait "$fg_pid" || code=$?
t_result "$code" "uringfs -f: exits 0 after the unmount (got $code)"

# An ordinary user's mount (nobody, through fusermount3) is as quiet: what
# it cannot have by design (file handles and so the hand-over, which need
# CAP_DAC_READ_SEARCH) is said at info, in syslog and in --stats, not as a
# warning on the terminal.  XDG_RUNTIME_DIR as a login session has it.
mkdir -m 700 "$tmp/run-user"
chown 65534:65534 "$tmp/run-user" "$tmp/src" "$tmp/mnt"
chmod 755 "$tmp"
as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env XDG_RUNTIME_DIR="$tmp/run-user" "$@"
}
# A copy the user may run: the build may sit under root's own home (0700).
install -m 755 "$daemon" "$tmp/uringfs-user"
mounted as_user "$tmp/uringfs-user" "$tmp/src" "$tmp/mnt" -o "$opts"
user_stats() { as_user "$tmp/uringfs-user" --stats "$tmp/mnt" -o "$opts" >"$tmp/user-stats"; }
t_check "the user's mount: --stats works" user_stats
t_check "the user's mount: --stats says why no file handles" \
	grep -qx "inode_handles_reason no CAP_DAC_READ_SEARCH (an ordinary user)" "$tmp/user-stats"
t_check "the user's mount: --stats says why no hand-over" \
	grep -qx "handover_reason no file handles (inode_handles_reason)" "$tmp/user-stats"
if [[ -n $syslog_note ]]; then
	t_skip "the user's mount: syslog has why" "$syslog_note"
else
	# <30>: facility daemon (3), level info (6).
	t_check "the user's mount: syslog has why, at info" wait_for 10 grep -q \
		"^<30>.*uringfs\[[0-9]*\]: inode_handles: no file handles without CAP_DAC_READ_SEARCH" \
		"$tmp/syslog"
fi
t_check "the user's mount: fusermount3 -u exits 0" as_user fusermount3 -u "$tmp/mnt"
t_check "the user's daemon then exits" wait_for 30 no_daemon
t_done
