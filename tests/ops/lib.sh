# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Sourced by the tests/ops/*.sh scripts: where things are, and TAP output
# (one "ok N - what" line per check, the plan "1..N" at the end).

srcdir=${UFS_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
builddir=${UFS_BUILDDIR:-$srcdir}
daemon=$builddir/daemon/uringfs
t_count=0

# t_result STATUS WHAT: report one check; STATUS 0 is a pass.
t_result() {
	t_count=$((t_count + 1))
	if [[ $1 == 0 ]]; then
		echo "ok $t_count - $2"
	else
		echo "not ok $t_count - $2"
	fi
}

# t_check WHAT COMMAND...: run COMMAND and report whether it succeeded.
t_check() {
	local what=$1 status=0
	shift
	"$@" || status=$?
	t_result "$status" "$what"
}

# t_skip WHAT REASON: a check that cannot run here.
t_skip() {
	t_count=$((t_count + 1))
	echo "ok $t_count - $1 # SKIP $2"
}

t_diag() {
	local line
	while IFS= read -r line; do
		echo "# $line"
	done
}

t_done() {
	echo "1..$t_count"
}

# t_skip_all REASON: nothing in this script can run here.
t_skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

# t_skip_ci WHAT REASON: a check that cannot run here.  A skip, except
# under CI (CI=true), where every test is expected to run: a failure there.
t_skip_ci() {
	if [[ ${CI:-} == true ]]; then
		t_result 1 "$1 (cannot run under CI: $2)"
	else
		t_skip "$1" "$2"
	fi
}

# t_cannot_run REASON: nothing in this script can run here (before any
# check); a skip, or a failure under CI as with t_skip_ci.
t_cannot_run() {
	if [[ ${CI:-} == true ]]; then
		t_result 1 "cannot run under CI: $1"
		t_done
		exit 0
	fi
	t_skip_all "$1"
}

t_need_root() {
	[[ $(id -u) == 0 ]] || t_skip_all "needs root"
}

t_need_daemon() {
	[[ -x $daemon ]] || t_skip_all "$daemon is not built"
}

# wait_for SECONDS COMMAND...: poll every 0.1 s until COMMAND succeeds.
wait_for() {
	local tries=$(($1 * 10))
	shift
	until "$@"; do
		tries=$((tries - 1))
		((tries > 0)) || return 1
		sleep 0.1
	done
}

# t_mount_namespace "$@": what the tests of mount(8)'s path need (root, the
# built daemon, /dev/fuse, mount.fuse3, /usr/local/sbin and /etc/fstab to
# cover), then the script again in a mount namespace of its own, so that
# its mounts and covers stay there.
t_mount_namespace() {
	local err
	t_need_root
	t_need_daemon
	[[ -e /dev/fuse ]] || t_skip_all "no /dev/fuse"
	command -v mount.fuse3 >/dev/null || t_skip_all "mount.fuse3 is missing (Debian package fuse3)"
	[[ -d /usr/local/sbin && -f /etc/fstab ]] || t_skip_all "no /usr/local/sbin or /etc/fstab to cover"
	if [[ -n ${UFS_OPS_OWN_NAMESPACE:-} ]]; then
		t_drop_inherited_mounts
		return 0
	fi
	# In a chroot whose / is not a mount point this fails with EINVAL.
	err=$(unshare --mount --propagation private true 2>&1) ||
		t_skip_all "cannot create a mount namespace: ${err:-unshare --mount failed}"
	UFS_OPS_OWN_NAMESPACE=1 exec unshare --mount --propagation private bash "$0" "$@"
}

# t_drop_inherited_mounts: a new mount namespace starts with a copy of
# every mount there was, other runs' uringfs mounts too.  Kept here, a copy
# outlives its run's unmount (private propagation: the connection lives on),
# and that run's daemon serves it until this test ends: "did not exit
# within 10 s" when several runs share a machine.  None is this test's yet.
t_drop_inherited_mounts() {
	local target targets
	# findmnt finds none (status 1) on a quiet machine.
	targets=$(findmnt -rn -t fuse.uringfs -o TARGET | sort -r) || true
	while read -r target; do
		[[ -z $target ]] || umount -l "$(printf '%b' "$target")" 2>/dev/null || true
	done <<<"$targets"
}

# t_cover_helpers DIR: inside the test's namespace, the built daemon covers
# /usr/local/sbin (mount(8) runs helpers through /bin/sh's default path)
# and DIR/run-mount covers /run/mount (libmount keeps x-* and _netdev
# options in its utab: a private one); makes DIR/src too.
t_cover_helpers() {
	local found
	mkdir "$1/src" "$1/sbin" "$1/run-mount"
	ln -s "$daemon" "$1/sbin/uringfs"
	mount --bind "$1/sbin" /usr/local/sbin
	mkdir -p /run/mount
	mount --bind "$1/run-mount" /run/mount
	found=$(env -i /bin/sh -c 'command -v uringfs' || true)
	[[ $found == /usr/local/sbin/uringfs ]] ||
		t_skip_all "/bin/sh without PATH finds uringfs at '$found', not /usr/local/sbin"
}
