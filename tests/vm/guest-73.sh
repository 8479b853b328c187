#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Linux 7.3 guest suite: the mount tests over ADD_QUEUE and buffer pools
# (the "guest" variant requires queue_mode bufpool), zero copy, and
# copy_file_range, in Debian experimental's 7.3 kernel under qemu.
#
# When the kernel or qemu cannot be had, the cause that fetch-kernel.sh or
# run-guest.sh gave is the skip's reason; under CI=true that is a failure
# (tests/lib/suite.sh), and so is a run in which the guest's mount suite
# skipped as a whole.
#
# Usage: tests/vm/guest-73.sh [VARIANT MODULE...]   (default: guest, the list below)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${UFS_BUILDDIR:-$(cd "$here/../.." && pwd)}
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"

# What only a 7.3 kernel shows, plus the foundation's cases that it must pass
# too, conformance and integrity under stress with zero copy, and an NFSv4.2
# backing (nfsd and the NFS client are modules of the 7.3 kernel).
variant=guest
modules=(t_mount t_ops t_locks t_escape t_user t_zerocopy t_passthrough t_copy t_posix t_stress t_nfs t_handover t_charge t_coherence t_coherence_policy t_readdir_cache t_options t_idmap)
if (($#)); then
	variant=$1
	shift
	modules=("$@")
fi

if ((EUID != 0)); then
	ufs_cannot_run "the guest suite runs as root (running as uid $EUID)"
fi
ufs_need "$here/fetch-kernel.sh"

# The guest's TAP goes to our stdout as it comes, and to a file to look at
# afterwards.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
UFS_EXPECT_QUEUE_MODE=bufpool ufs_run --tee "$out" "$here/run-guest.sh" \
	--share "$top" --cwd "$top" --timeout "${UFS_GUEST_TIMEOUT:-2100}" -- \
	/usr/bin/python3 "$top/tests/mount/run.py" --variant "$variant" "${modules[@]}" || true
ufs_guest_ended
# run.py in the guest decided the whole suite cannot run there.
if reason=$(sed -n 's/^1\.\.0 # SKIP //p' "$out") && [[ -n $reason ]] && ufs_under_ci; then
	echo "Bail out! CI=true and the guest's mount suite skipped as a whole: $reason"
	exit 1
fi
