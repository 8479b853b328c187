#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# systemd-unit.sh - uringfs@.service under a real systemd (PID 1 in the 7.3
# guest: tests/vm/guest-systemd.sh boots it).  TAP.
#
# The unit as make generates it (only the binary's path points at the
# build tree) serves /srv/ufs-sd at /mnt/ufssd while a process keeps a file
# open, writes to it every 20 ms and holds a POSIX lock on it:
#   start: READY=1 and STATUS=, the mount serves;
#   kill -9 of the daemon: Restart=on-failure starts it again, and it takes
#     the mount over from the file descriptor store;
#   systemctl restart: SIGTERM, systemd's job is a restart: the mount stays
#     and the new daemon takes it over;
#   systemctl reload: a fresh process takes it over (uringfs --take-over)
#     and becomes the main process;
#   systemctl stop: unmounted.
# The writer must see no error until the stop, and the lock must stay held.
set -euo pipefail
# shellcheck source=../ops/lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../ops/lib.sh"
t_need_root
t_need_daemon

unit_src=$builddir/systemd/uringfs@.service
[[ -f $unit_src ]] || t_cannot_run "$unit_src is not generated (make all)"
[[ $(cat /proc/1/comm) == systemd ]] || t_cannot_run "PID 1 is not systemd: boot with run-guest.sh --systemd"

mnt=/mnt/ufssd
src=/srv/ufs-sd
instance=$(systemd-escape --path "$mnt")
unit=uringfs@$instance.service
# Not under /tmp: the units systemd starts meanwhile may mount a fresh one there.
work=/root/ufs-sd-work
rm -rf "$work" && mkdir -p "$work"
mkdir -p "$mnt" "$src" /etc/uringfs
# The guest's root is an overlay, which gives no file handles: a tmpfs does.
mount -t tmpfs -o size=256m ufs-sd "$src"
: >/etc/uringfs/empty.conf
printf 'SOURCE=%s\nOPTIONS=--config /etc/uringfs/empty.conf\n' "$src" >"/etc/uringfs/$instance.env"
sed -e "s|^ExecStart=[^ ]*/uringfs |ExecStart=$daemon |" \
	-e "s|^ExecReload=[^ ]*/uringfs |ExecReload=$daemon |" "$unit_src" \
	>/etc/systemd/system/uringfs@.service
systemctl daemon-reload

main_pid() {
	systemctl show -P MainPID "$unit"
}

