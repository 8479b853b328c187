#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kernel with IORING_OP_COPY_FILE_RANGE, tested in the guest: the op
# itself (cfr-probe), then copy_file_range through uringfs, which must pick
# the ring path and pass the copy module there (t_copy, ring mode included).
# TAP: cfr-probe's results, then the mount tests'.
#
# The kernel is built first, on its own, so that a failure says whether the
# build or the guest failed. When the source, a build tool or qemu cannot be
# had, the cause build-kernel.sh or run-guest.sh gave is the skip's reason;
# under CI=true it is a failure (tests/lib/suite.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}
out=${UFS_VM_CACHE:-/var/cache/uringfs-vm}/kernel-cfr
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"

if ((EUID != 0)); then
	ufs_cannot_run "the guest runs as root (running as uid $EUID)"
fi
if ! ufs_run "$here/build-kernel.sh" "$out" >&2; then
	if ((ufs_status == 77)); then
		ufs_cannot_run "build-kernel.sh: $ufs_cause"
	fi
	echo "Bail out! building the copy-op kernel failed (status $ufs_status): $ufs_cause"
	exit 1
fi
# run-cfr-guest.sh finds the kernel up to date and only boots it.
UFS_EXPECT_QUEUE_MODE=bufpool ufs_run "$here/run-cfr-guest.sh" \
	--timeout "${UFS_GUEST_TIMEOUT:-1200}" -- "$top/tests/kernel/cfr-suite.sh" || true
ufs_guest_ended
