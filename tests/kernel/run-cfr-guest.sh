#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-cfr-guest.sh - run a command in the test guest booted with our kernel
# that has IORING_OP_COPY_FILE_RANGE (built, or reused, by build-kernel.sh)
#
# Usage: tests/kernel/run-cfr-guest.sh [run-guest.sh options] [-- COMMAND [ARGS...]]
#
# Default command: tests/kernel/cfr-probe.  The build tree is shared with
# the guest.  Exit status: the command's; 77 when the kernel cannot be
# built here (no archive) or qemu is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}
out=${UFS_VM_CACHE:-/var/cache/uringfs-vm}/kernel-cfr

status=0
"$here/build-kernel.sh" "$out" >&2 || status=$?
if ((status != 0)); then
	exit "$status"
fi

opts=()
while (($#)) && [[ $1 != -- ]]; do
	opts+=("$1")
	shift
done
if (($#)); then
	shift
fi
if ((!$#)); then
	set -- "$top/tests/kernel/cfr-probe"
fi
exec "$top/tests/vm/run-guest.sh" --kernel "$out/bzImage" --share "$top" --cwd "$top" \
	"${opts[@]}" -- "$@"
