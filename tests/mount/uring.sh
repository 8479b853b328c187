#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite over FUSE-over-io_uring (io_uring=on); the whole run is
# skipped unless /sys/module/fuse/parameters/enable_uring is Y.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

exec /usr/bin/python3 "$here/run.py" --variant uring
