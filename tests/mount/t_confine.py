# SPDX-License-Identifier: GPL-2.0-or-later
"""Confinement attempts, one case each: every attempt must fail safely (or
act on what is inside the source), and a canary outside the source must be
untouched afterwards: same contents, mode, owner, link count, mtime, ctime
and xattrs, and nothing new next to it.

Layout of each case: TOP/src is mounted at M/mnt; TOP/outside holds the
canary.  M has no 'outside', so '../outside/...' resolved from the mount
side finds nothing, while the same link resolved on the backing side would
reach the canary.

Not here: names containing '/', empty names and names over NAME_MAX never
come out of a system call; the decoder's handling of such requests is
covered by tests/unit/test-decode.c.
"""

import contextlib
import shutil
import errno
import os
import stat
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, check_errno, opened

E = errno
CANARY = b'CANARY: must never change or be read through the mount'
CANARY_TIME = 1_000_000_000_123_456_789
OTHER = 12345
O_PATH_FLAG = 0o10000000      # O_PATH as /proc/PID/fdinfo shows flags (octal)


class Tree:
    """TOP/src (the source) and TOP/outside (the canary's directory)."""

    def __init__(self, top):
        self.top = top
        self.src = f'{top}/src'
        self.outside = f'{top}/outside'
        self.canary = f'{self.outside}/canary'
        os.makedirs(f'{self.src}/sub/deeper')
        os.mkdir(self.outside)
        ufs.write_file(f'{self.src}/inside', b'inside')
        ufs.write_file(self.canary, CANARY)
        os.chmod(self.canary, 0o644)
        os.setxattr(self.canary, 'user.canary', b'bird')
        os.utime(self.canary, ns=(CANARY_TIME, CANARY_TIME))
        os.mkdir(f'{self.outside}/cdir')
        # absolute and relative links that reach the canary from the backing side
        os.symlink(self.canary, f'{self.src}/abs')
        os.symlink('../../outside/canary', f'{self.src}/sub/rel')
        os.symlink(f'{self.outside}/cdir', f'{self.src}/absdir')
        self.before = self.state()

    def state(self):
        """Everything about the canary and the outside directory that an
        escape could change (atime left out: reading it is not a change)."""
        st = os.lstat(self.canary)
        attrs = sorted((n, os.getxattr(self.canary, n, follow_symlinks=False))
                       for n in os.listxattr(self.canary, follow_symlinks=False))
        listing = sorted(os.path.relpath(os.path.join(d, n), self.outside)
                         for d, dirs, files in os.walk(self.outside) for n in dirs + files)
        dst = os.lstat(self.outside)
        return {'contents': ufs.read_file(self.canary), 'mode': oct(st.st_mode),
                'owner': (st.st_uid, st.st_gid), 'nlink': st.st_nlink, 'size': st.st_size,
                'ino': st.st_ino, 'mtime': st.st_mtime_ns, 'ctime': st.st_ctime_ns,
                'xattrs': attrs, 'outside': listing,
                'outside dir': (oct(dst.st_mode), dst.st_mtime_ns, dst.st_ctime_ns)}

    def check_canary(self):
        now = self.state()
        changed = {k: (self.before[k], now[k]) for k in now if now[k] != self.before[k]}
        check(not changed, f'the canary outside the source changed: {changed}')


@contextlib.contextmanager
def confined(opts=None, env=None, own_fs=False):
    """A fresh tree mounted at M/mnt; the canary is checked on the way out.
    With own_fs the tree is on a tmpfs of its own: the daemon's memory of
    directories inside the source lasts until a directory moves anywhere on
    the source's file system, so cases that count its work must not share
    one with other tests moving directories (CI runs suites side by side)."""
    with contextlib.ExitStack() as stack:
        top = (stack.enter_context(ufs.tmpfs('confine', 'size=64m')) if own_fs
               else ufs.scratch_dir('confine'))
        tree = Tree(top)
        with ufs.Mount(source=tree.src, opts=opts, env=env) as m:
            check(not os.path.exists(f'{m.mnt}/../outside'), 'bad layout: mnt/../outside exists')
            yield m, tree
            tree.check_canary()
        tree.check_canary()


def daemon_fds_on(m, path):
    """[(fd, 'path' or 'open')] for the daemon's descriptors on path: 'path'
    for O_PATH ones (which cannot do I/O), 'open' for the others."""
    if m.proc is None:
        return []
    found = []
    for fd in os.listdir(f'/proc/{m.pid}/fd'):
        try:
            target = os.readlink(f'/proc/{m.pid}/fd/{fd}')
            with open(f'/proc/{m.pid}/fdinfo/{fd}') as f:
                info = dict(line.split(':', 1) for line in f if ':' in line)
        except FileNotFoundError:
            continue
        if target == path:
            flags = int(info['flags'].strip(), 8)
            found.append((int(fd), 'path' if flags & O_PATH_FLAG else 'open'))
    return found


def check_only_o_path(m, path, what):
    fds = daemon_fds_on(m, path)
    check(all(kind == 'path' for _, kind in fds),
          f'{what}: the daemon has {path} open for I/O: {fds}')
    return fds


# --- symlinks out of the source ---------------------------------------------

@case(mount=False)
def symlink_open_nofollow():
    """Opening the links with O_NOFOLLOW (read, write+truncate, create) fails
    with ELOOP; O_PATH|O_NOFOLLOW gets the link itself."""
    with confined() as (m, t):
        for name in ('abs', 'sub/rel', 'absdir'):
            path = f'{m.mnt}/{name}'
            for flags in (os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_RDWR | os.O_CREAT,
                          os.O_RDONLY | os.O_DIRECTORY):
                check_errno((E.ELOOP, E.ENOTDIR), os.open, path, flags | os.O_NOFOLLOW,
                            what=f'open({name}, {flags:#o}|O_NOFOLLOW)')
            check_errno(E.EEXIST, os.open, path, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                        what=f'O_CREAT|O_EXCL on {name}')
            with opened(path, os.O_PATH | os.O_NOFOLLOW) as fd:
                st = os.fstat(fd)
                check(stat.S_ISLNK(st.st_mode), f'O_PATH|O_NOFOLLOW {name} is not the link')
                ufs.check_stat(st, os.lstat(f'{t.src}/{name}'), f'fstat of {name}')


