# SPDX-License-Identifier: GPL-2.0-or-later
"""Many extended attributes on one file (fstests generic/020): the mount
holds exactly as many as the backing file system does natively and fails
the next one with the same errno, and listxattr's limit (XATTR_LIST_MAX,
64 KiB of names) is the kernel's, through the mount as natively.

ext4 keeps a file's extended attributes in the inode's spare space plus one
block, so it refuses the next one with ENOSPC after about a hundred short
ones (generic/020's run stopped at 110): that is ext4's limit, the same
natively. tmpfs keeps any number, so there listxattr's own limit shows.
"""

import errno
import os
import subprocess

import ufs
from ufs import case, check, check_eq

CAP = 1000                   # enough to pass ext4's block; a bound elsewhere
LIST_MAX = 65536             # XATTR_LIST_MAX (include/uapi/linux/limits.h)


def fill(path, count, name=lambda i: f'user.attribute_{i}', value=lambda i: b'value_%d' % i):
    """Set attributes 0, 1, ... until one fails or count are set; returns
    (how many were set, the errno that stopped it or None)."""
    ufs.write_file(path)
    for i in range(count):
        try:
            os.setxattr(path, name(i), value(i))
        except OSError as e:
            return i, errno.errorcode[e.errno]
    return count, None


def listed(path):
    o = ufs.outcome(os.listxattr, path)
    return sorted(o.value) if o.err is None else ufs.errname(o.err)


@case
def many_xattrs(m):
    """As many attributes as natively (generic/020), the same errno for the
    next one, and the same list."""
    got = fill(f'{m.mnt}/many', CAP)
    want = fill(f'{m.ref}/many', CAP)
    print(f'# natively on this file system: {want[0]} attributes, then {want[1]}')
    check_eq(got, want, 'attributes set through the mount, and what stopped them')
    check_eq(listed(f'{m.mnt}/many'), listed(f'{m.ref}/many'), 'the list')
    check_eq(os.getxattr(f'{m.mnt}/many', f'user.attribute_{got[0] - 1}'),
             b'value_%d' % (got[0] - 1), 'the last one read back')


@case(mount=False, root=True)
def xattr_list_size_limit():
    """On tmpfs (no limit of its own): a list of names just under 64 KiB is
    returned whole through the mount; one name more and listxattr fails
    E2BIG, as natively (fs/xattr.c: listxattr)."""
    base = ufs.scratch_dir('xattr-tmpfs')
    src, ref = f'{base}/src', f'{base}/ref'
    for d in (src, ref):
        os.makedirs(d)
        r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', d],
                           capture_output=True, text=True)
        if r.returncode:
            raise ufs.Skip(f'mount -t tmpfs: {r.stderr.strip()}')
    try:
        with ufs.Mount(source=src) as m:
            # 246-byte names with their NULs: 266 fit in 64 KiB, 267 do not.
            name = lambda i: 'user.' + f'{i:0240d}'  # noqa: E731
            fits = LIST_MAX // 246
            for d in (m.mnt, ref):
                check_eq(fill(f'{d}/f', fits, name, lambda i: b'v'), (fits, None),
                         f'{fits} long names in {d}')
            got, want = listed(f'{m.mnt}/f'), listed(f'{ref}/f')
            check(isinstance(want, list) and len(want) == fits,
                  f'natively {fits} names listed: {want if isinstance(want, str) else len(want)}')
            check_eq(got, want, f'{fits} names ({fits * 246} bytes) listed through the mount')
            for d in (m.mnt, ref):
                os.setxattr(f'{d}/f', name(fits), b'v')
            check_eq(listed(f'{m.mnt}/f'), listed(f'{ref}/f'),
                     f'{fits + 1} names ({(fits + 1) * 246} bytes): listxattr')
            check_eq(listed(f'{ref}/f'), 'E2BIG', 'natively')
    finally:
        for d in (src, ref):
            subprocess.run(['umount', '-l', d], capture_output=True)
