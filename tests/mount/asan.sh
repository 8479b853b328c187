#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite against the ASan+UBSan build of the daemon (a debug build:
# UFS_BUG_ON checks its invariants), over io_uring, or over the variant given
# as $1 (asan-dev.sh: /dev/fuse).  A sanitizer report makes the daemon exit
# non-zero, which fails the case that ran it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# The million-file lookup runs once, in uring.sh; here 50,000 (still over RLIMIT_NOFILE).
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"
builddir=${UFS_BUILDDIR:-$here/../..}
export UFS_DAEMON=$builddir/daemon/uringfs-asan
if [[ ! -x $UFS_DAEMON ]]; then
	how=$("$builddir/config.status" --config 2>/dev/null || echo "no config.status")
	ufs_cannot_run "$UFS_DAEMON is not built (configure options: ${how:-none})"
fi
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=66
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Over io_uring, the transport with the most code, unless $1 names another
# variant. asan-dev.sh covers /dev/fuse, so when io_uring cannot be switched
# on this run skips with the cause, and under CI=true fails
# (tests/lib/suite.sh).
variant=${1:-uring}
if [[ $variant == uring ]]; then
	cause=$(ufs_uring_cause)
	[[ -z $cause ]] || ufs_cannot_run "the ASan daemon over FUSE-over-io_uring: $cause"
fi
exec /usr/bin/python3 "$here/run.py" --variant "$variant"
