# SPDX-License-Identifier: GPL-2.0-or-later
"""Confinement: nothing outside the source directory may be reached through
the mount, whatever symlinks, '..', renames and special files inside it do.

Layout of each case: TREE/src is mounted at M/mnt, next to TREE/outside
holding the secret.  M/mnt/.. is M, which has no 'outside', so a relative
symlink '../outside/secret' that the kernel resolves from the mount must
fail, while the same link resolved from the backing dir would reach the
secret.
"""

import contextlib
import errno
import os
import stat
import time

import ufs
from ufs import case, check, check_eq, check_errno, opened

E = errno
SECRET = b'SECRET-outside-the-source'
TIMEOUTS_OFF = 'entry_timeout=0,attr_timeout=0'


class Tree:
    def __init__(self, top):
        self.top = top
        self.src = f'{top}/src'
        self.outside = f'{top}/outside'
        self.secret = f'{top}/outside/secret'
        self.links = {
            'abs': self.secret,
            'rel': '../outside/secret',
            'c1': 'c2', 'c2': self.secret,            # chain to the absolute link
            'r1': 'r2', 'r2': '../outside/secret',    # chain to the relative link
            'marker': '../marker',                    # resolves next to the mount
            'inner': 'sub/../sub/file',               # stays inside
        }
        os.makedirs(f'{self.src}/sub')
        os.mkdir(self.outside)
        ufs.write_file(self.secret, SECRET)
        ufs.write_file(f'{top}/marker', b'SOURCE-SIDE')
        ufs.write_file(f'{self.src}/sub/file', b'inside')
        for name, target in self.links.items():
            os.symlink(target, f'{self.src}/{name}')


@contextlib.contextmanager
def escape_mount(opts=None):
    tree = Tree(ufs.scratch_dir('escape'))
    with ufs.Mount(source=tree.src, opts=opts) as m:
        ufs.write_file(f'{m.base}/marker', b'MOUNT-SIDE')
        check(not os.path.exists(f'{m.mnt}/../outside'), 'bad layout: mnt/../outside exists')
        yield m, tree