@case(mount=False)
def symlink_relative_follow():
    """Following the relative link resolves from the mount side, where
    '../../outside' does not exist: reads and O_CREAT writes give ENOENT."""
    with confined() as (m, t):
        path = f'{m.mnt}/sub/rel'
        check_errno(E.ENOENT, ufs.read_file, path, what='read through the relative link')
        check_errno(E.ENOENT, ufs.write_file, path, b'overwritten',
                    what='create through the relative link')
        check_errno(E.ENOENT, os.truncate, path, 0, what='truncate through the relative link')
        check_errno(E.ENOENT, os.chmod, path, 0o777, what='chmod through the relative link')
        check_eq(os.readlink(path), '../../outside/canary', 'readlink')


@case(root=True, mount=False)
def symlink_lchown():
    """lchown and fchownat(O_PATH|O_NOFOLLOW, AT_EMPTY_PATH) change the links,
    never the canary."""
    with confined() as (m, t):
        os.chown(f'{m.mnt}/abs', OTHER, OTHER, follow_symlinks=False)
        check_eq(os.lstat(f'{t.src}/abs')[4:6], (OTHER, OTHER), 'backing owner of the link')
        with opened(f'{m.mnt}/sub/rel', os.O_PATH | os.O_NOFOLLOW) as fd:
            sx_fchown_empty(fd, OTHER + 1, OTHER + 1)
        check_eq(os.lstat(f'{t.src}/sub/rel')[4:6], (OTHER + 1, OTHER + 1),
                 'backing owner of the relative link')
        ufs.check_same_stat(f'{m.mnt}/abs', f'{t.src}/abs', follow=False)


def sx_fchown_empty(fd, uid, gid):
    """fchownat(fd, "", uid, gid, AT_EMPTY_PATH): on an O_PATH link descriptor."""
    ret = sx.libc.fchownat(fd, b'', uid, gid, sx.AT_EMPTY_PATH | sx.AT_SYMLINK_NOFOLLOW)
    sx._check(ret, 'fchownat')


@case(mount=False)
def symlink_utimes_nofollow():
    """utimensat(AT_SYMLINK_NOFOLLOW) sets the link's times, not the canary's."""
    with confined() as (m, t):
        times = (1_500_000_000_000_000_000, 1_600_000_000_000_000_000)
        for name in ('abs', 'sub/rel'):
            os.utime(f'{m.mnt}/{name}', ns=times, follow_symlinks=False)
            st = os.lstat(f'{t.src}/{name}')
            check_eq((st.st_atime_ns, st.st_mtime_ns), times, f'backing times of {name}')


@case(mount=False)
def symlink_xattr():
    """user.* attributes cannot go on a symlink (EPERM, as locally); the
    canary's user.canary is not listed through the link without following."""
    with confined() as (m, t):
        ref = f'{ufs.scratch_dir("ref")}/link'
        os.symlink(t.canary, ref)
        for name in ('abs', 'sub/rel'):
            path = f'{m.mnt}/{name}'
            got = ufs.outcome(os.setxattr, path, 'user.evil', b'1', follow_symlinks=False)
            want = ufs.outcome(os.setxattr, ref, 'user.evil', b'1', follow_symlinks=False)
            ufs.check_same(got, want, f'lsetxattr user.evil on {name}')
            check('user.canary' not in os.listxattr(path, follow_symlinks=False),
                  f'llistxattr of {name} shows the canary\'s attribute')
            check_errno(E.ENODATA, os.getxattr, path, 'user.canary', follow_symlinks=False,
                        what=f'lgetxattr user.canary on {name}')


@case(root=True, mount=False)
def symlink_trusted_xattr():
    """With xattr_trusted=allow, trusted.* set with lsetxattr lands on the
    link itself (root may put trusted.* on a symlink), never on the canary."""
    with confined('xattr_trusted=allow') as (m, t):
        for name in ('abs', 'sub/rel'):
            os.setxattr(f'{m.mnt}/{name}', 'trusted.mark', b'link', follow_symlinks=False)
            check_eq(os.getxattr(f'{t.src}/{name}', 'trusted.mark', follow_symlinks=False),
                     b'link', f'backing trusted.mark of {name}')
            os.removexattr(f'{m.mnt}/{name}', 'trusted.mark', follow_symlinks=False)


@case(mount=False)
def symlink_hardlink():
    """link() of a link without following makes another name for the link
    (not for its target); following the absolute link leaves the mount
    (EXDEV)."""
    with confined() as (m, t):
        os.link(f'{m.mnt}/abs', f'{m.mnt}/abs2', follow_symlinks=False)
        st, st2 = os.lstat(f'{t.src}/abs'), os.lstat(f'{t.src}/abs2')
        check(stat.S_ISLNK(st2.st_mode), f'the new name is not a symlink: {oct(st2.st_mode)}')
        check_eq(st2.st_ino, st.st_ino, 'inode of the hard link')
        check_eq(os.lstat(f'{t.src}/abs').st_nlink, 2, 'link count of the symlink')
        os.link(f'{m.mnt}/sub/rel', f'{m.mnt}/sub/rel2', follow_symlinks=False)
        check(stat.S_ISLNK(os.lstat(f'{t.src}/sub/rel2').st_mode), 'rel2 is not a symlink')
        check_errno(E.EXDEV, sx.linkat, f'{m.mnt}/abs', f'{m.mnt}/followed',
                    sx.AT_SYMLINK_FOLLOW, what='linkat(AT_SYMLINK_FOLLOW) of the absolute link')
        check_errno(E.ENOENT, sx.linkat, f'{m.mnt}/sub/rel', f'{m.mnt}/followed2',
                    sx.AT_SYMLINK_FOLLOW, what='linkat(AT_SYMLINK_FOLLOW) of the relative link')


