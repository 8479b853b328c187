#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The systemd unit's sandbox leaves the daemon doing what it does without
# it.  No systemd is needed: tests/ops/unit-filter installs the unit's
# SystemCallFilter= and SystemCallErrorNumber= (each @group expanded by
# systemd-analyze syscall-filter, systemd's own tables) with no_new_privs,
# setpriv applies its CapabilityBoundingSet=, and the daemon runs under
# both.  The mount suite's core runs once with the plain daemon and once
# with that one, on each transport.  A check fails when the filter refuses
# any call at all (the helper records each), or when the daemon logs a
# warning or an error that the same modules do not give without the
# filter ("file handles unusable", a transport falling back, ...).  Last,
# ExecStopPost= must clean up after a killed daemon under the same sandbox.
#
# UFS_UNIT=FILE tests another unit (by default the generated one);
# UFS_UNIT_MODULES the mount modules (default: the core below).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

unit=${UFS_UNIT:-$builddir/systemd/uringfs@.service}
helper=$builddir/tests/ops/unit-filter
# The core: operations, locks, copies, mounting and transports, and
# confinement (file handles, xattrs, devices); about 40 s a run, four runs.
read -r -a modules <<<"${UFS_UNIT_MODULES:-t_ops t_locks t_copy t_mount t_confine}"
param=/sys/module/fuse/parameters/enable_uring

[[ $(id -u) == 0 ]] || t_cannot_run "needs root (the mount suite mounts)"
[[ -x $daemon ]] || t_cannot_run "$daemon is not built"
[[ -x $helper ]] || t_cannot_run "$helper is not built (make check builds it)"
[[ -f $unit ]] || t_cannot_run "$unit is not generated (make all)"
[[ -e /dev/fuse ]] || t_cannot_run "no /dev/fuse"
command -v systemd-analyze >/dev/null ||
	t_cannot_run "systemd-analyze is missing (Debian package systemd)"
command -v setpriv >/dev/null || t_cannot_run "setpriv is missing (Debian package util-linux)"

