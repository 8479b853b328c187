# SPDX-License-Identifier: GPL-2.0-or-later
"""File handles through the mount after the kernel forgot the inode.

name_to_handle_at on the mount gives a FUSE handle: the node id and its
generation.  After drop_caches the kernel has sent FORGET for the inode,
and open_by_handle_at (or an NFS server exporting the mount) sends
LOOKUP(nodeid, ".") and, to reconnect a directory, LOOKUP(nodeid, "..").
The daemon keeps a record of each forgotten node id (export_inodes) so
these resolve to the same file for as long as it exists, and give ESTALE
once it is gone.
"""

import contextlib
import errno
import os
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq

E = errno


def export_mount(opts=None):
    ufs.require_daemon('needs the daemon\'s export records')
    return ufs.Mount(opts=ufs.join_opts('entry_timeout=0,attr_timeout=0', opts))


def forget_all(m, want, what, timeout=10.0):
    """drop_caches until the daemon has want more records than before
    (FORGET is sent after the kernel evicts the inode, asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        ufs.drop_caches(2)
        st = m.stats()
        got = st['export_nodeids'] + st['export_expired']
        if got >= want or time.monotonic() > deadline:
            check(got >= want, f'{what}: {got} node ids forgotten, want {want} ({st["inodes"]} inodes'
                  ' still known)')
            return st
        time.sleep(0.1)


@contextlib.contextmanager
def by_handle(m, handle, flags=os.O_RDONLY):
    with ufs.opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
        fd = sx.open_by_handle_at(root, handle, flags)
    try:
        yield fd
    finally:
        os.close(fd)


def open_error(m, handle):
    with ufs.opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
        got = ufs.outcome(sx.open_by_handle_at, root, handle, os.O_PATH)
    if got.err is None:
        os.close(got.value)
    return got.err


@case(mount=False, root=True)
def handles_survive_drop_caches():
    """A file, a directory and a file in it, each opened by its handle after the
    kernel forgot all three: the same contents, and the directory is
    reconnected under its name (LOOKUP "..", then its name in the parent)."""
    with export_mount() as m:
        data = ufs.pattern(70000, seed=11)
        ufs.write_file(f'{m.mnt}/f', data)
        os.makedirs(f'{m.mnt}/d/e')
        ufs.write_file(f'{m.mnt}/d/e/g', b'deep')
        handles = {n: sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('f', 'd/e', 'd/e/g')}
        before = m.stats()
        forget_all(m, 4, 'f, d, d/e and d/e/g')
        with by_handle(m, handles['f']) as fd:
            check_eq(os.pread(fd, len(data) + 1, 0), data, 'f read by its handle')
        with by_handle(m, handles['d/e/g']) as fd:
            check_eq(os.read(fd, 10), b'deep', 'd/e/g read by its handle')
        with by_handle(m, handles['d/e'], os.O_RDONLY | os.O_DIRECTORY) as fd:
            check_eq(os.listdir(fd), ['g'], 'd/e listed by its handle')
            check_eq(os.readlink(f'/proc/self/fd/{fd}'), f'{m.mnt}/d/e',
                     'the directory reconnected under its path')
        st = m.stats()
        check(st['export_revived'] - before['export_revived'] >= 3,
              f'export_revived moved by {st["export_revived"] - before["export_revived"]}')
        check_eq(st['export_stale'], 0, 'export_stale')


@case(mount=False, root=True)
def a_file_keeps_its_node_id():
    """Looked up by name again after FORGET, a file gets its old node id back,
    so an old handle and a new one are the same and name one inode: a
    write through one is read through the other."""
    with export_mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'0123456789')
        old = sx.name_to_handle_at(f'{m.mnt}/f')
        forget_all(m, 1, 'f')
        with ufs.opened(f'{m.mnt}/f', os.O_RDWR) as by_name:
            check_eq(sx.name_to_handle_at(f'{m.mnt}/f')[:2], old[:2],
                     'the handle after a lookup by name')
            with by_handle(m, old, os.O_RDWR) as fd:
                check_eq(os.fstat(fd).st_ino, os.fstat(by_name).st_ino, 'inode by handle')
                os.pwrite(fd, b'AB', 2)
                check_eq(os.pread(by_name, 10, 0), b'01AB456789', 'read by name')


@case(mount=False, root=True)
def gone_files_give_estale():
    """A handle of a file removed (through the mount or on the backing side)
    gives ESTALE, counted in export_stale; a file created since does not take
    its place."""
    with export_mount() as m:
        for n in ('a', 'b'):
            ufs.write_file(f'{m.mnt}/{n}', n.encode())
        ha, hb = (sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('a', 'b'))
        os.unlink(f'{m.mnt}/a')
        forget_all(m, 2, 'a and b')
        os.unlink(f'{m.src}/b')
        ufs.write_file(f'{m.src}/b', b'new b')
        check_eq(ufs.errname(open_error(m, ha)), 'ESTALE', 'the handle of a, unlinked')
        check_eq(ufs.errname(open_error(m, hb)), 'ESTALE', 'the handle of b, replaced')
        check_eq(ufs.read_file(f'{m.mnt}/b'), b'new b', 'the new b by name')
        check(m.stats()['export_stale'] >= 1, 'export_stale counts the gone files')


def stale_by_handle(m, handle, what):
    """The handle of something moved out of the source must not open
    (ESTALE, or ENOENT from the kernel's reconnect); returns how far
    export_revived and export_stale moved meanwhile."""
    before = m.stats()
    err = open_error(m, handle)
    check(err in (E.ESTALE, E.ENOENT), f'the handle of {what} moved out gave {ufs.errname(err)}')
    after = m.stats()
    return (after['export_revived'] - before['export_revived'],
            after['export_stale'] - before['export_stale'])


@case(mount=False, root=True)
def a_directory_moved_out_is_stale():
    """A directory moved out of the source on the backing side is not brought
    back by its handle: ESTALE, not the directory outside."""
    with export_mount() as m:
        os.makedirs(f'{m.src}/d')
        ufs.write_file(f'{m.src}/d/secret', b'moved out')
        h = sx.name_to_handle_at(f'{m.mnt}/d')
        forget_all(m, 1, 'd')
        os.rename(f'{m.src}/d', f'{m.tmp}/d')
        moved = stale_by_handle(m, h, 'a directory')
        # The daemon refused it itself, not only the kernel's reconnect ("..").
        check_eq(moved, (0, 1), 'export_revived and export_stale moved by')


@case(mount=False, root=True)
def a_file_moved_out_is_stale():
    """A file moved out of the source on the backing side after the kernel
    forgot it is not brought back by its handle (the daemon looks for it in
    the directory where it was last seen); one renamed through the mount to
    another directory still is, and one moved back in comes back too."""
    with export_mount() as m:
        os.makedirs(f'{m.src}/d')
        os.makedirs(f'{m.mnt}/e')
        ufs.write_file(f'{m.src}/d/secret', b'moved out')
        ufs.write_file(f'{m.mnt}/d/kept', b'renamed inside')
        out = sx.name_to_handle_at(f'{m.mnt}/d/secret')
        kept = sx.name_to_handle_at(f'{m.mnt}/d/kept')
        os.rename(f'{m.mnt}/d/kept', f'{m.mnt}/e/kept')
        forget_all(m, 4, 'd, e and two files')
        os.rename(f'{m.src}/d/secret', f'{m.tmp}/secret')
        check_eq(stale_by_handle(m, out, 'a file')[1], 1, 'export_stale moved by')
        with by_handle(m, kept) as fd:
            check_eq(os.read(fd, 64), b'renamed inside', 'a file renamed through the mount')
        # Back in, under a name the daemon finds: a lookup gives it a new node id.
        os.rename(f'{m.tmp}/secret', f'{m.src}/d/secret')
        check_eq(ufs.read_file(f'{m.mnt}/d/secret'), b'moved out', 'the file moved back in')


@case(mount=False, root=True)
def the_limit_drops_the_oldest():
    """export_inodes=2: of five forgotten files two handles still open, three
    give ESTALE, and export_expired says so."""
    with export_mount('export_inodes=2') as m:
        names = [f'f{i}' for i in range(5)]
        for n in names:
            ufs.write_file(f'{m.mnt}/{n}', n.encode())
        handles = [sx.name_to_handle_at(f'{m.mnt}/{n}') for n in names]
        st = forget_all(m, 5, 'five files')
        check_eq((st['export_nodeids'], st['export_expired']), (2, 3), 'records kept, dropped')
        errs = [open_error(m, h) for h in handles]
        check_eq(sorted(ufs.errname(e) if e else 'ok' for e in errs), ['ESTALE'] * 3 + ['ok'] * 2,
                 'handles after the limit')


@case(mount=False, root=True)
def export_inodes_zero_keeps_none():
    """export_inodes=0: no records, and a forgotten handle gives ESTALE."""
    with export_mount('export_inodes=0') as m:
        ufs.write_file(f'{m.mnt}/f', b'f')
        h = sx.name_to_handle_at(f'{m.mnt}/f')
        # Counted with f held: another suite's drop_caches may have had it
        # forgotten already, and then the count would never go below.
        with ufs.pinned([f'{m.mnt}/f']):
            before = m.stats()['inodes']
        deadline = time.monotonic() + 10
        while m.stats()['inodes'] >= before and time.monotonic() < deadline:
            ufs.drop_caches(2)
            time.sleep(0.1)
        check(m.stats()['inodes'] < before, 'the kernel forgot f')
        check_eq(m.stats()['export_nodeids'], 0, 'export_nodeids')
        check_eq(ufs.errname(open_error(m, h)), 'ESTALE', 'the handle of f')