# stat NAME: a counter of the control file, without waiting on a dead mount.
stat_of() {
	timeout 10 "$daemon" --stats "$mnt" --config /etc/uringfs/empty.conf 2>/dev/null |
		awk -v k="$1" '$1 == k { print $2 }'
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

serving_as() {
	[[ $(systemctl is-active "$unit") == active && $(main_pid) != "$1" && $(main_pid) != 0 ]] &&
		[[ $(stat_of restarts) == "$2" ]]
}

journal_has() {
	journalctl -q -u "$unit" -o cat | grep -qF -- "$1"
}

lock_held() {
	python3 - "$mnt/held" <<'EOF'
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    sys.exit(1)
except OSError as e:
    sys.exit(0 if e.errno in (errno.EAGAIN, errno.EACCES) else 2)
EOF
}

t_check "systemctl start: the unit is active" systemctl start "$unit"
# systemctl start returns once READY=1 came (Type=notify): serving by then.
t_check "READY=1: the mount serves once started" test "$(stat_of transport)" != ""
t_check "STATUS= names the transport" \
	wait_for 15 bash -c "systemctl show -P StatusText '$unit' | grep -q transport="
systemctl show -P StatusText "$unit" | t_diag

# The writer: an open file, a line every 20 ms, a POSIX lock, every error
# logged with the phase it came in (the test writes the phase's name).
echo start >"$work/phase"
python3 - "$mnt/held" "$work/writer.log" "$work/phase" <<'EOF' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
log = open(sys.argv[2], 'w', buffering=1)
log.write('locked\n')
n = worst = 0
while not os.path.exists(sys.argv[2] + '.stop'):
    t = time.monotonic()
    try:
        os.pwrite(fd, b'%08d\n' % n, (n % 1000) * 9)
        os.fsync(fd)
        if os.pread(fd, 9, (n % 1000) * 9) != b'%08d\n' % n:
            log.write(f'error: line {n} read back wrong\n')
    except OSError as e:
        log.write(f'error in {open(sys.argv[3]).read().strip()}: {e}\n')
    worst = max(worst, time.monotonic() - t)
    n += 1
    time.sleep(0.02)
log.write(f'done {n} worst {worst:.2f}\n')
EOF
writer=$!
t_check "the writer holds its lock" wait_for 10 grep -q locked "$work/writer.log"

pid=$(main_pid)
echo crash >"$work/phase"
kill -9 "$pid"
t_check "kill -9: Restart= starts it again and it takes the mount over" \
	wait_for 60 serving_as "$pid" 1
t_check "the lock is still held after the crash" lock_held

pid=$(main_pid)
echo restart >"$work/phase"
t_check "systemctl restart" systemctl restart "$unit"
t_check "restart: the new daemon took the mount over (restart 2)" \
	wait_for 60 serving_as "$pid" 2
t_check "restart: the old daemon left the mount for it" \
	journal_has "systemd restarts this service"
t_check "the lock is still held after the restart" lock_held

pid=$(main_pid)
echo reload >"$work/phase"
t_check "systemctl reload" systemctl reload "$unit"
t_check "reload: a fresh process took the mount over and is the main one (restart 3)" \
	wait_for 60 serving_as "$pid" 3
t_check "reload: the old daemon is gone" wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
t_check "the lock is still held after the reload" lock_held

: >"$work/writer.log.stop"
# A writer that does not stop is stuck in a request nobody answers: say
# where, rather than let the guest time out.
writer_ended() {
	local state
	state=$(cut -d' ' -f3 "/proc/$writer/stat" 2>/dev/null) || return 0
	[[ -z $state || $state == Z ]]	# a zombie until waited for
}
if ! wait_for 30 writer_ended; then
	t_diag <<<"the writer is stuck: $(tr '\0' ' ' <"/proc/$writer/wchan" 2>/dev/null); waiting: $(cat /sys/fs/fuse/connections/*/waiting 2>/dev/null | tr '\n' ' ')"
	{ t_diag <"/proc/$writer/stack"; } 2>/dev/null || true
	journalctl -q -u "$unit" -o short-precise | tail -40 | t_diag
	t_check "the writer stops when asked (no request left unanswered)" false
	kill -9 "$writer" 2>/dev/null || true
fi
wait "$writer" || true
# A crash over io_uring: what the kernel was delivering to the dead rings
# ends with ECANCELED, and a zero-copied request they held with EIO (its
# pages were in the dead ring's buffer table); see docs/kernels.md.
t_check "the writer saw no error but the kernel's ECANCELED or EIO at the crash" \
	bash -c "! grep '^error in crash' '$work/writer.log' |
		grep -qv -e '\[Errno 125\]' -e '\[Errno 5\]'"
# A restart over io_uring: the old daemon exits as at a crash (its ring
# threads' exit cancels their idle entries, ring_guard.c), so what the
# kernel was delivering to them then ends with ECANCELED, and a zero-copied
# request they held with EIO, as at the crash; a reload overlaps the two
# daemons and loses nothing.
t_check "no error at the restart but the kernel's ECANCELED or EIO, none at the reload" \
	bash -c "! grep -e '^error in restart' -e '^error in reload' '$work/writer.log' |
		grep -qv -e '^error in restart: \[Errno 125\]' -e '^error in restart: \[Errno 5\]'"
t_check "no error before the crash" bash -c "! grep -q '^error in start' '$work/writer.log'"
t_diag <"$work/writer.log"

t_check "systemctl stop" systemctl stop "$unit"
t_check "stop: unmounted" bash -c "! findmnt -M '$mnt' >/dev/null"
t_check "stop: the daemon said why" journal_has "unmounting $mnt"
journalctl -q -u "$unit" -o short-precise | tail -40 | t_diag
rm -rf "$work"
t_done
