#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite over io_uring with one worker serving every CPU's queue and
# a single entry per queue.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# enable_uring is global: fallback.sh takes this lock exclusively to switch it off.
exec {lock}>/run/lock/uringfs-enable_uring
flock -s "$lock"

exec /usr/bin/python3 "$here/run.py" --variant uring-small
