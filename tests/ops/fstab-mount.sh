#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fstab-style mounts of the built daemon through mount(8) and mount.fuse3:
# "mount -t fuse.uringfs SOURCE MOUNTPOINT -o ...", "mount MOUNTPOINT" and
# "mount -a" from an fstab line, and mount.fuse3 run directly, with options
# only mount(8) and systemd care about; then umount, which must end the
# daemon with status 0.
#
# mount(8) runs its helpers without PATH, so mount.fuse3's /bin/sh finds
# uringfs on the shell's default path, /usr/local/sbin first.  The test runs
# in a mount namespace of its own, where a directory with a link to the
# built daemon covers /usr/local/sbin and a test fstab covers /etc/fstab;
# the rest of the system sees none of it.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_mount_namespace "$@"

tmp=$(mktemp -d)
reaper=''
daemon_pid=''
cleanup() {
	[[ -n $daemon_pid ]] && kill -KILL "$daemon_pid" 2>/dev/null
	[[ -n $reaper ]] && kill "$reaper" 2>/dev/null
	findmnt -M "$tmp/mnt" >/dev/null && umount -l "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/mnt"
t_cover_helpers "$tmp"

printf '[general]\nstats_file = ops-stats\n' >"$tmp/uringfs.conf"
opts=allow_other,_netdev,nofail,x-systemd.automount,config=$tmp/uringfs.conf
printf '%s %s fuse.uringfs defaults,%s 0 0\n' "$tmp/src" "$tmp/mnt" "$opts" >"$tmp/fstab"
mount --bind "$tmp/fstab" /etc/fstab

mounted_as_expected() {
	local line
	line=$(findmnt -n -M "$tmp/mnt" -o FSTYPE,SOURCE,FS-OPTIONS) || return 1
	echo "# $line"
	[[ $line =~ ^fuse\.uringfs\ +$tmp/src\ .*allow_other ]]
}

served_by_built_daemon() {
	[[ -n $daemon_pid && $(readlink "/proc/$daemon_pid/exe") == $(readlink -f "$daemon") ]]
}

writes_reach_source() {
	echo "$1" >"$tmp/mnt/$1" && cmp -s "$tmp/mnt/$1" "$tmp/src/$1"
}

# round WHAT COMMAND...: mount with COMMAND, use the mount, unmount.
round() {
	local what=$1 status=$tmp/status.$t_count code
	shift
	/usr/bin/python3 "$srcdir/tests/ops/reap.py" "$status" "$@" 2>"$tmp/stderr" &
	reaper=$!
	wait_for 30 grep -qs '^command ' "$status" || true
	code=$(awk '$1 == "command" { print $2 }' "$status" 2>/dev/null)
	t_result "${code:-1}" "$what: exits 0 (got ${code:-nothing})"
	[[ $code == 0 ]] || t_diag <"$tmp/stderr"
	# The detached daemon is now a child of the reaper.
	daemon_pid=$(pgrep -P "$reaper" || true)
	t_check "$what: a fuse.uringfs mount of the source with allow_other" mounted_as_expected
	t_check "$what: the built daemon serves it" served_by_built_daemon
	t_check "$what: files written through the mount reach the source" \
		writes_reach_source "file-$t_count"
	t_check "$what: the settings come from config= (control file ops-stats)" \
		grep -q '^transport ' "$tmp/mnt/ops-stats"
	t_check "$what: umount exits 0" umount "$tmp/mnt"
	t_check "$what: the daemon then exits 0" \
		wait_for 30 grep -qx "orphan ${daemon_pid:-none} 0" "$status"
	if ! grep -q '^orphan ' "$status" && [[ -n $daemon_pid ]]; then
		kill -KILL "$daemon_pid" 2>/dev/null || true
	fi
	wait "$reaper" || true
	reaper='' daemon_pid=''
	findmnt -M "$tmp/mnt" >/dev/null && umount -l "$tmp/mnt"
	return 0
}

round "mount -t fuse.uringfs" mount -t fuse.uringfs "$tmp/src" "$tmp/mnt" -o "$opts"
round "mount MOUNTPOINT (fstab)" mount "$tmp/mnt"
round "mount -a (fstab)" mount -a
# mount(8) drops _netdev, nofail and x-* itself; mount.fuse3 run directly
# passes x-* and comment= on, and the daemon must ignore them.
round "mount.fuse3 with x-* and comment=" env PATH="$tmp/sbin:$PATH" \
	mount.fuse3 "$tmp/src" "$tmp/mnt" -t fuse.uringfs -o "$opts,comment=ops"
t_done
