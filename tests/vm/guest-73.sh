#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Linux 7.3 guest suite: the mount tests over ADD_QUEUE and buffer pools
# (the "guest" variant requires queue_mode bufpool), zero copy, and
# copy_file_range, in Debian experimental's 7.3 kernel under qemu.
#
# Skips (visibly, TAP "1..0 # SKIP") only when qemu or the kernel download
# is unavailable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}

# What only a 7.3 kernel shows, plus the foundation's cases that it must pass
# too, and conformance and integrity under stress with zero copy.
modules=(t_mount t_ops t_locks t_escape t_user t_zerocopy t_copy t_posix t_stress)

skip() {
	echo "1..0 # SKIP $*"
	exit 0
}

if ((EUID != 0)); then
	skip "the guest suite runs as root"
fi
status=0
"$here/fetch-kernel.sh" >&2 || status=$?
if ((status == 77)); then
	skip "Debian experimental's Linux 7.3 is not reachable"
elif ((status != 0)); then
	echo "Bail out! fetch-kernel.sh failed with status $status"
	exit 1
fi

status=0
UFS_EXPECT_QUEUE_MODE=bufpool "$here/run-guest.sh" --share "$top" --cwd "$top" \
	--timeout "${UFS_GUEST_TIMEOUT:-2100}" -- \
	/usr/bin/python3 "$top/tests/mount/run.py" --variant guest "${modules[@]}" || status=$?
case $status in
0) ;;
77) skip "qemu or the guest kernel is unavailable" ;;
*)
	echo "Bail out! the guest ended with status $status"
	exit 1
	;;
esac