@case(mount=False)
def symlink_rename_unlink():
    """Renaming and removing the links touches only the links."""
    with confined() as (m, t):
        os.rename(f'{m.mnt}/abs', f'{m.mnt}/sub/abs-moved')
        os.rename(f'{m.mnt}/sub/rel', f'{m.mnt}/rel-moved')
        check_eq(os.readlink(f'{t.src}/rel-moved'), '../../outside/canary', 'moved link')
        os.unlink(f'{m.mnt}/sub/abs-moved')
        os.unlink(f'{m.mnt}/rel-moved')
        os.rename(f'{m.mnt}/absdir', f'{m.mnt}/absdir2')
        os.unlink(f'{m.mnt}/absdir2')
        check(os.path.isdir(f'{t.outside}/cdir'), 'the directory behind absdir is gone')


# --- '..' and file handles --------------------------------------------------

@case(mount=False)
def dotdot_at_root():
    """'..' from the mount root (by path, by descriptor, by a chain through
    subdirectories, and from a descriptor opened by file handle) is the
    mount point's parent, which has no 'outside'."""
    with confined() as (m, t):
        parent = os.stat(m.base)
        for rel in ('..', 'sub/..', 'sub/deeper/../../..', './sub/deeper/../../../.'):
            ufs.check_stat(os.stat(f'{m.mnt}/{rel}'), os.stat(m.mnt) if rel == 'sub/..'
                           else parent, f'mnt/{rel}', ('st_dev', 'st_ino'))
        with opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
            check('outside' not in os.listdir(f'/proc/self/fd/{root}/..'), 'fd/.. lists outside')
            handle = sx.name_to_handle_at(m.mnt)
            with opened_by_handle(root, handle, os.O_RDONLY | os.O_DIRECTORY) as fd:
                ufs.check_stat(os.fstat(fd), os.stat(m.mnt), 'root by handle', ('st_dev', 'st_ino'))
                with opened('..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd) as up:
                    check('outside' not in os.listdir(up), "'..' of the root by handle")


@contextlib.contextmanager
def opened_by_handle(mount_fd, handle, flags):
    fd = sx.open_by_handle_at(mount_fd, handle, flags)
    try:
        yield fd
    finally:
        os.close(fd)


def source_inodes(tree):
    inos = {os.lstat(tree.src).st_ino}
    for d, dirs, files in os.walk(tree.src):
        inos.update(os.lstat(os.path.join(d, n)).st_ino for n in dirs + files)
    return inos


@case(root=True, mount=False)
def file_handles_stay_inside():
    """Handles of names inside the mount open those same inodes while known,
    and after the kernel forgot them (the daemon's export records); forged
    FUSE handles (other node ids) give ESTALE or an inode of the source (or
    the control file), never the canary."""
    ufs.require_daemon('needs the daemon\'s export records and control file')
    with confined('entry_timeout=0,attr_timeout=0') as (m, t):
        names = ['inside', 'sub', 'sub/deeper', 'abs']
        handles = {}
        for n in names:     # name_to_handle_at does not follow the last link
            handles[n] = sx.name_to_handle_at(f'{m.mnt}/{n}')
        inside = source_inodes(t) | {os.stat(f'{m.mnt}/{ufs.CONTROL}').st_ino}
        canary_ino = os.stat(t.canary).st_ino
        with opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
            def try_open(handle, what):
                got = ufs.outcome(sx.open_by_handle_at, root, handle, os.O_PATH)
                if got.err:
                    check(got.err in (E.ESTALE, E.ENOENT),
                          f'{what}: open_by_handle_at gave {ufs.errname(got.err)}')
                    return None
                try:
                    ino = os.fstat(got.value).st_ino
                finally:
                    os.close(got.value)
                check(ino != canary_ino, f'{what}: a handle opened the canary')
                check(ino in inside, f'{what}: a handle opened inode {ino}, not in the source')
                return ino
            for n, h in handles.items():
                check_eq(try_open(h, f'handle of {n}'), os.lstat(f'{t.src}/{n}').st_ino,
                         f'inode opened by the handle of {n}')
            ufs.drop_caches(2)
            after = {n: try_open(h, f'handle of {n} after drop_caches')
                     for n, h in handles.items()}
            check_eq(after, {n: os.lstat(f'{t.src}/{n}').st_ino for n in names},
                     'inodes opened by the handles after drop_caches')
            forged = {}
            htype, data, _ = handles['inside']
            if htype in (0x81, 0x82) and len(data) >= 12:   # FUSE: nodeid hi, lo, generation
                for nodeid in list(range(1, 40)) + [1 << 20, (1 << 32) + 3, (1 << 63) - 1]:
                    fake = (0x81, (nodeid >> 32).to_bytes(4, 'little')
                            + (nodeid & 0xffffffff).to_bytes(4, 'little') + bytes(4), 0)
                    forged[nodeid] = try_open(fake, f'forged handle for node {nodeid}')
        ufs.diag(f'after drop_caches: {after}; forged handles that opened something: '
                 f'{ {k: v for k, v in forged.items() if v} }')


# --- a directory moved out of the source ------------------------------------

def race_reader(chan, mnt, handle, seconds):
    """Child: stat, read, list and open-by-handle inside mnt/mv over and over;
    count what came back; anything showing the canary is recorded."""
    counts = {}
    leaks = []
    chan.send('started')
    end = time.monotonic() + seconds
    with opened(mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
        while time.monotonic() < end:
            for what, fn in (('read', lambda: ufs.read_file(f'{mnt}/mv/file')),
                             ('list', lambda: os.listdir(f'{mnt}/mv')),
                             ('deep', lambda: ufs.read_file(f'{mnt}/mv/sub/inner')),
                             ('up', lambda: os.listdir(f'{mnt}/mv/sub/..')),
                             ('handle', lambda: by_handle_listing(root, handle))):
                got = ufs.outcome(fn)
                key = f'{what} {ufs.errname(got.err) if got.err else "ok"}'
                counts[key] = counts.get(key, 0) + 1
                if not got.err and (CANARY in repr(got.value).encode()
                                    or 'canary' in repr(got.value)):
                    leaks.append(f'{what}: {got.value!r}'[:200])
    return counts, leaks[:5]


def by_handle_listing(root, handle):
    """Open mv by handle, then list it and its '..'."""
    fd = sx.open_by_handle_at(root, handle, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return sorted(os.listdir(fd)), sorted(os.listdir(f'/proc/self/fd/{fd}/..'))
    finally:
        os.close(fd)


@case(root=True, mount=False, timeout=60)
def rename_race():
    """entry_timeout=0,attr_timeout=0: a directory is renamed out of the
    source and back as fast as possible while another process looks inside
    it by path and by file handle; nothing may ever show the canary."""
    with confined('entry_timeout=0,attr_timeout=0') as (m, t):
        os.makedirs(f'{t.src}/mv/sub')
        ufs.write_file(f'{t.src}/mv/file', b'moved file')
        ufs.write_file(f'{t.src}/mv/sub/inner', b'inner')
        handle = sx.name_to_handle_at(f'{m.mnt}/mv')
        flips = 0
        with ufs.Child(race_reader, m.mnt, handle, 3.0) as reader:
            reader.recv()
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                os.rename(f'{t.src}/mv', f'{t.outside}/mv')
                os.rename(f'{t.outside}/mv', f'{t.src}/mv')
                flips += 1
            counts, leaks = reader.join(timeout=30)
        ufs.diag(f'{flips} round trips out and back; reader outcomes {counts}')
        check(not leaks, f'the canary showed through the mount: {leaks}')
        bad = {k: v for k, v in counts.items()
               if not k.endswith((' ok', ' ENOENT', ' ESTALE', ' ENOTDIR'))}
        check(not bad, f'unexpected outcomes: {bad}')
        os.rename(f'{t.src}/mv', f'{t.outside}/mv')
        t.before = t.state()    # mv is outside now, by our own hand
        check_errno(E.ENOENT, os.stat, f'{m.mnt}/mv/file', what='stat after the final move')
        for rel in ('mv', 'mv/sub'):
            check(not os.path.exists(f'{m.mnt}/{rel}'), f'{rel} still reachable')


def moved_dir_attempts(dirfd):
    """Name operations relative to a descriptor of a directory that is now
    outside the source; (label, outcome) for each."""
    fifo_mode = stat.S_IFIFO | 0o644
    steps = [
        ('lookup', lambda: os.stat('planted', dir_fd=dirfd)),
        ('open planted', lambda: os.close(os.open('planted', os.O_RDONLY, dir_fd=dirfd))),
        ('create', lambda: os.close(os.open('new', os.O_CREAT | os.O_WRONLY, 0o644,
                                            dir_fd=dirfd))),
        ('mkdir', lambda: os.mkdir('newdir', dir_fd=dirfd)),
        ('symlink', lambda: os.symlink('x', 'newlink', dir_fd=dirfd)),
        ('mknod fifo', lambda: os.mknod('newfifo', fifo_mode, dir_fd=dirfd)),
        ('unlink old', lambda: os.unlink('old', dir_fd=dirfd)),
        ('rmdir olddir', lambda: os.rmdir('olddir', dir_fd=dirfd)),
        ('rename within', lambda: os.rename('old', 'old2', src_dir_fd=dirfd, dst_dir_fd=dirfd)),
        ('listing', lambda: sorted(os.listdir(dirfd))),
        ('chmod', lambda: os.chmod(dirfd, 0o700)),
        ('setxattr', lambda: os.setxattr(dirfd, 'user.moved', b'1')),
        ('listxattr', lambda: os.listxattr(dirfd)),
    ]
    return [(label, str(ufs.outcome(fn))) for label, fn in steps]


@case(root=True, mount=False)
def moved_dir_name_ops():
    """A directory the client holds open is moved out of the source on the
    backing side; every operation through the held descriptor fails
    (ENOENT): its names, its listing, its attributes; and nothing appears
    in, vanishes from or changes in the moved directory."""
    ufs.require_daemon('a bind mount does not confine a directory moved out while open')
    with confined() as (m, t):
        os.makedirs(f'{t.src}/mv/olddir')
        ufs.write_file(f'{t.src}/mv/old', b'old')
        with opened(f'{m.mnt}/mv', os.O_RDONLY | os.O_DIRECTORY) as dirfd:
            os.listdir(dirfd)
            os.rename(f'{t.src}/mv', f'{t.outside}/mv')
            ufs.write_file(f'{t.outside}/mv/planted', b'planted outside')
            t.before = t.state()
            got = dict(moved_dir_attempts(dirfd))
            ufs.diag(f'through a descriptor of a moved-out directory: {got}')
            for label, result in got.items():
                check_eq(result, 'ENOENT', f'{label} in a directory moved out of the source')



def warm_dir(dirfd, rounds=20):
    """Name operations in a held directory, each checking that it is inside
    the source: what the daemon remembers (confine.c: ufs_check_beneath_dir)."""
    for i in range(rounds):
        os.close(os.open(f'w{i}', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dirfd))
        os.unlink(f'w{i}', dir_fd=dirfd)


@case(root=True, mount=False)
def remembered_dir_moved_out():
    """A directory the daemon has just found inside the source many times
    (and may remember so) is moved out on the backing side: by itself, by
    an ancestor, and by a RENAME_EXCHANGE with a directory outside.  The
    very next operation through a descriptor of it fails (ENOENT): no
    request may trust what it remembered from before the move."""
    ufs.require_daemon('a bind mount does not confine a directory moved out while open')
    with confined() as (m, t):
        away = ufs.scratch_dir('away')      # outside the source, not the canary's dir
        moves = {
            'itself': lambda k: os.rename(f'{t.src}/u{k}/mv', f'{away}/mv{k}'),
            'its parent': lambda k: os.rename(f'{t.src}/u{k}', f'{away}/u{k}'),
            'an exchange': lambda k: sx.renameat2(f'{t.src}/u{k}/mv', f'{away}/other{k}',
                                                  sx.RENAME_EXCHANGE),
        }
        # each case its own tree, made before the mount looks: nothing
        # changes beside the mount but the move itself
        for k in range(len(moves)):
            os.makedirs(f'{t.src}/u{k}/mv/olddir')
            ufs.write_file(f'{t.src}/u{k}/mv/old', b'old')
            os.makedirs(f'{away}/other{k}')
        for k, (how, move) in enumerate(moves.items()):
            moved = {'itself': f'{away}/mv{k}', 'its parent': f'{away}/u{k}/mv',
                     'an exchange': f'{away}/other{k}'}[how]
            with opened(f'{m.mnt}/u{k}/mv', os.O_RDONLY | os.O_DIRECTORY) as dirfd:
                warm_dir(dirfd)
                move(k)
                ufs.write_file(f'{moved}/planted', b'planted outside')
                got = dict(moved_dir_attempts(dirfd))
            ufs.diag(f'moved out by {how}: {got}')
            for label, result in got.items():
                check_eq(result, 'ENOENT', f'{label} in a remembered directory moved out '
                         f'of the source by {how}')
            check_eq(sorted(os.listdir(moved)), ['old', 'olddir', 'planted'],
                     f'the directory moved out by {how}, after the attempts')


@case(root=True, mount=False, timeout=120)
def remembered_dir_costs_no_readlink():
    """Where the daemon can watch the backing file system for directory
    moves, a directory found inside the source stays so without asking the
    kernel for its path again (a readlink of /proc/self/fd/N per request
    cost rm -rf a fifth of its time): 200 creates and unlinks in one
    directory cost a handful of readlinks, not one or two each."""
    ufs.require_daemon('the confinement check is the daemon\'s')
    if not shutil.which('strace'):
        raise ufs.Skip('strace is not installed: the case counts system calls with it')
    with confined(own_fs=True) as (m, t):
        off = [ln for ln in m.log_text().splitlines() if 'walked up on every check' in ln]
        if off:     # not a local file system with file handles (confine_memo.c)
            raise ufs.Skip(f'the daemon cannot watch for directory moves here: {off[0]}')
        os.makedirs(f'{t.src}/d')
        with opened(f'{m.mnt}/d', os.O_RDONLY | os.O_DIRECTORY) as dirfd:
            warm_dir(dirfd, 2)
            counts = ufs.daemon_syscall_counts(m, lambda: warm_dir(dirfd, 100))
        links = counts.get('readlinkat', 0) + counts.get('readlink', 0)
        ufs.diag(f'{links} readlinks for 100 creates and 100 unlinks: {counts}')
        check(links <= 10, f'{links} readlinks for 100 creates and 100 unlinks in one '
              'directory (bound 10): the check of the directory was not remembered')

# --- device nodes and FIFOs -------------------------------------------------

def use_devices(chan, mnt):
    """Child: open null and zero for writing/reading, report, hold them open
    until told, then close."""
    out = {}
    fds = []
    for name, flags in (('null', os.O_WRONLY), ('zero', os.O_RDONLY)):
        got = ufs.outcome(os.open, f'{mnt}/{name}', flags)
        if got.err:
            out[name] = ufs.errname(got.err)
            continue
        fds.append(got.value)
        out[name] = (os.write(got.value, b'hello') if name == 'null'
                     else os.read(got.value, 8))
    chan.send(out)
    chan.recv(timeout=30)
    for fd in fds:
        os.close(fd)
    return 'closed'


def device_case(opts):
    with confined(opts) as (m, t):
        os.mknod(f'{m.mnt}/null', stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.mknod(f'{m.mnt}/zero', stat.S_IFCHR | 0o666, os.makedev(1, 5))
        for name, dev in (('null', (1, 3)), ('zero', (1, 5))):
            st = os.lstat(f'{t.src}/{name}')
            check(stat.S_ISCHR(st.st_mode), f'backing {name} is not a char device')
            check_eq((os.major(st.st_rdev), os.minor(st.st_rdev)), dev, f'backing rdev of {name}')
            ufs.check_same_stat(f'{m.mnt}/{name}', f'{t.src}/{name}', follow=False)
        nodev = 'nodev' in ufs.mount_entry(m.mnt).options
        with ufs.Child(use_devices, m.mnt) as c:
            got = c.recv(timeout=10)
            held = {name: check_only_o_path(m, f'{t.src}/{name}', f'while the client uses {name}')
                    for name in ('null', 'zero')}
            t0 = time.monotonic()
            check_eq(ufs.read_file(f'{m.mnt}/inside'), b'inside', 'read while devices are open')
            check(time.monotonic() - t0 < 1, 'the mount is slow while devices are open')
            c.send('close')
            c.join()
        want = ({'null': 'EACCES', 'zero': 'EACCES'} if nodev
                else {'null': 5, 'zero': bytes(8)})
        options = ufs.mount_entry(m.mnt).options
        check_eq(got, want, f'opening device nodes (mount options {options})')
        ufs.diag(f'nodev={nodev}: the client got {got}; daemon descriptors on the nodes: {held}')


@case(root=True, mount=False)
def device_nodes_nodev():
    """mknod of /dev/null's and /dev/zero's numbers inside the source; the
    default mount is nodev, so opening them gives EACCES (in the kernel);
    the daemon never opens them."""
    device_case(None)


@case(root=True, mount=False)
def device_nodes_dev():
    """With -o dev the open reaches the host's driver (null takes 5 bytes,
    zero gives zeros), in the client's kernel context: the daemon still
    never opens the nodes."""
    device_case('dev')


def fifo_writer(chan, path):
    """Child: a blocking open for writing (no reader yet), then write."""
    chan.send('opening')
    with opened(path, os.O_WRONLY) as fd:
        return os.write(fd, b'through the fifo')


@case(mount=False)
def fifo_open_in_client():
    """An open of a FIFO that blocks happens in the client: meanwhile the
    daemon answers, holds the FIFO only as O_PATH, and is not blocked."""
    with confined() as (m, t):
        os.mkfifo(f'{m.mnt}/fifo')
        path = f'{m.mnt}/fifo'
        with ufs.Child(fifo_writer, path) as writer:
            writer.recv()
            time.sleep(0.3)                  # the writer now blocks in open()
            t0 = time.monotonic()
            for _ in range(20):
                os.stat(f'{m.mnt}/inside')
                os.stat(f'{m.mnt}/fifo')
                check_eq(ufs.read_file(f'{m.mnt}/inside'), b'inside', 'read')
            check(time.monotonic() - t0 < 2, 'the mount is slow while a FIFO open blocks')
            fds = check_only_o_path(m, f'{t.src}/fifo', 'while a client blocks on the FIFO')
            with opened(path, os.O_RDONLY) as rfd:
                check_eq(writer.join(timeout=10), 16, 'bytes the writer wrote')
                check_eq(os.read(rfd, 100), b'through the fifo', 'data through the FIFO')
            # O_RDWR on a FIFO never blocks (Linux); still nothing in the daemon
            with opened(path, os.O_RDWR) as fd:
                os.write(fd, b'x')
                check_eq(os.read(fd, 1), b'x', 'O_RDWR FIFO round trip')
                check_only_o_path(m, f'{t.src}/fifo', 'while a client has the FIFO O_RDWR')
        ufs.diag(f'daemon descriptors on the FIFO while a client blocked: {fds}')


# --- xattr namespaces -------------------------------------------------------

def xattr_steps(path):
    return [(label, str(ufs.outcome(fn, *args))) for label, fn, *args in (
        ('set trusted.new', os.setxattr, path, 'trusted.new', b'1'),
        ('get trusted.set_behind', os.getxattr, path, 'trusted.set_behind'),
        ('remove trusted.set_behind', os.removexattr, path, 'trusted.set_behind'),
        ('list trusted', lambda: sorted(n for n in os.listxattr(path) if n.startswith('trusted.'))),
        ('set security.ufs', os.setxattr, path, 'security.ufs', b'2'),
        ('get security.set_behind', os.getxattr, path, 'security.set_behind'),
        ('list security', lambda: sorted(n for n in os.listxattr(path)
                                         if n.startswith('security.'))),
        ('set security.capability', os.setxattr, path, 'security.capability',
         bytes.fromhex('0100000200000000000000000000000000000000')),
        ('set user.ok', os.setxattr, path, 'user.ok', b'3'),
        ('get user.ok', os.getxattr, path, 'user.ok'),
    )]


def make_xattr_file(path):
    ufs.write_file(path, b'x')
    os.chmod(path, 0o666)
    os.setxattr(path, 'trusted.set_behind', b'behind')
    os.setxattr(path, 'security.set_behind', b'behind')


def xattr_case(opts, want_root, like_backing=True):
    """xattr_steps as root through the mount (compared with want_root); if
    the policy lets everything through (like_backing), also compared with a
    reference file, and then as the test user on both."""
    with confined(opts) as (m, t):
        make_xattr_file(f'{t.src}/root-file')
        ref = ufs.scratch_dir('xref')
        make_xattr_file(f'{ref}/root-file')
        got = xattr_steps(f'{m.mnt}/root-file')
        bad = {k: (v, want_root[k]) for k, v in got if k in want_root and v != want_root[k]}
        check(not bad, f'xattrs as root with {opts or "the default policy"} '
              f'(label: (got, expected)): {bad}')
        if not like_backing:
            return dict(got)
        want = xattr_steps(f'{ref}/root-file')
        diffs = [f'{a[0]}: mount {a[1]} / reference {b[1]}' for a, b in zip(got, want) if a != b]
        check(not diffs, 'as root: ' + '; '.join(diffs))
        try:
            ufs.test_user()
        except ufs.Skip:
            return dict(got)
        user_got = ufs.as_user(xattr_steps, f'{m.mnt}/root-file')
        user_ref = ufs.as_user(xattr_steps, f'{ref}/root-file')
        diffs = [f'{a[0]}: mount {a[1]} / reference {b[1]}'
                 for a, b in zip(user_got, user_ref) if a != b]
        check(not diffs, f'as {ufs.TEST_USER}: ' + '; '.join(diffs))
        check_eq(dict(user_got)['set trusted.new'], 'EPERM', 'trusted.* set by the user')
        check_eq(dict(user_got)['set security.capability'], 'EPERM',
                 'security.capability set by the user')
        return dict(got)


@case(root=True, mount=False)
def xattr_trusted_denied():
    """xattr_trusted=deny: trusted.* cannot be set (EPERM), reads give
    ENODATA even when the backing file has one, and listxattr hides them.
    security.* is allowed by default."""
    ufs.require_daemon('the xattr policy is the daemon\'s')
    xattr_case('xattr_trusted=deny', {'set trusted.new': 'EPERM', 'get trusted.set_behind': 'ENODATA',
                      'remove trusted.set_behind': 'EPERM', 'list trusted': '[]',
                      'set security.ufs': 'None', 'get security.set_behind': "b'behind'",
                      'set user.ok': 'None', 'get user.ok': "b'3'"},
               like_backing=False)


@case(root=True, mount=False)
def xattr_trusted_allowed():
    """The default policy (xattr_trusted=allow): root sets, reads, lists and
    removes trusted.* like on the backing file system; the ordinary user
    still gets EPERM (the kernel checks CAP_SYS_ADMIN before asking the
    daemon), does not see trusted.* names in lists (as on ext4), and cannot
    set security.capability."""
    got = xattr_case('allow_other',
                     {'set trusted.new': 'None', 'get trusted.set_behind': "b'behind'",
                      'remove trusted.set_behind': 'None', 'list trusted': "['trusted.new']",
                      'set user.ok': 'None'})
    ufs.diag(f'root with xattr_trusted=allow: {got}')


@case(root=True, mount=False)
def xattr_security_denied():
    """xattr_security=deny: security.* cannot be set, reads give ENODATA,
    listxattr hides them."""
    ufs.require_daemon('the xattr policy is the daemon\'s')
    xattr_case('xattr_security=deny',
               {'set security.ufs': 'EPERM', 'get security.set_behind': 'ENODATA',
                'list security': '[]', 'set security.capability': 'EPERM',
                'set trusted.new': 'None', 'set user.ok': 'None'},
               like_backing=False)


@case(root=True, mount=False)
def xattr_backing_untouched():
    """With xattr_trusted=deny nothing written to trusted.* through the
    mount reaches the backing file, and a trusted.* set behind the mount
    stays."""
    ufs.require_daemon('the xattr policy is the daemon\'s')
    with confined('xattr_trusted=deny') as (m, t):
        make_xattr_file(f'{t.src}/f')
        xattr_steps(f'{m.mnt}/f')
        names = sorted(os.listxattr(f'{t.src}/f'))
        check('trusted.new' not in names, f'trusted.new reached the backing file: {names}')
        check_eq(os.getxattr(f'{t.src}/f', 'trusted.set_behind'), b'behind',
                 'trusted.set_behind on the backing file')


def stat_in(chan, dirpath, name):
    """Child: stat name relative to a descriptor of dirpath, so that the
    kernel looks up name alone (not the directory again)."""
    with opened(dirpath, os.O_PATH | os.O_DIRECTORY) as dirfd:
        chan.send('started')
        return str(ufs.outcome(lambda: os.stat(name, dir_fd=dirfd).st_size))


@case(root=True, mount=False, timeout=60)
def moved_out_during_lookup():
    """A directory is moved out of the source while a LOOKUP in it is between
    its steps (the daemon's debug pause widens the window): the name found
    there is outside now, and the lookup must say ENOENT, not hand it out."""
    ufs.require_debug_build()
    with confined('entry_timeout=0,attr_timeout=0', env={'UFS_DEBUG_PAUSE': 'lookup:700'}) \
            as (m, t):
        away = ufs.scratch_dir('away')      # outside the source, not the canary's dir
        os.makedirs(f'{t.src}/mv/sub')
        ufs.write_file(f'{t.src}/mv/file', b'moved file')
        os.stat(f'{m.mnt}/mv')
        for name in ('file', 'sub'):
            with ufs.Child(stat_in, f'{m.mnt}/mv', name) as c:
                c.recv()
                time.sleep(0.35)            # the LOOKUP of name is in its pause
                os.rename(f'{t.src}/mv', f'{away}/mv')
                got = c.join(timeout=20)
            os.rename(f'{away}/mv', f'{t.src}/mv')
            check_eq(got, 'ENOENT', f'stat of mv/{name} moved out during its lookup')


# --- deep trees: "still inside" in O(1) system calls ----------------------

DEEP = 1000                 # levels, 200-character names: far past PATH_MAX
DEEP_NAME = 'd' * 200
DEEP_OPS = 10
DEEP_BOUND = 1500           # system calls for DEEP_OPS mkdir+stat; one walk
                            # of DEEP levels alone costs 3 * DEEP or more


def deep_fd(top, depth, make=False):
    """A directory descriptor of top/DEEP_NAME/... depth levels down (paths
    that long only work level by level)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        if make:
            os.mkdir(DEEP_NAME, dir_fd=fd)
        nfd = os.open(DEEP_NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def deep_remove(top, name):
    """Remove the chain top/name/DEEP_NAME/... without recursing as deep
    (shutil.rmtree recurses once per level): lift each level up first."""
    path, lifted = f'{top}/{name}', f'{top}/.lifted'
    while os.path.lexists(path):
        if os.path.isdir(f'{path}/{DEEP_NAME}'):
            os.rename(f'{path}/{DEEP_NAME}', lifted)
            shutil.rmtree(path)
            os.rename(lifted, path)
        else:
            shutil.rmtree(path)


def daemon_syscalls(m, work):
    """System calls all the daemon's threads make while work() runs."""
    return sum(ufs.daemon_syscall_counts(m, work).values())


@case(root=True, mount=False, timeout=120)
def deep_tree_costs_o1():
    """Directories far deeper than PATH_MAX: each mkdir+stat there costs the
    daemon a bounded number of system calls, whatever the depth (no walk of
    ".." up to the source per request), also after directory moves that
    cannot take anything out of the source; and a directory moved out of
    the source at depth is out at once (ENOENT through the mount)."""
    ufs.require_daemon('the confinement check is the daemon\'s')
    if not shutil.which('strace'):
        raise ufs.Skip('strace is not installed: the case counts system calls with it')
    with confined(own_fs=True) as (m, t):
        off = [ln for ln in m.log_text().splitlines() if 'walked up on every check' in ln]
        if off:     # not a local file system with file handles (confine_memo.c)
            raise ufs.Skip(f'the daemon cannot remember deep directories here: {off[0]}')
        away = f'{t.top}/away'      # outside the source, not the canary's dir
        os.makedirs(f'{away}/x')
        fd = -1
        try:
            os.close(deep_fd(t.src, DEEP, make=True))
            fd = deep_fd(m.mnt, DEEP)
            os.mkdir('warm', dir_fd=fd)

            def ops():
                # moves that take nothing out of the source: outside it, and
                # within it of directories no deep one is below (one of them
                # from the source's root, which every deep one is below)
                os.rename(f'{away}/x', f'{away}/y')
                os.rename(f'{t.src}/sub/deeper', f'{t.src}/sub/deeper2')
                os.rename(f'{t.src}/sub', f'{t.src}/sub2')
                os.rename(f'{t.src}/sub2', f'{t.src}/sub')
                for i in range(DEEP_OPS):
                    os.mkdir(f'n{i}', dir_fd=fd)
                    os.stat(f'n{i}', dir_fd=fd)
            calls = daemon_syscalls(m, ops)
            ufs.diag(f'{calls} daemon system calls for {DEEP_OPS} mkdir+stat at depth {DEEP}')
            check(calls <= DEEP_BOUND, f'{calls} daemon system calls for {DEEP_OPS} mkdir+stat '
                  f'at depth {DEEP} (bound {DEEP_BOUND}, independent of the depth)')

            # move level DEEP/2 out of the source on the backing side
            mid = deep_fd(t.src, DEEP // 2)
            try:
                os.rename(DEEP_NAME, f'{away}/moved', src_dir_fd=mid)
            finally:
                os.close(mid)
            check_errno(E.ENOENT, lambda: os.mkdir('after', dir_fd=fd),
                        what='mkdir at depth in a directory just moved out of the source')
            # Listing it: with cache_readdir the kernel opens directories
            # without OPENDIR (fs_dir.c), so the open may succeed; the
            # listing is where the daemon is asked, and it must serve
            # nothing of it: ENOENT, or empty as a removed directory lists
            # (it holds warm and n0.., so empty is not its contents).
            def list_moved():
                dfd = os.open('.', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                try:
                    return os.listdir(dfd)
                finally:
                    os.close(dfd)
            got = ufs.outcome(list_moved)
            check(got.err == E.ENOENT or (got.err is None and got.value == []),
                  f'listing a directory at depth just moved out of the source: {got!r}, '
                  'expected ENOENT or nothing')
        finally:
            if fd >= 0:
                os.close(fd)
            deep_remove(away, 'moved')
            deep_remove(t.src, DEEP_NAME)


def deep_user_session(src, mnt, away, depth):
    """As the daemon's user: a chain of depth levels in src, a mkdir at its
    bottom through the mount, then its middle moved to away and a mkdir
    again.  Returns both outcomes."""
    os.close(deep_fd(src, depth, make=True))
    fd = deep_fd(mnt, depth)
    try:
        before = str(ufs.outcome(os.mkdir, 'before', dir_fd=fd))
        mid = deep_fd(src, depth // 2)
        try:
            os.rename(DEEP_NAME, f'{away}/moved', src_dir_fd=mid)
        finally:
            os.close(mid)
        after = str(ufs.outcome(os.mkdir, 'after', dir_fd=fd))
    finally:
        os.close(fd)
    return before, after


@case(root=True, mount=False, timeout=120)
def deep_tree_without_watch():
    """A daemon that may not watch a file system (an ordinary user's: no
    CAP_SYS_ADMIN) says once why it walks deep directories up, and a
    directory moved out at depth is still out at once."""
    ufs.require_daemon('the confinement check is the daemon\'s')
    if not ufs.as_user(os.access, '/dev/fuse', os.R_OK | os.W_OK):
        raise ufs.Skip(f'{ufs.TEST_USER} cannot open /dev/fuse (chmod 0666 /dev/fuse)')
    with ufs.Mount(user=ufs.TEST_USER) as m:
        got = ufs.as_user(deep_user_session, m.src, m.mnt, m.tmp, 60, timeout=60)
        check_eq(got[0], 'None', 'mkdir at depth 60 through the mount')
        check_eq(got[1], 'ENOENT', 'mkdir at depth in a directory just moved out of the source')
        text = m.log_text()
        check_eq(text.count('confine: directories deeper than PATH_MAX are walked up'), 1,
                 'the daemon says once that it walks deep directories: ' + m.log_tail())


def deep_churn(chan, mnt, src, depth, rounds):
    """Child: while the parent moves directories, keep the daemon walking
    and remembering: new directories at the bottom of chain B (through the
    mount), and B's own middle level moved away and back on the backing
    side, checking each time that B's bottom is out, then in again."""
    fd = deep_fd(f'{mnt}/b', depth)
    mid = deep_fd(f'{src}/b', depth // 2)
    bad = []
    chan.send('started')
    try:
        for i in range(rounds):
            got = str(ufs.outcome(os.mkdir, f'c{i}', dir_fd=fd))
            if got != 'None':
                bad.append(f'mkdir c{i} in B: {got}')
            os.rename(DEEP_NAME, f'{src}/../b-away', src_dir_fd=mid)
            got = str(ufs.outcome(os.mkdir, f'x{i}', dir_fd=fd))
            if got != 'ENOENT':
                bad.append(f'mkdir x{i} in B moved out: {got}')
            os.rename(f'{src}/../b-away', DEEP_NAME, dst_dir_fd=mid)
    finally:
        os.close(mid)
        os.close(fd)
    return bad


@case(root=True, mount=False, timeout=120)
def deep_tree_moves_race():
    """Two chains past PATH_MAX; each has its middle moved out of the source
    and back, over and over, by two processes at once, while the daemon
    walks and remembers: every request right after a move out is ENOENT,
    every one after the move back succeeds (no stale memory, no window)."""
    ufs.require_daemon('the confinement check is the daemon\'s')
    depth, rounds = 100, 40
    with confined() as (m, t):
        for chain in ('a', 'b'):
            os.mkdir(f'{t.src}/{chain}')
            os.close(deep_fd(f'{t.src}/{chain}', depth, make=True))
        away = ufs.scratch_dir('away')
        fd = deep_fd(f'{m.mnt}/a', depth)
        mid = deep_fd(f'{t.src}/a', depth // 2)
        bad = []
        try:
            with ufs.Child(deep_churn, m.mnt, t.src, depth, rounds) as c:
                c.recv()
                for i in range(rounds):
                    os.rename(DEEP_NAME, f'{away}/a', src_dir_fd=mid)
                    got = str(ufs.outcome(os.mkdir, f'x{i}', dir_fd=fd))
                    if got != 'ENOENT':
                        bad.append(f'mkdir x{i} in A moved out: {got}')
                    os.rename(f'{away}/a', DEEP_NAME, dst_dir_fd=mid)
                    got = str(ufs.outcome(os.mkdir, f'c{i}', dir_fd=fd))
                    if got != 'None':
                        bad.append(f'mkdir c{i} in A moved back: {got}')
                bad += c.join(timeout=90)
        finally:
            os.close(mid)
            os.close(fd)
        check_eq(bad[:5], [], 'requests at depth around directory moves')
