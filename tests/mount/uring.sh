#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite over FUSE-over-io_uring (io_uring=on); the whole run is
# skipped (under CI=true: failed) unless /sys/module/fuse/parameters/enable_uring
# is Y or can be switched to Y.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

# run.py would skip the whole run with enable_uring=N; say why it is N, and
# under CI fail (tests/lib/suite.sh).
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"
cause=$(ufs_uring_cause)
[[ -z $cause ]] || ufs_cannot_run "FUSE-over-io_uring: $cause"

# uring-small.sh and uring-copy.sh run this script with their variants.
exec /usr/bin/python3 "$here/run.py" --variant "${1:-uring}"
