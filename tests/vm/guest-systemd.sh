#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# uringfs@.service under a real systemd: the host's systemd booted as PID 1
# in the Linux 7.3 guest (run-guest.sh --systemd) runs systemd-unit.sh,
# which starts the unit, crashes the daemon, restarts, reloads and stops it
# while a process writes to a file it keeps open.
#
# When the kernel, qemu or systemd cannot be had, that is the skip's reason;
# under CI=true it is a failure (tests/lib/suite.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"

if ((EUID != 0)); then
	ufs_cannot_run "the guest runs as root (running as uid $EUID)"
fi
ufs_need "$here/fetch-kernel.sh"
ufs_run "$here/run-guest.sh" --systemd --share "$top" --cwd "$top" \
	--timeout "${UFS_GUEST_TIMEOUT:-900}" -- "$here/systemd-unit.sh" || true
ufs_guest_ended
