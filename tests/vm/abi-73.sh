#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# daemon/fuse_abi.h defines what bookworm's 6.1 uapi headers lack.  Compile
# every daemon source against Linux 7.3's own headers (linux-libc-dev from
# experimental, fetched by fetch-kernel.sh): the guards must give way to the
# system definitions without a clash, and the header's "7.46" asserts, which
# bookworm never compiles, must hold against the real layouts.
#
# When the headers cannot be had, fetch-kernel.sh's cause is the skip's
# reason; under CI=true it is a failure (tests/lib/suite.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${UFS_SRCDIR:-$(cd "$here/../.." && pwd)}
cache=${UFS_VM_CACHE:-/var/cache/uringfs-vm}
cc=${CC:-cc}
# shellcheck source=../lib/suite.sh source-path=SCRIPTDIR
. "$here/../lib/suite.sh"

# Its stdout (the paths) is not TAP; its stderr goes to our log.
if ! ufs_run "$here/fetch-kernel.sh" "$cache" >/dev/null; then
	if ((ufs_status == 77)); then
		ufs_cannot_run "fetch-kernel.sh: $ufs_cause"
	fi
	echo "Bail out! fetch-kernel.sh failed with status $ufs_status: $ufs_cause"
	exit 1
fi
inc=$cache/libc-dev/usr/include
arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
read -ra pkg < <(pkg-config --cflags liburing fuse3 inih libsystemd)
flags=(-std=gnu11 -D_GNU_SOURCE -DSYSCONFDIR='"/etc"' -DPACKAGE_VERSION='"abi"'
       -Wall -Wextra -Werror -fsyntax-only
       -isystem "$inc" -isystem "$inc/$arch" -I"$src/daemon" "${pkg[@]}")

sources=("$src"/daemon/*.c)
echo "1..$((${#sources[@]} + 1))"
n=1
minor=$(printf '#include <linux/fuse.h>\nFUSE_KERNEL_MINOR_VERSION\n' |
	"$cc" -E -P -isystem "$inc" -isystem "$inc/$arch" - | tail -n 1)
if ((minor >= 46)); then
	echo "ok $n - the 7.3 headers speak FUSE 7.$minor (the 7.46 asserts compile)"
else
	echo "not ok $n - the 7.3 headers speak FUSE 7.$minor, not 7.46"
fi
for f in "${sources[@]}"; do
	n=$((n + 1))
	if out=$("$cc" "${flags[@]}" "$f" 2>&1); then
		echo "ok $n - ${f#"$src"/} against Linux 7.3 uapi"
	else
		echo "not ok $n - ${f#"$src"/} against Linux 7.3 uapi"
		mapfile -t lines <<<"$out"
		printf '# %s\n' "${lines[@]}"
	fi
done
