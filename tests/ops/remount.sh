#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mount -o remount through mount(8) and mount.fuse3, as an operator types
# it: with an fstab line for the mount point and by hand (no fstab line:
# libmount then passes the mount table's options).  Each flag is turned on
# and off again, and each state is checked twice: in /proc/self/mountinfo
# and by what the mount does (EROFS, exec, symlinks, statvfs), the same
# daemon serving throughout.  libmount hands the helper the whole new list
# and drops a cancelling pair, so a flag turned off arrives as a missing
# word ("remount,exec" on a noexec mount names neither): the off half of
# each pair is what a daemon that starts from the mount's present flags
# gets wrong.  Then what must be refused, in one line, and what must be
# left alone (a file system mounted on top, a remount by an ordinary user).
# The daemon's settings and the kernel's FUSE options cannot change on a
# remount: each is refused unless it equals what the mount runs with (the
# fstab line's, passed back by mount(8) with every remount of it, are).
#
# Same namespace set-up as fstab-mount.sh: the built daemon covers
# /usr/local/sbin (mount(8) runs helpers without PATH), a test fstab
# covers /etc/fstab.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_mount_namespace "$@"
export LC_ALL=C

tmp=$(mktemp -d)
chmod 755 "$tmp"
mnt=$tmp/mnt
daemon_real=$(readlink -f "$daemon")
# The daemons this script started: theirs is the mount point $mnt.
our_daemons() {
	local p
	for p in $(pgrep -f -- "$mnt" || true); do
		[[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$daemon_real" ]] && echo "$p"
	done
	return 0
}
cleanup() {
	local p
	[[ -n ${holder:-} ]] && kill "$holder" 2>/dev/null
	for _ in 1 2 3; do findmnt -M "$mnt" >/dev/null && umount -l "$mnt"; done
	sleep 0.2
	for p in $(our_daemons); do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$mnt"
t_cover_helpers "$tmp"
: >"$tmp/fstab.empty"
# The fstab line carries daemon settings: mount(8) passes them back with
# every remount of it, and they are no change then.
printf '[fuse]\nnegative_timeout = 3\n' >"$tmp/uringfs.conf"
printf '%s %s fuse.uringfs defaults,allow_other,nosuid,entry_timeout=5,config=%s 0 0\n' \
	"$tmp/src" "$mnt" "$tmp/uringfs.conf" >"$tmp/fstab"
printf '#!/bin/sh\necho ran\n' >"$tmp/src/prog"
chmod 755 "$tmp/src/prog"
echo target >"$tmp/src/target"
ln -s target "$tmp/src/link"
err=$tmp/err

vfs_has() { # WORD: among the mount's VFS options (mountinfo field 6)
	findmnt -n -M "$mnt" -o VFS-OPTIONS | tr ',' '\n' | grep -qx "$1"
}
vfs_lacks() { ! vfs_has "$1"; }
fs_has() { # WORD: among the super block's options (mountinfo's last field)
	findmnt -n -M "$mnt" -o FS-OPTIONS | tr ',' '\n' | grep -qx "$1"
}
fs_lacks() { ! fs_has "$1"; }
statvfs_sync() { # ST_SYNCHRONOUS (16) in statvfs's f_flag: 1 or 0
	/usr/bin/python3 -c 'import os, sys; print(int(bool(os.statvfs(sys.argv[1]).f_flag & 16)))' "$mnt"
}
write_erofs() {
	! (echo x >"$mnt/while-ro") 2>"$err" && grep -q "Read-only file system" "$err"
}
write_works() { echo "$1" >"$mnt/w-$1" && cmp -s "$mnt/w-$1" "$tmp/src/w-$1"; }
reads_work() { [[ $(cat "$mnt/target") == target ]]; }
exec_refused() { ! "$mnt/prog" 2>"$err" && grep -q "Permission denied" "$err"; }
exec_works() { [[ $("$mnt/prog") == ran ]]; }
symlink_refused() { ! cat "$mnt/link" 2>"$err" >/dev/null && grep -q "Too many levels" "$err"; }
symlink_works() { [[ $(cat "$mnt/link") == target ]]; }
serving_pid() { our_daemons | head -n 1; }
one_line_naming() { # WORD: the refusal on stderr ($err) is one line naming WORD
	t_diag <"$err"
	[[ $(wc -l <"$err") == 1 ]] && grep -q "$1" "$err"
}
remount() { mount -o "remount,$1" "$mnt" 2>"$err" || { t_diag <"$err"; return 1; }; }

# toggles WHAT: every flag on and off again by mount -o remount.
toggles() {
	local what=$1 pid
	pid=$(serving_pid)
	t_check "$what: remount,ro exits 0" remount ro
	t_check "$what: ro in mountinfo" vfs_has ro
	t_check "$what: a write then fails with EROFS" write_erofs
	t_check "$what: the mount still serves reads" reads_work
	t_check "$what: remount,rw exits 0" remount rw
	t_check "$what: rw in mountinfo" vfs_has rw
	t_check "$what: writes work again" write_works "rw$t_count"

	t_check "$what: remount,noexec exits 0" remount noexec
	t_check "$what: noexec in mountinfo" vfs_has noexec
	t_check "$what: exec is then refused" exec_refused
	t_check "$what: remount,exec exits 0" remount exec
	t_check "$what: noexec gone from mountinfo" vfs_lacks noexec
	t_check "$what: exec works again" exec_works

	t_check "$what: remount,sync exits 0" remount sync
	t_check "$what: sync in mountinfo's super options" fs_has sync
	t_check "$what: statvfs says synchronous" [ "$(statvfs_sync)" = 1 ]
	t_check "$what: remount,async exits 0" remount async
	t_check "$what: sync gone from mountinfo" fs_lacks sync
	t_check "$what: statvfs says asynchronous" [ "$(statvfs_sync)" = 0 ]

	t_check "$what: remount,nosymfollow exits 0" remount nosymfollow
	t_check "$what: nosymfollow in mountinfo" vfs_has nosymfollow
	t_check "$what: a symlink is then not followed (ELOOP)" symlink_refused
	t_check "$what: remount,symfollow exits 0" remount symfollow
	t_check "$what: nosymfollow gone from mountinfo" vfs_lacks nosymfollow
	t_check "$what: symlinks are followed again" symlink_works

	t_check "$what: the same daemon serves throughout" [ "$(serving_pid)" = "$pid" ]
	t_check "$what: one uringfs mount at the mount point" \
		[ "$(findmnt -n -M "$mnt" -o FSTYPE | wc -l)" = 1 ]
}

# round WHAT FSTAB MOUNT-COMMAND...
round() {
	local what=$1
	mount --bind "$2" /etc/fstab
	shift 2
	t_check "$what: mounts" "$@"
	toggles "$what"
	t_check "$what: umount exits 0" umount "$mnt"
	umount /etc/fstab
}

round "by hand" "$tmp/fstab.empty" mount -t fuse.uringfs "$tmp/src" "$mnt" -o allow_other,nosuid
round "fstab line" "$tmp/fstab" mount "$mnt"

# A daemon setting a remount cannot apply is refused in one line naming it,
# the mount left as it was; one equal to the running daemon's (the fstab
# line's, the configuration file's) is no change.
refused() { ! mount -o "remount,$1" "$mnt" 2>"$err" && one_line_naming "$2"; }
still_rw() { vfs_has rw && vfs_has nosuid; }
mount --bind "$tmp/fstab" /etc/fstab
t_check "fstab line with settings: mounts" mount "$mnt"
t_check "remount,entry_timeout=7 is refused in one line" refused entry_timeout=7 entry_timeout
t_check "remount,ro,negative_timeout=4 is refused in one line" \
	refused ro,negative_timeout=4 negative_timeout=4
t_check "after the refusals the mount is still rw" still_rw
t_check "remount,entry_timeout=5 (the fstab line's) exits 0" remount entry_timeout=5
t_check "remount,negative_timeout=3 (the file's) exits 0" remount negative_timeout=3
t_check "remount,config= another file is refused in one line" \
	refused "config=$tmp/fstab.empty" config=
t_check "umount exits 0" umount "$mnt"
umount /etc/fstab

# What is refused, in one line, and what is left alone.
mount --bind "$tmp/fstab.empty" /etc/fstab
kept_nosymfollow() { remount ro && vfs_has ro && vfs_has nosymfollow; }
t_check "mount -o nosymfollow: mounts" \
	mount -t fuse.uringfs "$tmp/src" "$mnt" -o nosymfollow,nosuid,attr_timeout=2
t_check "mount -o nosymfollow: nosymfollow in mountinfo" vfs_has nosymfollow
t_check "mount -o nosymfollow: a symlink is not followed" symlink_refused
t_check "mount -o nosymfollow: remount,ro keeps it" kept_nosymfollow
t_check "remount,rw exits 0" remount rw

as_before() { vfs_has rw && vfs_has nosuid && vfs_has nosymfollow; }
t_check "remount,attr_timeout=2 (as mounted) exits 0" remount attr_timeout=2
t_check "remount,attr_timeout=3 is refused in one line" refused attr_timeout=3 attr_timeout
t_check "remount,ro,debug is refused in one line" refused ro,debug debug
t_check "remount,nodiratime is refused in one line" refused nodiratime nodiratime
t_check "remount,user_id=12345 is refused in one line" refused user_id=12345 user_id
t_check "remount,fsname=other is refused in one line" refused fsname=other fsname
take_over_refused() {
	! "$daemon" --take-over "$mnt" -o remount,ro 2>"$err" && one_line_naming remount
}
busy_refused() {
	! mount -o remount,ro "$mnt" 2>"$err" && t_diag <"$err" && grep -q "open for writing" "$err"
}
t_check "remount,dirsync is refused in one line" refused rw,dirsync dirsync
t_check "remount,strictatime is refused in one line" refused strictatime strictatime
t_check "remount,lazytime is refused in one line" refused lazytime lazytime
t_check "remount,suid of a nosuid mount is refused in one line" refused suid suid
t_check "remount,noatime is refused in one line" refused noatime noatime
t_check "after the refusals the flags are as they were" as_before
t_check "--take-over -o remount is refused in one line" take_over_refused
# A writer holds a file open (not this shell: a failed open must fail the
# check, not end the script).
sleep 60 >"$mnt/open-for-writing" 2>/dev/null &
holder=$!
writer_open() { [[ $(readlink "/proc/$holder/fd/1") == "$mnt/open-for-writing" ]]; }
t_check "a writer holds a file open on the mount" wait_for 30 writer_open
t_check "remount,ro with a file open for writing: refused, saying so" busy_refused
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
holder=''

# Remounting is root's (mount(2) needs CAP_SYS_ADMIN): the helper run by
# nobody changes nothing.
nobody_refused() {
	! setpriv --reuid=65534 --regid=65534 --clear-groups "$daemon" x "$mnt" \
		-o remount,ro 2>"$err" && t_diag <"$err"
}
t_check "the helper run by nobody: refused" nobody_refused
t_check "the helper run by nobody: the mount stays rw" vfs_has rw

# A file system mounted on top of the uringfs mount: the helper finds no
# uringfs mount at the path and leaves the top one alone.
helper_refused() { ! "$daemon" x "$mnt" -o remount,ro 2>"$err" && t_diag <"$err"; }
top_rw() { [[ $(findmnt -n -M "$mnt" -o FSTYPE,VFS-OPTIONS | tail -n 1) == tmpfs*rw,* ]]; }
mount -t tmpfs -o size=1m stacked "$mnt"
t_check "with a tmpfs mounted on top: the helper refuses" helper_refused
t_check "with a tmpfs mounted on top: the tmpfs stays rw" top_rw
umount "$mnt"
t_check "the uringfs mount under it stays rw" vfs_has rw
t_check "umount exits 0" umount "$mnt"

# Made by root through mount.fuse3 without nosuid (which adds dev,suid),
# with dirsync: the kernel keeps dirsync, so each remount passes it back.
ro_dirsync_kept() { remount ro && vfs_has ro && fs_has dirsync; }
nodev_set() { remount rw,nodev && vfs_has nodev; }
nodev_cleared() { remount dev && vfs_lacks nodev; }
nosuid_set() { remount nosuid && vfs_has nosuid; }
t_check "mount -o dirsync (suid, dev): mounts" \
	mount -t fuse.uringfs "$tmp/src" "$mnt" -o dirsync
t_check "mount -o dirsync: remount,ro exits 0, dirsync kept" ro_dirsync_kept
t_check "remount,rw,nodev exits 0: nodev in mountinfo" nodev_set
t_check "remount,dev exits 0: nodev gone" nodev_cleared
t_check "remount,nosuid of a suid mount exits 0: nosuid in mountinfo" nosuid_set
t_check "umount exits 0" umount "$mnt"
umount /etc/fstab
t_done