def check_nothing_outside(m, tree, extra_inodes=()):
    """Walk the mount without following links: no secret, no outside inode."""
    banned = {os.stat(tree.secret).st_ino, os.stat(tree.outside).st_ino, *extra_inodes}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(m.mnt, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            seen += 1
            check(st.st_ino not in banned, f'{path} is an inode from outside the source')
            if stat.S_ISREG(st.st_mode):
                check(SECRET not in ufs.read_file(path), f'{path} shows the secret')
    check(seen >= 5, f'the walk saw only {seen} entries under {m.mnt}')


@case(mount=False)
def symlinks_not_followed():
    with escape_mount() as (m, tree):
        for name, target in tree.links.items():
            path = f'{m.mnt}/{name}'
            check_errno(E.ELOOP, os.open, path, os.O_RDONLY | os.O_NOFOLLOW)
            st = os.lstat(path)
            check(stat.S_ISLNK(st.st_mode), f'lstat {name}: not a symlink ({oct(st.st_mode)})')
            check_eq(st.st_size, len(target), f'lstat {name}: st_size')
            ufs.check_same_stat(path, f'{tree.src}/{name}', follow=False)
            check_eq(os.readlink(path), target, f'readlink {name}')
            with opened(path, os.O_PATH | os.O_NOFOLLOW) as fd:
                check(stat.S_ISLNK(os.fstat(fd).st_mode), f'O_PATH|O_NOFOLLOW {name}')


@case(mount=False)
def symlinks_resolve_from_mount():
    with escape_mount() as (m, tree):
        for name in ('rel', 'r1'):
            check_errno(E.ENOENT, ufs.read_file, f'{m.mnt}/{name}',
                        what=f'following {name} (relative, must resolve from the mount)')
        check_eq(ufs.read_file(f'{m.mnt}/marker'), b'MOUNT-SIDE',
                 "'../marker' resolved from the mount")
        check_eq(ufs.read_file(f'{m.mnt}/inner'), b'inside', 'link inside the source')
        # An absolute target is resolved by the kernel in the caller's own
        # namespace, exactly as if the caller had opened that path.
        for name in ('abs', 'c1'):
            check_eq(ufs.read_file(f'{m.mnt}/{name}'), ufs.read_file(tree.secret),
                     f'{name}: absolute target, resolved by the caller')
        check_nothing_outside(m, tree)


@case(mount=False)
def dotdot_stays_in_kernel():
    with escape_mount() as (m, tree):
        base = os.stat(m.base)
        ufs.check_stat(os.stat(f'{m.mnt}/..'), base, 'mnt/..', ('st_dev', 'st_ino'))
        check_eq(sorted(os.listdir(f'{m.mnt}/.')), sorted(os.listdir(tree.src)), 'mnt/.')
        check('outside' not in os.listdir(f'{m.mnt}/..'), 'mnt/.. lists outside')
        with opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
            with opened('..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=root) as up:
                ufs.check_stat(os.fstat(up), base, "openat(root, '..')", ('st_dev', 'st_ino'))
            with opened('sub/../..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=root) as up:
                ufs.check_stat(os.fstat(up), base, "openat(root, 'sub/../..')",
                               ('st_dev', 'st_ino'))
        check_eq(sorted(os.listdir(f'{m.mnt}/sub/..')), sorted(os.listdir(m.mnt)), 'sub/..')
        check_nothing_outside(m, tree)


def read_loop(chan, path, want, seconds):
    """Child: read path over and over; count what came back."""
    counts = {'ok': 0, 'wrong data': 0}
    deadline = time.monotonic() + seconds
    chan.send('started')
    while time.monotonic() < deadline:
        got = ufs.outcome(ufs.read_file, path)
        key = ufs.errname(got.err) if got.err else 'ok' if got.value == want else 'wrong data'
        counts[key] = counts.get(key, 0) + 1
    return counts


def parents_of(fd, levels=4):
    """Listings of '..', '../..', ... from a directory fd until ENOENT."""
    listings = []
    rel = '..'
    for _ in range(levels):
        try:
            listings.append(sorted(os.listdir(os.path.join(f'/proc/self/fd/{fd}', rel))))
        except FileNotFoundError:
            break
        rel += '/..'
    return listings


@case(mount=False)
def dir_renamed_out():
    with escape_mount(TIMEOUTS_OFF) as (m, tree):
        os.makedirs(f'{tree.src}/mv/inner')
        ufs.write_file(f'{tree.src}/mv/inner/file', b'moved')
        path = f'{m.mnt}/mv/inner/file'
        check_eq(ufs.read_file(path), b'moved', 'file before the rename')
        inner = os.open(f'{m.mnt}/mv/inner', os.O_RDONLY | os.O_DIRECTORY)
        try:
            with ufs.Child(read_loop, path, b'moved', 1.0) as reader:
                reader.recv()
                flips, end = 0, time.monotonic() + 1.0
                while time.monotonic() < end:
                    os.rename(f'{tree.src}/mv', f'{tree.outside}/mv')
                    os.rename(f'{tree.outside}/mv', f'{tree.src}/mv')
                    flips += 1
                counts = reader.join()
            os.rename(f'{tree.src}/mv', f'{tree.outside}/mv')
            bad = {k: v for k, v in counts.items() if v and k not in ('ok', 'ENOENT')}
            check(not bad, f'reads during {flips} renames gave {bad} (all: {counts})')
            check_errno(E.ENOENT, os.stat, path, what='stat of the moved file')
            check_errno(E.ENOENT, os.stat, f'{m.mnt}/mv', what='stat of the moved dir')
            check('mv' not in os.listdir(m.mnt), 'the moved dir is still listed')
            # From a descriptor held inside the moved dir, '..' is the kernel's
            # parent dentry; it must never turn into the real parent (outside/).
            for listing in parents_of(inner):
                check('secret' not in listing, f"'..' from the moved dir lists {listing}")
        finally:
            os.close(inner)
        moved = os.stat(f'{tree.outside}/mv/inner/file').st_ino
        check_nothing_outside(m, tree, [moved])


def fifo_reader(chan, path):
    """Child: a blocking open for reading, then read what the writer sends."""
    chan.send('opening')
    with opened(path, os.O_RDONLY) as fd:
        return os.read(fd, 100)


@case(mount=False)
def fifo_kernel_side():
    with escape_mount() as (m, tree):
        os.mkfifo(f'{tree.src}/fifo')
        path = f'{m.mnt}/fifo'
        start = time.monotonic()
        with opened(path, os.O_RDONLY | os.O_NONBLOCK) as rfd:
            check(stat.S_ISFIFO(os.fstat(rfd).st_mode), 'not a FIFO')
            with opened(path, os.O_WRONLY | os.O_NONBLOCK) as wfd:
                os.write(wfd, b'ping')
            check_eq(os.read(rfd, 10), b'ping', 'data through the FIFO')
        check_errno(E.ENXIO, os.open, path, os.O_WRONLY | os.O_NONBLOCK,
                    what='O_WRONLY|O_NONBLOCK open without a reader')
        check(time.monotonic() - start < 2, 'non-blocking FIFO opens were slow')
        with ufs.Child(fifo_reader, path) as reader:
            reader.recv()
            time.sleep(0.2)  # the reader now blocks in open()
            t0 = time.monotonic()
            check_eq(ufs.read_file(f'{m.mnt}/sub/file'), b'inside', 'read while a FIFO open blocks')
            check(time.monotonic() - t0 < 1, 'the mount is slow while a FIFO open blocks')
            with opened(path, os.O_WRONLY) as wfd:
                os.write(wfd, b'pong')
            check_eq(reader.join(), b'pong', 'what the blocked reader got')


def open_device(chan, path):
    start = time.monotonic()
    got = ufs.outcome(_use_device, path)
    return str(got), time.monotonic() - start


def _use_device(path):
    with opened(path, os.O_RDWR) as fd:
        return os.write(fd, b'hello'), os.read(fd, 10)


@case(root=True, mount=False)
def device_node_open():
    # Observed (bind variant and FUSE alike): the kernel opens device nodes
    # itself (init_special_inode), so the daemon never gets an OPEN for one
    # and cannot block on it.  On a mount without 'nodev' the open reaches the
    # host's driver (here /dev/null's: write returns 5, read returns b'');
    # with 'nodev' the kernel refuses it with EACCES.  Either way it is fast,
    # and the mount keeps answering.
    with escape_mount() as (m, tree):
        os.mknod(f'{tree.src}/null', stat.S_IFCHR | 0o666, os.makedev(1, 3))
        nodev = 'nodev' in ufs.mount_entry(m.mnt).options
        with ufs.Child(open_device, f'{m.mnt}/null') as c:
            result, elapsed = c.join(timeout=10)
        check_eq(result, 'EACCES' if nodev else '(5, b\'\')',
                 f'open+write+read of a 1:3 device node (nodev={nodev})')
        check(elapsed < 2, f'using the device node took {elapsed:.1f} s')
        t0 = time.monotonic()
        check_eq(ufs.read_file(f'{m.mnt}/sub/file'), b'inside', 'read after the device open')
        check(time.monotonic() - t0 < 1, 'the mount is slow after the device open')
