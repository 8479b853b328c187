#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Inside the copy-op guest: one TAP stream made of the op's own checks and
# the mount tests of copy_file_range over the ring.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

probe=$("$top/tests/kernel/cfr-probe")
mounts=$(UFS_EXPECT_CFR=ring /usr/bin/python3 "$top/tests/mount/run.py" --variant guest t_copy)

# A stream that skipped as a whole ("1..0 # SKIP why") would vanish from the
# plan below without a trace. This kernel and guest are ours, built for
# exactly these tests, so whatever kept a part from running is something we
# can fix: it is a failure, with the part's own reason.
not_run() {
	sed -n "s/^1\.\.0 # SKIP \(.*\)/not ok - $1 did not run: \1/p"
}

# Renumber both streams into one plan.
{
	printf '%s\n' "$probe" | not_run cfr-probe
	printf '%s\n' "$probe" | sed -n 's/^\(not \)\{0,1\}ok [0-9]* /&/p;s/^#/#/p' |
		sed 's/^\(\(not \)\{0,1\}ok\) [0-9]* - /\1 - cfr-probe: /'
	printf '%s\n' "$mounts" | not_run "the mount tests (t_copy)"
	printf '%s\n' "$mounts" | grep -v '^1\.\.' | sed 's/^\(\(not \)\{0,1\}ok\) [0-9]* - /\1 - /'
} | awk '/^(not )?ok / { n++; sub(/^(not )?ok /, "&" n " ") } { print } END { print "1.." n }'
