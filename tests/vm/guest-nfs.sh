#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The core modules with every backing directory on NFSv4.2: the guest-nfs
# variant (tests/lib/ufs_nfs.py) in the Linux 7.3 guest, whose kernel has
# nfsd and the NFS client; this host's has no nfsd. What NFS itself does
# differently is asked of the backing by each case, never skipped over
# (docs/operations.md, "In front of NFS").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/guest-73.sh" guest-nfs t_ops t_diff t_locks t_escape
