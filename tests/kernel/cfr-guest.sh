#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kernel with IORING_OP_COPY_FILE_RANGE, tested in the guest: the op
# itself (cfr-probe), then copy_file_range through uringfs, which must pick
# the ring path and pass the copy module there (t_copy, ring mode included).
# TAP: cfr-probe's results, then the mount tests'.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}

skip() {
	echo "1..0 # SKIP $*"
	exit 0
}

if ((EUID != 0)); then
	skip "the guest runs as root"
fi
status=0
UFS_EXPECT_QUEUE_MODE=bufpool "$here/run-cfr-guest.sh" --timeout "${UFS_GUEST_TIMEOUT:-1200}" -- \
	"$top/tests/kernel/cfr-suite.sh" || status=$?
case $status in
0) ;;
77) skip "the copy kernel cannot be built here or qemu is missing" ;;
*)
	echo "Bail out! the guest ended with status $status"
	exit 1
	;;
esac
