#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run mount tests while the kernel's caches are dropped again and again, as
# the suites beside them do (make -j2 check: t_export, t_options and others
# call ufs.drop_caches), which drops every mount's unused dentries, inodes
# and clean pages: a case that counts on the kernel keeping them must hold
# them (ufs.pinned) or measure again (ufs.undisturbed). Not part of make
# check: it slows down everything else on the machine. As root:
#
#   tests/mount/stress-drop.sh [-p SECONDS] [run.py arguments]
#   tests/mount/stress-drop.sh --variant uring t_inode_limit t_options
#
# -p: the pause between drops (default 0.02); each round writes 2 (dentries
# and inodes), pauses, writes 3 (and the page cache), pauses.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

pause=0.02
if [[ ${1:-} == -p ]]; then
	[[ $# -ge 2 && $2 =~ ^[0-9]*\.?[0-9]+$ ]] || {
		echo "stress-drop.sh: -p wants a number of seconds, not '${2:-}'" >&2
		exit 2
	}
	pause=$2
	shift 2
fi
[[ -w /proc/sys/vm/drop_caches ]] || {
	echo "stress-drop.sh: /proc/sys/vm/drop_caches is not writable (run as root)" >&2
	exit 2
}

(
	while :; do
		echo 2 >/proc/sys/vm/drop_caches
		sleep "$pause"
		echo 3 >/proc/sys/vm/drop_caches
		sleep "$pause"
	done
) &
dropper=$!
trap 'kill "$dropper" 2>/dev/null || true; wait "$dropper" 2>/dev/null || true' EXIT

/usr/bin/python3 "$here/run.py" "$@"