tmp=$(mktemp -d)
daemon_pid=''
cleanup() {
	local m
	if [[ -n $daemon_pid ]]; then
		kill -KILL "$daemon_pid" 2>/dev/null || true
	fi
	# Whatever a broken run left mounted below $tmp, and nothing else.
	{ findmnt -rn -o TARGET | grep "^$tmp/" || true; } | sort -r | while read -r m; do
		umount -l "$m" || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 0755 "$tmp"

# systemd's group tables, as the unit's @groups are expanded by systemd.
# (It also says on stderr that it cannot list the kernel's calls.)
systemd-analyze syscall-filter >"$tmp/groups" 2>"$tmp/groups.err" ||
	{ t_diag <"$tmp/groups.err"; t_result 1 "systemd-analyze syscall-filter"; t_done; exit 0; }

# CapabilityBoundingSet= as setpriv --bounding-set takes it.
bounding_set() {
	awk '/^\[/ { svc = ($0 == "[Service]") }
	     svc && sub(/^CapabilityBoundingSet=/, "") {
		if ($0 == "") { n = 0; next }
		if ($0 ~ /^~/) { print "~"; exit }
		for (i = 1; i <= NF; i++) caps[n++] = tolower(substr($i, 5))
	     }
	     END { s = "-all"; for (i = 0; i < n; i++) s = s ",+" caps[i]; print s }' "$unit"
}
bset=$(bounding_set)
if [[ $bset == "~" ]]; then
	t_result 1 "CapabilityBoundingSet=~... (a deny list) is not modelled here"
	t_done
	exit 0
fi

# The sandboxed daemon: same pid (setpriv and the helper exec), same
# arguments.  Refused calls go to $tmp/refused.
record=$tmp/refused
: >"$record"
sandbox=(setpriv "--bounding-set=$bset" -- "$helper" --groups "$tmp/groups"
	--record "$record" "$unit")
printf '#!/bin/sh\nexec' >"$tmp/uringfs-unit"
printf ' %q' "${sandbox[@]}" "$daemon" >>"$tmp/uringfs-unit"
# shellcheck disable=SC2016 # "$@" is for the wrapper
printf ' "$@"\n' >>"$tmp/uringfs-unit"
chmod 0755 "$tmp/uringfs-unit"

# The recorder must see a refused call, and the caller get the unit's errno.
# reboot(2) is in no group the unit names; bad magic makes it harmless.
refusal_seen() {
	local got
	got=$("${sandbox[@]}" /usr/bin/python3 -c 'import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print(libc.syscall(169, 0, 0, 0, 0), ctypes.get_errno())') || return 1
	wait_for 5 grep -q '^reboot ' "$record" || return 1
	echo "# reboot returned: $got; recorded: $(cat "$record")"
	[[ $got == "-1 1" ]]
}
t_check "the helper's filter refuses reboot with EPERM and records it" refusal_seen
: >"$record"

allowed() {
	"$helper" --groups "$tmp/groups" --print "$unit" >"$tmp/allowed" &&
		grep -qx io_uring_setup "$tmp/allowed" && grep -qx mount "$tmp/allowed"
}
t_check "the unit's filter expands to a list with io_uring_setup and mount" allowed

# log_lines DIR: the daemon's warnings and errors in a kept run directory,
# numbers and paths taken out, one of each.
# The hold budget's warning depends on how a crowd of copies falls on the
# queues (t_copy), not on the filter: left out.
log_lines() {
	find "$1" -path '*/m-*/log' -exec cat {} + 2>/dev/null |
		grep -E '^uringfs: (warn|error): ' | grep -v 'entries hold long waits and copies' |
		sed -E 's|/[^ ]*|PATH|g; s/[0-9]+/N/g' | sort -u || true
}

# passed TAP: the names of the cases that passed.
passed() {
	sed -nE '/# SKIP/d; s/^ok [0-9]+ - //p' "$1" | sort
}

# suite NAME VARIANT DAEMON: the core, its run directory kept.  A daemon
# run as an ordinary user is no daemon the unit starts (the unit runs it as
# root; only root can enter the sandbox: setpriv's bounding set, the filter
# helper in the build tree): such cases skip in both runs, saying so.
suite() {
	mkdir -p "$tmp/$1"
	UFS_DAEMON_ROOT_ONLY="the unit runs its daemon as root; a daemon of an ordinary user is not what $(basename "$unit") starts (tests/ops/unit-seccomp.sh)" \
		UFS_DAEMON=$3 UFS_KEEP=1 TMPDIR=$tmp/$1 \
		/usr/bin/python3 "$srcdir/tests/mount/run.py" --variant "$2" "${modules[@]}" \
		>"$tmp/$1.tap" 2>&1 || true
	grep '^mount-tests:' "$tmp/$1.tap" | t_diag || true
}

# rerun VARIANT CASE ("t_module: name"): the case once more under the
# filter, alone; true if it passes.  A timing case (a probe's p99 behind a
# crowd of copies) can lose to a loaded machine, the 7.3 guest's emulation
# running beside it, not to the filter: what the filter refuses is
# nothing_refused's to find, whatever the timing.
rerun() {
	local module=${2%%: *} name=${2#*: }

	mkdir -p "$tmp/rerun"
	UFS_DAEMON_ROOT_ONLY="the unit runs its daemon as root (tests/ops/unit-seccomp.sh)" \
		UFS_DAEMON=$tmp/uringfs-unit TMPDIR=$tmp/rerun \
		/usr/bin/python3 "$srcdir/tests/mount/run.py" --variant "$1" "$module" -k "$name" \
		>"$tmp/rerun.tap" 2>&1
	passed "$tmp/rerun.tap" | grep -qxF -- "$2"
}

# same_passes VARIANT: every case that passes without the filter passes
# under it (and some do), if need be when run again alone.
same_passes() {
	local lost lost_case still=''
	lost=$(comm -23 <(passed "$tmp/$1-plain.tap") <(passed "$tmp/$1-unit.tap"))
	while IFS= read -r lost_case; do
		[[ -n $lost_case ]] || continue
		if rerun "$1" "$lost_case"; then
			t_diag <<<"passed under the filter when run again alone: $lost_case"
		else
			still+="$lost_case"$'\n'
		fi
	done <<<"$lost"
	lost=${still%$'\n'}
	if [[ -n $lost ]]; then
		t_diag <<<"passed without the filter only: $lost"
		awk '/^not ok/ { p = 1; print; next } /^ok/ { p = 0 } p && /^#/' \
			"$tmp/$1-unit.tap" | head -n 40 | t_diag
		return 1
	fi
	grep -q '^ok ' "$tmp/$1-unit.tap"
}

# nothing_refused: the record is empty; else each call and caller, counted,
# and the first refusal in full.
nothing_refused() {
	[[ -s $record ]] || return 0
	awk '{ print $1, $3 }' "$record" | sort | uniq -c | t_diag
	head -n 1 "$record" | t_diag
	return 1
}

# no_new_log_lines VARIANT
no_new_log_lines() {
	local new
	new=$(comm -13 <(log_lines "$tmp/$1-plain") <(log_lines "$tmp/$1-unit"))
	if [[ -n $new ]]; then
		t_diag <<<"$new"
		return 1
	fi
}

# transport VARIANT: the core without the filter, then with it.
transport() {
	: >"$record"
	suite "$1-plain" "$1" "$daemon"
	suite "$1-unit" "$1" "$tmp/uringfs-unit"
	t_check "$1: the daemons ran in the sandbox" \
		grep -rqs --include=log "^# $tmp/uringfs-unit " "$tmp/$1-unit"
	t_check "$1: every case that passes without the filter passes under it" same_passes "$1"
	t_check "$1: the filter refused no call" nothing_refused
	t_check "$1: no warning or error that the daemon does not log without the filter" \
		no_new_log_lines "$1"
	rm -rf "$tmp/$1-plain" "$tmp/$1-unit"
}

# enable_uring is global: fallback.sh takes this lock exclusively to switch
# it off; the io_uring runs hold it shared.  The /dev/fuse runs too: some of
# their cases depend on it (t_mount: ring_setup_failure_serves_dev), and the
# two runs compared must see the same setting.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

transport dev

if [[ -w $param && $(cat "$param") != Y ]]; then
	echo Y >"$param" # what scripts/test-setup does
fi
if [[ -r $param && $(cat "$param") == Y ]]; then
	transport uring
else
	t_skip_ci "uring: the suite over io_uring" \
		"no FUSE-over-io_uring: $param is missing or cannot be set to Y"
fi
flock -u "$lock"

# After a crash (no systemd, so no file descriptor store), the next start
# on that mount point takes the dead mount away and serves, in the same
# sandbox: umount2 is in the unit's @mount.
start_over_dead_mount() {
	local mnt=$tmp/crash/mnt
	mkdir -p "$tmp/crash/src" "$mnt"
	: >"$tmp/crash/empty.conf"
	echo data >"$tmp/crash/src/f"
	"$tmp/uringfs-unit" -f --config "$tmp/crash/empty.conf" "$tmp/crash/src" "$mnt" \
		2>"$tmp/crash/log" &
	daemon_pid=$!
	# Killed once it serves (its take-over socket listens from then on):
	# a daemon killed in the middle of its start leaves a mount that a
	# start does not take away on its own (uringfs(8), FILES).
	wait_for 10 grep -q 'serving' "$tmp/crash/log" || { t_diag <"$tmp/crash/log"; return 1; }
	kill -KILL "$daemon_pid"
	{ wait "$daemon_pid"; } 2>/dev/null || true # not bash's "Killed" line
	findmnt -M "$mnt" >/dev/null || return 1
	"$tmp/uringfs-unit" -f --config "$tmp/crash/empty.conf" "$tmp/crash/src" "$mnt" \
		2>"$tmp/crash/log2" &
	daemon_pid=$!
	wait_for 10 grep -q 'serving' "$tmp/crash/log2" || { t_diag <"$tmp/crash/log2"; return 1; }
	grep -q 'no daemon serves' "$tmp/crash/log2" && [[ $(cat "$mnt/f") == data ]] || return 1
	fusermount3 -u "$mnt" && wait "$daemon_pid"
	daemon_pid=''
	! findmnt -M "$mnt" >/dev/null && nothing_refused
}
: >"$record"
t_check "a start over a killed daemon's dead mount takes it away, under the sandbox" \
	start_over_dead_mount
t_done
