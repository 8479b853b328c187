# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel's cached directory listings (cache_readdir): with long entry
and attribute timeouts an OPENDIR reply carries FOPEN_CACHE_DIR and
FOPEN_KEEP_CACHE, so a directory listed again while it is unchanged costs
no READDIR or READDIRPLUS at all (fs/fuse/readdir.c fuse_readdir_cached),
counted with the daemon's own op_readdir + op_readdirplus.  And the cached
listing stays right: a change made through the mount shows at once (the
kernel's i_version), one made beside it once attr_timeout has run out
(FUSE_AUTO_INVAL_DATA refreshes the directory's mtime before a listing).
"""

import os
import time

import ufs
from ufs import case, check_eq

LONG = 'entry_timeout=86400,attr_timeout=86400,negative_timeout=86400'
FILES = 40


def readdirs(m):
    s = m.stats()
    return s['op_readdir'] + s['op_readdirplus']


def fill(path, count=FILES):
    os.makedirs(path)
    for i in range(count):
        ufs.write_file(f'{path}/f{i:03d}', b'x')


@case(opts=LONG)
def listing_again_sends_no_readdir(m):
    """The second listing of an unchanged directory is the kernel's alone."""
    ufs.require_daemon('counts the daemon\'s requests')
    fill(f'{m.src}/again')
    first = sorted(os.listdir(f'{m.mnt}/again'))
    check_eq(first, sorted(os.listdir(f'{m.src}/again')), 'the first listing')
    # Another suite's drop_caches (or reclaim) may take the cached pages
    # between two listings: then the kernel reads once and caches again.
    # A daemon whose listings are never kept costs READDIRs every time.
    sent = []
    for _ in range(3):
        before = readdirs(m)
        for _ in range(3):
            check_eq(sorted(os.listdir(f'{m.mnt}/again')), first, 'a listing from the cache')
        sent.append(readdirs(m) - before)
        if not sent[-1]:
            break
    check_eq(sent[-1], 0, f'READDIR + READDIRPLUS for three listings again (tries: {sent})')


@case(opts=LONG)
def changes_through_the_mount_show(m):
    """Create, unlink, rename and mkdir through the mount between two
    listings: the second lists what the backing directory holds."""
    ufs.require_daemon()
    fill(f'{m.src}/mine', 8)
    d = f'{m.mnt}/mine'
    os.listdir(d)
    ufs.write_file(f'{d}/new', b'y')
    os.unlink(f'{d}/f000')
    os.rename(f'{d}/f001', f'{d}/renamed')
    os.mkdir(f'{d}/sub')
    check_eq(sorted(os.listdir(d)), sorted(os.listdir(f'{m.src}/mine')),
             'the listing after changes through the mount')


@case(opts='cache_readdir=on,entry_timeout=1,attr_timeout=1')
def change_beside_the_mount_shows_after_attr_timeout(m):
    """A name created in SOURCE directly shows in the cached listing once
    attr_timeout (1 s here) has run out, as a lookup of it would."""
    ufs.require_daemon()
    fill(f'{m.src}/beside', 8)
    d = f'{m.mnt}/beside'
    os.listdir(d)
    os.listdir(d)
    ufs.write_file(f'{m.src}/beside/outside', b'z')
    os.unlink(f'{m.src}/beside/f003')
    want = sorted(os.listdir(f'{m.src}/beside'))
    deadline = time.monotonic() + 10
    got = sorted(os.listdir(d))
    while got != want and time.monotonic() < deadline:
        time.sleep(0.2)
        got = sorted(os.listdir(d))
    check_eq(got, want, 'the listing 10 s after a change made in SOURCE')


@case(opts='cache_readdir=off,' + LONG)
def cache_readdir_off_reads_every_time(m):
    """cache_readdir=off: every listing asks the daemon, as before."""
    ufs.require_daemon('counts the daemon\'s requests')
    fill(f'{m.src}/off', 4)
    os.listdir(f'{m.mnt}/off')
    before = readdirs(m)
    os.listdir(f'{m.mnt}/off')
    check_eq(readdirs(m) - before > 0, True, 'the listing again asks the daemon')


@case(opts=LONG)
def no_opendir_nor_releasedir(m):
    """With cached listings the kernel opens directories without OPENDIR
    (the daemon answered ENOSYS once) and closes them without RELEASEDIR."""
    ufs.require_daemon('counts the daemon\'s requests')
    fill(f'{m.src}/noopen', 4)
    os.listdir(f'{m.mnt}/noopen')
    s = m.stats()
    before = s['op_opendir'] + s['op_releasedir']
    for _ in range(3):
        os.listdir(f'{m.mnt}/noopen')
        fd = os.open(f'{m.mnt}/noopen', os.O_RDONLY | os.O_DIRECTORY)
        os.close(fd)
    time.sleep(0.2)     # a RELEASEDIR would be sent in the background
    s = m.stats()
    check_eq(s['op_opendir'] + s['op_releasedir'] - before, 0,
             'OPENDIR + RELEASEDIR for three listings and an open')


@case(opts=LONG)
def large_listing_in_many_requests(m):
    """A directory that takes many READDIRs (each opens the directory again
    and seeks to the kernel's cookie) lists every name once, first from the
    daemon and then from the kernel's cache."""
    ufs.require_daemon()
    d = f'{m.src}/large'
    os.makedirs(d)
    names = [f'a-rather-long-name-to-fill-the-reply-{i:05d}' for i in range(3000)]
    for n in names:
        os.close(os.open(f'{d}/{n}', os.O_CREAT | os.O_WRONLY, 0o644))
    for what in ('first listing', 'listing again'):
        got = os.listdir(f'{m.mnt}/large')
        check_eq(len(got), len(names), f'{what}: number of names')
        check_eq(sorted(got), sorted(names), f'{what}: the names')


@case(opts=LONG)
def open_directory_calls(m):
    """What a directory's descriptor does without an OPENDIR: fsync,
    fchmod, the attribute ioctl (lsattr -d) as natively, and a listing of
    a directory removed while open is empty."""
    import fcntl
    import struct
    ufs.require_daemon()
    FS_IOC_GETFLAGS = 0x80086601
    results = {}
    for side, root in (('mount', m.mnt), ('native', m.ref)):
        os.makedirs(f'{root}/calls/gone')
        fd = os.open(f'{root}/calls', os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
            os.fchmod(fd, 0o750)
            try:
                buf = fcntl.ioctl(fd, FS_IOC_GETFLAGS, struct.pack('l', 0))
                flags = struct.unpack('l', buf)[0]
            except OSError as e:
                flags = f'errno {e.errno}'
            mode = os.stat(f'{root}/calls').st_mode & 0o7777
        finally:
            os.close(fd)
        fd = os.open(f'{root}/calls/gone', os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rmdir(f'{root}/calls/gone')
            listing = os.listdir(fd)
        finally:
            os.close(fd)
        results[side] = (flags, mode, listing)
    check_eq(results['mount'], results['native'],
             '(GETFLAGS, mode after fchmod, listing of a removed directory)')
