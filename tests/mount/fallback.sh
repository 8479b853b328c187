#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite with io_uring=auto on a kernel that does not offer
# FUSE-over-io_uring (enable_uring=N): the daemon must fall back to /dev/fuse.
# Makefile.am orders this after the io_uring runs, since the switch is global.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# The million-file lookup runs once, in uring.sh; here 50,000 (still over RLIMIT_NOFILE).
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}
param=/sys/module/fuse/parameters/enable_uring

if [[ ! -w $param ]]; then
	echo "1..0 # SKIP cannot switch $param (not root, or no FUSE-over-io_uring)"
	exit 0
fi
# Other runs rely on enable_uring=Y: switch it only while none holds the lock.
exec {lock}>/run/lock/uringfs-enable_uring
flock -x "$lock"
old=$(cat "$param")
trap 'echo "$old" >"$param"' EXIT
echo N >"$param"
/usr/bin/python3 "$here/run.py" --variant fallback
