#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite against the ASan+UBSan build of the daemon (a debug build:
# UFS_BUG_ON checks its invariants), over io_uring where the kernel allows
# it, or over the variant given as $1 (asan-dev.sh: /dev/fuse).  A sanitizer
# report makes the daemon exit non-zero, which fails the case that ran it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# The million-file lookup runs once, in uring.sh; here 50,000 (still over RLIMIT_NOFILE).
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

export UFS_DAEMON=${UFS_BUILDDIR:-$here/../..}/daemon/uringfs-asan
if [[ ! -x $UFS_DAEMON ]]; then
	echo "1..0 # SKIP $UFS_DAEMON not built (configure --disable-sanitizers)"
	exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=66
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
variant=${1:-}
if [[ -z $variant ]]; then
	variant=dev
	if [[ $(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null) == Y ]]; then
		variant=uring
	fi
fi
exec /usr/bin/python3 "$here/run.py" --variant "$variant"
