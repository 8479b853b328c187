#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount namespace an ops test makes for itself (lib.sh
# t_mount_namespace) keeps no uringfs mount of another run: a copy held
# there outlived that run's unmount (private propagation), and its daemon
# served the copy until the ops test ended, so the run saw "daemon did not
# exit within 10 s" on a machine shared by several runs.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_need_root
t_need_daemon
command -v unshare >/dev/null || t_skip_all "unshare is missing (Debian package util-linux)"

tmp=$(mktemp -d)
pid='' holder=''
cleanup() {
	findmnt -M "$tmp/mnt" >/dev/null && umount -l "$tmp/mnt"
	[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
	[[ -n $holder ]] && kill "$holder" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/src" "$tmp/mnt"
: >"$tmp/empty.conf"

"$daemon" -f --config "$tmp/empty.conf" "$tmp/src" "$tmp/mnt" >"$tmp/log" 2>&1 &
pid=$!
mounted() {
	findmnt -M "$tmp/mnt" >/dev/null
}
t_check "a mount of another run serves" wait_for 10 mounted
# An ops test starting meanwhile: its namespace lives 10 s.
cat >"$tmp/ops-test.sh" <<'TEST'
#!/bin/bash
set -euo pipefail
. "$1/lib.sh"
t_mount_namespace "$@"
if findmnt -M "$2" >/dev/null; then echo held; else echo dropped; fi >"$3"
exec sleep 10
TEST
bash "$tmp/ops-test.sh" "$srcdir/tests/ops" "$tmp/mnt" "$tmp/seen" >"$tmp/ops-test.out" 2>&1 &
holder=$!
if ! wait_for 10 test -s "$tmp/seen"; then
	# t_mount_namespace's needs (mount.fuse3, /usr/local/sbin) are missing here.
	t_skip_all "the ops test's namespace did not start: $(tr '\n' ' ' <"$tmp/ops-test.out")"
fi
t_check "the ops test's namespace keeps no copy of it ($(cat "$tmp/seen"))" \
	test "$(cat "$tmp/seen")" = dropped
umount "$tmp/mnt"
gone() {
	! kill -0 "$pid" 2>/dev/null
}
t_check "its daemon exits within 5 s of its unmount, while the ops test runs" wait_for 5 gone
if gone; then
	wait "$pid" && status=0 || status=$?
	pid=''
	t_check "exit status 0 ($status)" test "$status" = 0
fi
t_done
