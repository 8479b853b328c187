#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite over io_uring with io_path=copy: the daemon copies every
# byte, as on a kernel without FUSE passthrough.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# The million-file lookup runs once, in uring.sh; here 50,000 (still over RLIMIT_NOFILE).
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

# run.py would skip the whole run with enable_uring=N; say why it is N, and
# under CI fail (tests/lib/suite.sh).
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"
cause=$(ufs_uring_cause)
[[ -z $cause ]] || ufs_cannot_run "FUSE-over-io_uring: $cause"

exec /usr/bin/python3 "$here/run.py" --variant uring-copy
