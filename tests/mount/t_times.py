# SPDX-License-Identifier: GPL-2.0-or-later
"""Times after writes through a shared mapping (fstests generic/080 and
generic/215): stat right after the mapping wrote must show mtime and ctime
moved, as natively, whether the mapping was unmapped without a close,
msync'ed, or closed, on the passthrough path and on the copy path.

A passed-through mapping writes the backing file behind the kernel's FUSE
inode; the daemon replies the attributes of an inode with writable
passthrough opens uncacheable and drops what was cached at the first one.
The mounts cache attributes for a minute (attr_timeout=60), so a daemon
that let the kernel keep the attributes from before the write fails at
once rather than only when a stat comes within a second.
"""

import mmap
import os
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq

LONG_CACHE = 'attr_timeout=60'
# What `stat -c %Y` asks for: no atime, which the kernel marks stale at mmap.
TIMES = sx.STATX_MTIME | sx.STATX_CTIME
OLD = 1_000_000_000          # 2001: an mtime any write moves
SIZE = 2 * 4096


def times(path):
    st = sx.statx(path, TIMES)
    return st['mtime'], st['ctime']


def mapped_write(path, how):
    """Cache path's attributes, write through a shared mapping, and ask for
    its times as `how` says; returns ((mtime, ctime) before, after, the
    mapped bytes read back)."""
    ufs.write_file(path, b'\0' * SIZE)
    os.utime(path, (OLD, OLD))
    before = times(path)
    # ctime has the kernel's coarse clock: a tick apart at least.
    time.sleep(0.05)
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            mm[4096:4100] = b'map!'
            if how == 'msync':
                mm.flush()
                after = times(path)
        finally:
            mm.close()
        if how == 'munmap':
            after = times(path)
    finally:
        os.close(fd)
    if how == 'close':
        after = times(path)
    return before, after, ufs.read_file(path)[4096:4100]


def moved(before, after):
    return {'mtime moved': after[0] > before[0], 'ctime moved': after[1] > before[1]}


def same_as_native(m, name, how):
    got_b, got_a, got_data = mapped_write(f'{m.mnt}/{name}', how)
    want_b, want_a, want_data = mapped_write(f'{m.ref}/{name}', how)
    check_eq(got_data, want_data, f'{how}: the mapped write, read back')
    check_eq(moved(got_b, got_a), moved(want_b, want_a),
             f'{how}: times after the mapped write (mount: (mtime, ctime) {got_b} -> {got_a})')
    check(all(moved(want_b, want_a).values()), f'{how}: natively both times moved')
    # And what the mount says is the backing file's own.
    check_eq(times(f'{m.mnt}/{name}'), times(f'{m.src}/{name}'),
             f'{how}: the mount\'s times are the backing file\'s')


@case(opts=LONG_CACHE)
def mapped_write_then_munmap(m):
    """Unmapped but still open: stat sees the mapping's write (generic/080)."""
    same_as_native(m, 'munmap', 'munmap')


@case(opts=LONG_CACHE)
def mapped_write_then_msync(m):
    """msync, still mapped: stat sees the write (generic/215)."""
    same_as_native(m, 'msync', 'msync')


@case(opts=LONG_CACHE)
def mapped_write_then_close(m):
    """Unmapped and closed: stat sees the write."""
    same_as_native(m, 'close', 'close')


@case(mount=False)
def mapped_write_copy_path():
    """The same through the daemon's copy path (io_path=copy), where the
    kernel writes the mapping's pages back to the daemon."""
    ufs.require_daemon('io_path is the daemon\'s')
    opts = LONG_CACHE
    if 'io_path=' not in (ufs.config().opts or ''):
        opts = ufs.join_opts(opts, 'io_path=copy')
    with ufs.Mount(opts=opts) as m:
        for how in ('munmap', 'msync', 'close'):
            same_as_native(m, f'copy-{how}', how)
