# SPDX-License-Identifier: GPL-2.0-or-later
"""Every operation a passthrough must carry, compared with the backing file
(stat fields, contents) and with the same operation on a reference directory
(return values, errno).
"""

import errno
import fcntl
import mmap
import os
import socket
import stat
import subprocess
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, check_errno, check_same_stat, opened

E = errno
DATA = ufs.pattern(20000, seed=1)


def make_tree(d):
    """A file, a dir with two subdirs, symlinks (to file, to dir, dangling)."""
    ufs.write_file(f'{d}/file', DATA[:5000])
    os.makedirs(f'{d}/dir/sub1')
    os.mkdir(f'{d}/dir/sub2')
    os.symlink('file', f'{d}/link')
    os.symlink('dir', f'{d}/dirlink')
    os.symlink('nowhere', f'{d}/dangling')


# --- lookup and getattr -----------------------------------------------------

@case
def stat_file(m):
    w = m.work('stat_file')
    w.setup(make_tree)
    check_same_stat(f'{w.mnt}/file', f'{w.src}/file')
    check_same_stat(f'{w.mnt}/file', f'{w.src}/file', follow=False)
    check(stat.S_ISREG(os.stat(f'{w.mnt}/file').st_mode), 'file is not S_IFREG')


@case
def stat_dir(m):
    w = m.work('stat_dir')
    w.setup(make_tree)
    check_same_stat(f'{w.mnt}/dir', f'{w.src}/dir')
    check_eq(os.stat(f'{w.mnt}/dir').st_nlink, 4, 'st_nlink of a dir with two subdirs')
    check_same_stat(w.mnt, w.src)
    # Only fields no case changes for the mount root: cases make their dirs in
    # the backing root, behind the kernel's cached attributes, and the kernel
    # reports its own inode number (1) for the root while they are cached.
    check_same_stat(m.mnt, m.src, fields=('st_mode', 'st_uid', 'st_gid'))


@case
def stat_symlink(m):
    w = m.work('stat_symlink')
    w.setup(make_tree)
    for name in ('link', 'dirlink', 'dangling'):
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}', follow=False)
        check(stat.S_ISLNK(os.lstat(f'{w.mnt}/{name}').st_mode), f'{name} is not S_IFLNK')
    check_same_stat(f'{w.mnt}/link', f'{w.src}/file')
    check_same_stat(f'{w.mnt}/dirlink', f'{w.src}/dir')
    check_errno(E.ENOENT, os.stat, f'{w.mnt}/dangling')


@case
def getattr_after_write(m):
    w = m.work('getattr_after_write')
    path = f'{w.mnt}/f'
    with opened(path, os.O_RDWR | os.O_CREAT, 0o640) as fd:
        os.write(fd, DATA)
        os.fsync(fd)  # with a writeback cache the backing file lags until then
        ufs.check_stat(os.fstat(fd), os.stat(f'{w.src}/f'), 'fstat after write')
    check_same_stat(path, f'{w.src}/f')
    check_eq(os.stat(path).st_size, len(DATA), 'size after write')


# --- attributes -------------------------------------------------------------

@case
def chmod(m):
    w = m.work('chmod')
    ufs.write_file(f'{w.src}/f')
    os.mkdir(f'{w.src}/d')
    for name, mode in [('f', 0o600), ('f', 0o4755), ('f', 0o2750), ('f', 0o000),
                       ('f', 0o1644), ('d', 0o1777), ('d', 0o700)]:
        os.chmod(f'{w.mnt}/{name}', mode)
        check_eq(oct(stat.S_IMODE(os.stat(f'{w.src}/{name}').st_mode)), oct(mode),
                 f'backing mode after chmod {name} {oct(mode)}')
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}')
    with opened(f'{w.mnt}/f') as fd:
        os.fchmod(fd, 0o640)
    check_eq(oct(stat.S_IMODE(os.stat(f'{w.src}/f').st_mode)), oct(0o640), 'mode after fchmod')


@case(root=True)
def chown(m):
    w = m.work('chown')
    w.setup(lambda d: (ufs.write_file(f'{d}/f'), ufs.write_file(f'{d}/suid'),
                       os.chmod(f'{d}/suid', 0o6755), os.symlink('f', f'{d}/l')))
    os.chown(f'{w.mnt}/f', 1234, 5678)
    check_eq(os.stat(f'{w.src}/f')[4:6], (1234, 5678), 'backing uid/gid after chown')
    os.chown(f'{w.mnt}/f', -1, 4321)
    check_eq(os.stat(f'{w.src}/f')[4:6], (1234, 4321), 'backing uid/gid after chown -1')
    os.chown(f'{w.mnt}/l', 777, 888, follow_symlinks=False)
    check_eq(os.lstat(f'{w.src}/l')[4:6], (777, 888), 'backing symlink owner after lchown')
    check_eq(os.stat(f'{w.src}/f')[4:6], (1234, 4321), 'lchown changed the target')
    with opened(f'{w.mnt}/f') as fd:
        os.fchown(fd, 0, 0)
    check_eq(os.stat(f'{w.src}/f')[4:6], (0, 0), 'backing uid/gid after fchown')
    # chown of a setuid file drops the set-id bits, like on the backing fs.
    w.both(lambda d: (os.chown(f'{d}/suid', 42, 42),
                      oct(stat.S_IMODE(os.stat(f'{d}/suid').st_mode))))
    for name in ('f', 'suid'):
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}')


def truncate_steps(d):
    results = []
    for size in (5000, 100000, 0, 7):
        os.truncate(f'{d}/f', size)
        results.append((os.stat(f'{d}/f').st_size, ufs.read_file(f'{d}/f')))
    for path, size in ((f'{d}/missing', 0), (f'{d}/sub', 0), (f'{d}/f', -1)):
        results.append(ufs.outcome(os.truncate, path, size))
    return results


@case
def truncate_path(m):
    w = m.work('truncate_path')
    w.setup(lambda d: (ufs.write_file(f'{d}/f', DATA[:10000]), os.mkdir(f'{d}/sub')))
    w.both(truncate_steps)
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


def ftruncate_steps(d):
    results = []
    with opened(f'{d}/f', os.O_RDWR) as fd:
        for size in (3000, 50000, 1):
            os.ftruncate(fd, size)
            results.append((os.fstat(fd).st_size, os.pread(fd, 100000, 0)))
    with opened(f'{d}/f', os.O_RDONLY) as fd:
        results.append(ufs.outcome(os.ftruncate, fd, 0))
    return results


@case
def ftruncate(m):
    w = m.work('ftruncate')
    w.setup(lambda d: ufs.write_file(f'{d}/f', DATA[:10000]))
    w.both(ftruncate_steps)
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


@case
def utimes_ns(m):
    w = m.work('utimes_ns')
    w.setup(make_tree)
    times = (1234567890123456789, 987654321987654321)
    for name, follow in (('file', True), ('dir', True), ('link', False)):
        os.utime(f'{w.mnt}/{name}', ns=times, follow_symlinks=follow)
        st = os.lstat(f'{w.src}/{name}')
        check_eq((st.st_atime_ns, st.st_mtime_ns), times, f'backing times of {name}')
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}', follow=False)


@case
def utimensat_now_omit(m):
    w = m.work('utimensat_now_omit')
    w.setup(make_tree)
    old = (1000000000123456789, 1100000000987654321)
    target = os.stat(f'{w.src}/file')
    for name, flags in (('link', sx.AT_SYMLINK_NOFOLLOW), ('file', 0)):
        path, back = f'{w.mnt}/{name}', f'{w.src}/{name}'
        os.utime(path, ns=old, follow_symlinks=not flags)
        before = time.time_ns()
        sx.utimensat(path, sx.UTIME_OMIT, sx.UTIME_NOW, flags)
        after = time.time_ns()
        st = os.lstat(back)
        check_eq(st.st_atime_ns, old[0], f'{name}: atime after UTIME_OMIT')
        check(before - 2 * 10**9 <= st.st_mtime_ns <= after + 2 * 10**9,
              f'{name}: mtime after UTIME_NOW is {st.st_mtime_ns}, not now ({before})')
        sx.utimensat(path, sx.UTIME_NOW, sx.UTIME_OMIT, flags)
        st2 = os.lstat(back)
        check_eq(st2.st_mtime_ns, st.st_mtime_ns, f'{name}: mtime after UTIME_OMIT')
        check(st2.st_atime_ns >= before - 2 * 10**9, f'{name}: atime not set by UTIME_NOW')
        sx.utimensat(path, sx.UTIME_OMIT, sx.UTIME_OMIT, flags)
        check_eq(os.lstat(back).st_ctime_ns, st2.st_ctime_ns, f'{name}: ctime after OMIT/OMIT')
        check_same_stat(path, back, follow=False)
        if name == 'link':
            ufs.check_stat(os.stat(f'{w.src}/file'), target, 'target of the link',
                           ('st_atime_ns', 'st_mtime_ns', 'st_ctime_ns'))


# --- symlinks and special files ----------------------------------------------

TARGETS = ['plain', '../up/x', '/abs/path/nowhere', 'a b\tc', 'x' * 1000,
           'd/' * 200 + 'end', os.fsdecode(b'\xff\xfe-not-utf8')]


@case
def readlink(m):
    w = m.work('readlink')
    for i, target in enumerate(TARGETS):
        os.symlink(target, f'{w.src}/l{i}')
        check_eq(os.readlink(f'{w.mnt}/l{i}'), target, f'readlink l{i}')
    w.setup(lambda d: ufs.write_file(f'{d}/file'))
    w.both(lambda d: os.readlink(f'{d}/file'))
    w.both(lambda d: os.readlink(f'{d}/missing'))


@case
def symlink(m):
    w = m.work('symlink')
    for i, target in enumerate(TARGETS + ['y' * 4095]):
        os.symlink(target, f'{w.mnt}/l{i}')
        check_eq(os.readlink(f'{w.src}/l{i}'), target, f'backing target of l{i}')
        st = os.lstat(f'{w.src}/l{i}')
        check_eq(oct(st.st_mode), oct(stat.S_IFLNK | 0o777), f'backing mode of l{i}')
        check_eq(st.st_size, len(target), f'backing size of l{i}')
        check_same_stat(f'{w.mnt}/l{i}', f'{w.src}/l{i}', follow=False)
    w.setup(lambda d: ufs.write_file(f'{d}/f'))
    w.both(lambda d: os.symlink('t', f'{d}/f'))
    w.both(lambda d: os.symlink('z' * 4096, f'{d}/toolong'))
    w.both(lambda d: os.symlink('t', f'{d}/missing/l'))


def make_fifos(d):
    os.mkfifo(f'{d}/p', 0o640)
    os.mknod(f'{d}/q', stat.S_IFIFO | 0o666)
    return [oct(os.lstat(f'{d}/{n}').st_mode) for n in 'pq']


@case
def mknod_fifo(m):
    w = m.work('mknod_fifo')
    w.both(make_fifos)
    for name in 'pq':
        check(stat.S_ISFIFO(os.lstat(f'{w.src}/{name}').st_mode), f'backing {name} is no FIFO')
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}')
    w.both(make_fifos)  # again: EEXIST


def make_devices(d):
    os.mknod(f'{d}/chr', stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.mknod(f'{d}/blk', stat.S_IFBLK | 0o600, os.makedev(7, 200))
    os.mknod(f'{d}/reg', stat.S_IFREG | 0o640)
    return [(oct(st.st_mode), st.st_rdev, st.st_size)
            for st in (os.lstat(f'{d}/{n}') for n in ('chr', 'blk', 'reg'))]


@case(root=True)
def mknod_device(m):
    # Device nodes are made and stat'ed, never opened.
    w = m.work('mknod_device')
    w.both(make_devices)
    check_eq(os.lstat(f'{w.src}/chr').st_rdev, os.makedev(1, 3), 'backing rdev of chr')
    check_eq(os.lstat(f'{w.mnt}/blk').st_rdev, os.makedev(7, 200), 'rdev of blk via mount')
    for name in ('chr', 'blk', 'reg'):
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}', follow=False)


# --- namespace --------------------------------------------------------------

def mkdir_steps(d):
    steps = [(os.mkdir, f'{d}/a', 0o750), (os.mkdir, f'{d}/a/b', 0o700),
             (os.mkdir, f'{d}/a', 0o755), (os.mkdir, f'{d}/s', 0o1777),
             (os.mkdir, f'{d}/missing/x', 0o755), (os.mkdir, f'{d}/f/x', 0o755)]
    ufs.write_file(f'{d}/f')
    out = [ufs.outcome(fn, *args) for fn, *args in steps]
    return out + [oct(os.stat(f'{d}/{n}').st_mode) for n in ('a', 'a/b', 's')]


@case
def mkdir(m):
    w = m.work('mkdir')
    w.both(mkdir_steps)
    check_same_stat(f'{w.mnt}/a', f'{w.src}/a')
    check_eq(os.stat(f'{w.mnt}/a').st_nlink, 3, 'nlink of a after mkdir a/b')
    w.same_tree()


def unlink_steps(d):
    steps = [(os.unlink, f'{d}/f'), (os.stat, f'{d}/f'), (os.unlink, f'{d}/f'),
             (os.unlink, f'{d}/dir'), (os.unlink, f'{d}/link'), (os.unlink, f'{d}/dangling')]
    return [str(ufs.outcome(fn, *args)) for fn, *args in steps]


@case
def unlink(m):
    w = m.work('unlink')
    w.setup(lambda d: (make_tree(d), ufs.write_file(f'{d}/f')))
    w.both(unlink_steps)
    check(not os.path.lexists(f'{w.src}/f'), 'backing file still exists after unlink')
    check(os.path.exists(f'{w.src}/file'), 'unlinking a symlink removed its target')
    w.same_tree()


def rmdir_steps(d):
    steps = [(os.rmdir, f'{d}/dir/sub1'), (os.rmdir, f'{d}/dir'), (os.rmdir, f'{d}/file'),
             (os.rmdir, f'{d}/missing'), (os.rmdir, f'{d}/dir/sub2/.'), (os.rmdir, f'{d}/dirlink')]
    return [str(ufs.outcome(fn, *args)) for fn, *args in steps]


@case
def rmdir(m):
    w = m.work('rmdir')
    w.setup(make_tree)
    out = w.both(rmdir_steps).value
    check_eq(out[:4], ['None', 'ENOTEMPTY', 'ENOTDIR', 'ENOENT'], 'rmdir results')
    check(not os.path.exists(f'{w.src}/dir/sub1'), 'backing dir still exists after rmdir')
    w.same_tree()


def rename_steps(d):
    for name in ('f1', 'f2', 'f3'):
        ufs.write_file(f'{d}/{name}', name.encode())
    for name in ('d1', 'd2', 'd3', 'd3/x', 'd4'):
        os.mkdir(f'{d}/{name}')
    os.link(f'{d}/f3', f'{d}/h3')
    steps = [('f1', 'g1'), ('g1', 'f2'), ('d1', 'd2'), ('d2', 'd3'), ('f2', 'd4'),
             ('d4', 'f3'), ('d3', 'd3/x/y'), ('missing', 'z'), ('f3', 'f3'), ('f3', 'h3'),
             ('f3', 'missing/z'), ('d2', 'd2/../d5')]
    return [str(ufs.outcome(os.rename, f'{d}/{a}', f'{d}/{b}')) for a, b in steps]


@case
def rename(m):
    w = m.work('rename')
    ufs.write_file(f'{w.src}/keep', b'k')
    ino = os.stat(f'{w.mnt}/keep').st_ino
    os.rename(f'{w.mnt}/keep', f'{w.mnt}/kept')
    check_eq(os.stat(f'{w.mnt}/kept').st_ino, ino, 'inode number after rename')
    check(not os.path.exists(f'{w.src}/keep'), 'backing old name still exists')
    os.unlink(f'{w.mnt}/kept')
    out = w.both(rename_steps).value
    check_eq(out[:4], ['None', 'None', 'None', 'ENOTEMPTY'], 'first rename results')
    w.same_tree()


def noreplace_steps(d):
    ufs.write_file(f'{d}/a', b'a')
    ufs.write_file(f'{d}/b', b'b')
    flag = sx.RENAME_NOREPLACE
    return [str(ufs.outcome(sx.renameat2, f'{d}/a', f'{d}/b', flag)),
            str(ufs.outcome(sx.renameat2, f'{d}/a', f'{d}/c', flag))]


# NFS has no renameat2 flags (nfs_rename: EINVAL for any flag); the VFS
# finds NOREPLACE's existing target before it asks.
def rename_flags_refused():
    return ufs.backing_is_nfs()


@case
def renameat2_noreplace(m):
    w = m.work('renameat2_noreplace')
    want = ['EEXIST', 'EINVAL'] if rename_flags_refused() else ['EEXIST', 'None']
    check_eq(w.both(noreplace_steps).value, want, 'RENAME_NOREPLACE results')
    check_eq(ufs.read_file(f'{w.src}/b'), b'b', 'the target was replaced')
    w.same_tree()


def exchange_steps(d):
    ufs.write_file(f'{d}/a', b'file a')
    os.mkdir(f'{d}/b')
    ufs.write_file(f'{d}/b/inner', b'in b')
    flag = sx.RENAME_EXCHANGE
    return [str(ufs.outcome(sx.renameat2, f'{d}/a', f'{d}/b', flag)),
            str(ufs.outcome(sx.renameat2, f'{d}/a', f'{d}/missing', flag))]


@case
def renameat2_exchange(m):
    w = m.work('renameat2_exchange')
    if rename_flags_refused():
        check_eq(w.both(exchange_steps).value, ['EINVAL', 'ENOENT'], 'RENAME_EXCHANGE results')
        w.same_tree()
        return
    check_eq(w.both(exchange_steps).value, ['None', 'ENOENT'], 'RENAME_EXCHANGE results')
    check_eq(ufs.read_file(f'{w.src}/a/inner'), b'in b', 'backing a/inner after exchange')
    check_eq(ufs.read_file(f'{w.mnt}/b'), b'file a', 'b through the mount after exchange')
    check_same_stat(f'{w.mnt}/a', f'{w.src}/a')
    check_same_stat(f'{w.mnt}/b', f'{w.src}/b')
    w.same_tree()


@case(root=True)
def renameat2_whiteout(m):
    w = m.work('renameat2_whiteout')
    w.setup(lambda d: ufs.write_file(f'{d}/a', b'a'))
    ref = ufs.outcome(sx.renameat2, f'{w.ref}/a', f'{w.ref}/b', sx.RENAME_WHITEOUT)
    if ref.err == E.EINVAL:
        raise ufs.Skip('the backing file system does not support RENAME_WHITEOUT')
    ufs.check_same(ufs.outcome(sx.renameat2, f'{w.mnt}/a', f'{w.mnt}/b', sx.RENAME_WHITEOUT),
                   ref, 'renameat2(RENAME_WHITEOUT)')
    st = os.lstat(f'{w.src}/a')
    check(stat.S_ISCHR(st.st_mode) and st.st_rdev == 0,
          f'whiteout is not a 0:0 char device: mode {oct(st.st_mode)}, rdev {st.st_rdev}')
    check_same_stat(f'{w.mnt}/a', f'{w.src}/a', follow=False)
    check_eq(ufs.read_file(f'{w.mnt}/b'), b'a', 'renamed file')
    w.same_tree()


def link_steps(d):
    ufs.write_file(f'{d}/f', b'data')
    os.mkdir(f'{d}/dir')
    steps = [('f', 'g'), ('f', 'g'), ('dir', 'dlink'), ('missing', 'x'), ('f', 'dir/h')]
    out = [str(ufs.outcome(os.link, f'{d}/{a}', f'{d}/{b}')) for a, b in steps]
    return out + [os.stat(f'{d}/f').st_nlink]


@case
def link(m):
    w = m.work('link')
    check_eq(w.both(link_steps).value, ['None', 'EEXIST', 'EPERM', 'ENOENT', 'None', 3],
             'link results')
    check_eq(os.stat(f'{w.src}/f').st_nlink, 3, 'backing st_nlink')
    check_eq(os.stat(f'{w.mnt}/g').st_ino, os.stat(f'{w.mnt}/f').st_ino, 'ino of the link')
    os.unlink(f'{w.mnt}/g')
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')
    check_eq(os.stat(f'{w.mnt}/f').st_nlink, 2, 'st_nlink after unlinking a link')


# --- open flags -------------------------------------------------------------

def excl_steps(d):
    os.symlink('nowhere', f'{d}/dangling')
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY

    def create(name):
        os.close(os.open(f'{d}/{name}', flags, 0o640))
        return oct(os.stat(f'{d}/{name}').st_mode)
    return [str(ufs.outcome(create, n)) for n in ('f', 'f', 'dangling')]


@case
def open_excl(m):
    w = m.work('open_excl')
    out = w.both(excl_steps).value
    check_eq(out[1:], ['EEXIST', 'EEXIST'], 'O_EXCL on an existing name')
    check(not os.path.exists(f'{w.src}/nowhere'), 'O_EXCL followed a dangling symlink')
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


def trunc_steps(d):
    ufs.write_file(f'{d}/f', DATA[:3000])
    ufs.write_file(f'{d}/g', DATA[:3000])
    os.close(os.open(f'{d}/f', os.O_WRONLY | os.O_TRUNC))
    os.close(os.open(f'{d}/g', os.O_RDONLY | os.O_TRUNC))
    return [os.stat(f'{d}/{n}').st_size for n in 'fg']


@case
def open_trunc(m):
    w = m.work('open_trunc')
    check_eq(w.both(trunc_steps).value, [0, 0], 'sizes after O_TRUNC')
    check_eq(os.stat(f'{w.src}/f').st_size, 0, 'backing size after O_TRUNC')
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


def append_steps(d):
    ufs.write_file(f'{d}/f', b'abc')
    with opened(f'{d}/f', os.O_WRONLY | os.O_APPEND) as fd:
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b'def')
        os.pwrite(fd, b'ghi', 0)
        pos = os.lseek(fd, 0, os.SEEK_CUR)
    return pos, ufs.read_file(f'{d}/f')


@case
def open_append(m):
    w = m.work('open_append')
    check_eq(w.both(append_steps).value[1], b'abcdefghi', 'contents after O_APPEND writes')
    check_eq(ufs.read_file(f'{w.src}/f'), b'abcdefghi', 'backing contents')


@case
def o_direct(m):
    w = m.work('o_direct')
    try:
        os.close(os.open(f'{w.ref}/probe', os.O_CREAT | os.O_WRONLY | os.O_DIRECT))
    except OSError as e:
        if e.errno == E.EINVAL:
            raise ufs.Skip('the backing file system refuses O_DIRECT') from None
        raise
    buf = mmap.mmap(-1, 8192)  # page aligned, as O_DIRECT wants
    buf[:] = DATA[:8192]
    with opened(f'{w.mnt}/f', os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644) as fd:
        check_eq(os.write(fd, buf), 8192, 'O_DIRECT write')
        check_eq(os.pwrite(fd, memoryview(buf)[:4096], 8192), 4096, 'O_DIRECT pwrite at 8192')
        back = mmap.mmap(-1, 12288)
        check_eq(os.preadv(fd, [back], 0), 12288, 'O_DIRECT preadv')
        check_eq(bytes(back), DATA[:8192] + DATA[:4096], 'O_DIRECT read back')
    check_eq(ufs.read_file(f'{w.src}/f'), DATA[:8192] + DATA[:4096], 'backing contents')
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


@case
def o_tmpfile(m):
    w = m.work('o_tmpfile')
    try:
        os.close(os.open(w.ref, os.O_TMPFILE | os.O_RDWR, 0o600))
    except OSError as e:
        if e.errno in (E.EOPNOTSUPP, E.EISDIR):
            raise ufs.Skip('the backing file system has no O_TMPFILE') from None
        raise
    with opened(w.mnt, os.O_TMPFILE | os.O_RDWR, 0o600) as fd:
        os.write(fd, DATA[:1000])
        st = os.fstat(fd)
        check_eq((st.st_nlink, st.st_size), (0, 1000), 'tmpfile (st_nlink, st_size)')
        check_eq(os.listdir(w.src), [], 'backing dir after O_TMPFILE')
        sx.linkat(f'/proc/self/fd/{fd}', f'{w.mnt}/named', sx.AT_SYMLINK_FOLLOW)
        check_eq(os.fstat(fd).st_nlink, 1, 'st_nlink after linkat')
    check_eq(ufs.read_file(f'{w.src}/named'), DATA[:1000], 'backing contents of the linked file')
    check_eq(oct(stat.S_IMODE(os.stat(f'{w.src}/named').st_mode)), oct(0o600), 'mode')
    check_same_stat(f'{w.mnt}/named', f'{w.src}/named')


def fixed_open(how, path):
    """tests/mount/helpers/fixed-open.c: open into an io_uring registered-file
    slot and close the slot, so the server sees CREATE/TMPFILE/OPEN and then
    RELEASE with no FLUSH in between (and RELEASE names no inode)."""
    r = subprocess.run([ufs.c_helper('helpers/fixed-open.c', '-luring'), how, path],
                       capture_output=True, text=True, timeout=30)
    check_eq((r.returncode, r.stderr.strip()), (0, ''), f'fixed-open {how} {path}')


@case(root=True)
def fixed_file_open_close(m):
    """CREATE then RELEASE with no request on the new inode between them,
    then FORGET and more creates: the inode store's LRU must stay sound (the
    ASan daemon once found a use-after-free here).  TMPFILE too, and OPEN,
    WRITE through a fixed file."""
    w = m.work('fixed_file_open_close')
    tmpfile = True
    try:
        os.close(os.open(w.ref, os.O_TMPFILE | os.O_RDWR, 0o600))
    except OSError as e:
        if e.errno not in (E.EOPNOTSUPP, E.EISDIR):
            raise
        tmpfile = False
    for i in range(20):
        fixed_open('create', f'{w.mnt}/new{i}')
        if tmpfile:
            fixed_open('tmpfile', w.mnt)
        if i % 2:
            fixed_open('write', f'{w.mnt}/new{i}')
        if i % 4 == 3:
            # FORGET the new inodes, then create more: the LRU is walked again.
            ufs.drop_caches(2)
            ufs.write_file(f'{w.mnt}/plain{i}', b'x')
            check_eq(os.listdir(w.mnt).count(f'plain{i}'), 1, 'plain file listed')
    ufs.drop_caches(2)
    for i in range(20):
        want = b'data' if i % 2 else b''
        check_eq(ufs.read_file(f'{w.mnt}/new{i}'), want, f'new{i} through the mount')
        check_eq(ufs.read_file(f'{w.src}/new{i}'), want, f'new{i} in the backing dir')
    check_eq(sorted(os.listdir(w.src)), sorted([f'new{i}' for i in range(20)] +
                                               [f'plain{i}' for i in range(3, 20, 4)]),
             'backing dir (no trace of the tmpfiles)')


# --- data -------------------------------------------------------------------

def rw_steps(d):
    out = []
    with opened(f'{d}/f', os.O_RDWR | os.O_CREAT) as fd:
        out.append(os.pwrite(fd, DATA[:100], 0))
        out.append(os.pwrite(fd, DATA[100:150], 5000))
        out.append(os.pread(fd, 200, 4990))
        out.append(os.pread(fd, 10, 5050))
        out.append(os.pread(fd, 10, 99999))
        out.append(os.lseek(fd, 10, os.SEEK_SET))
        out.append(os.write(fd, b'XYZ'))
        out.append(os.read(fd, 5))
        out.append(os.lseek(fd, 0, os.SEEK_END))
        big = ufs.pattern(1 << 20, seed=7)
        out.append(os.pwrite(fd, big, 123457))
        out.append(os.pread(fd, 1 << 20, 123457) == big)
        out.append(os.fstat(fd).st_size)
    return out


@case
def read_write_offsets(m):
    w = m.work('read_write_offsets')
    w.both(rw_steps)
    check_eq(ufs.read_file(f'{w.src}/f'), ufs.read_file(f'{w.ref}/f'), 'backing contents')
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


@case
def fsync_fdatasync(m):
    w = m.work('fsync_fdatasync')
    with opened(f'{w.mnt}/f', os.O_RDWR | os.O_CREAT) as fd:
        os.write(fd, DATA[:4096])
        check_eq(os.fsync(fd), None, 'fsync')
        check_eq(ufs.read_file(f'{w.src}/f'), DATA[:4096], 'backing contents after fsync')
        os.pwrite(fd, DATA[4096:8192], 4096)
        check_eq(os.fdatasync(fd), None, 'fdatasync')
        check_eq(ufs.read_file(f'{w.src}/f'), DATA[:8192], 'backing contents after fdatasync')


@case
def flush_close(m):
    w = m.work('flush_close')
    fd = os.open(f'{w.mnt}/f', os.O_WRONLY | os.O_CREAT)
    dup = os.dup(fd)
    os.write(fd, DATA[:3000])
    os.close(dup)
    os.write(fd, DATA[3000:6000])
    os.close(fd)
    check_eq(ufs.read_file(f'{w.src}/f'), DATA[:6000], 'backing contents after close')
    check_errno(E.EBADF, os.close, fd)
    check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


# --- directories ------------------------------------------------------------

def dents(path, bufsize=32768):
    with opened(path, os.O_RDONLY | os.O_DIRECTORY) as fd:
        return sx.getdents(fd, bufsize)


@case(root=True)
def readdir_types(m):
    w = m.work('readdir_types')
    make_tree(w.src)
    os.mkfifo(f'{w.src}/fifo')
    os.mknod(f'{w.src}/chr', stat.S_IFCHR | 0o600, os.makedev(1, 3))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(f'{w.src}/sock')
    got, want = dents(w.mnt), dents(w.src)
    check_eq(sorted(got), sorted(want), 'getdents64 (name, d_type, d_ino) vs backing')
    types = {name: sx.DT_NAMES[t] for name, t, _ in got}
    check_eq(types, {'.': 'dir', '..': 'dir', 'file': 'reg', 'dir': 'dir', 'link': 'lnk',
                     'dirlink': 'lnk', 'dangling': 'lnk', 'fifo': 'fifo', 'chr': 'chr',
                     'sock': 'sock'}, 'd_type of each entry')
    inos = {name: ino for name, _, ino in got}
    check_eq(inos['.'], os.stat(w.src).st_ino, "d_ino of '.'")
    check_eq(inos['..'], os.stat(m.src).st_ino, "d_ino of '..'")
    check_eq(sorted(dents(f'{w.mnt}/dir/sub1')), sorted(dents(f'{w.src}/dir/sub1')),
             'listing of an empty dir')


def create_names(chan, d, prefix, count):
    chan.send('started')
    for i in range(count):
        os.close(os.open(f'{d}/{prefix}{i:04d}', os.O_CREAT | os.O_WRONLY, 0o644))
    return count


@case
def readdir_while_creating(m):
    w = m.work('readdir_while_creating')
    # On NFS each create and each READDIR is a round trip to the server.
    scale = 5 if ufs.backing_is_nfs() else 1
    old = {f'old{i:04d}' for i in range(1000 // scale)}
    for name in old:
        os.close(os.open(f'{w.src}/{name}', os.O_CREAT | os.O_WRONLY, 0o644))
    new = {f'new{i:04d}' for i in range(1500 // scale)}
    start = time.monotonic()
    last = f'{w.src}/new{len(new) - 1:04d}'
    listings = 0
    with ufs.Child(create_names, w.mnt, 'new', len(new)) as child:
        child.recv()
        # List (with a small getdents buffer, so through many offsets) until
        # the other process is done, at least 3 times.
        while listings < 3 or (listings < 200 and not os.path.exists(last)):
            names = [n for n, _, _ in dents(w.mnt, 2048) if n not in ('.', '..')]
            check_listing(names, old, new)
            listings += 1
        check_eq(child.join(), len(new), 'files created by the other process')
    ufs.diag(f'{listings} listings while {len(new)} files were created, '
             f'{time.monotonic() - start:.1f} s')
    final = sorted(n for n, _, _ in dents(w.mnt, 2048) if n not in ('.', '..'))
    check_eq(final, sorted(old | new), 'final listing')
    check_eq(final, sorted(os.listdir(w.src)), 'final listing vs backing')


def check_listing(names, old, new):
    seen = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    garbage = [n for n in seen if n not in old and n not in new]
    check(not garbage, f'listing has names that never existed: {garbage[:5]}')
    dups = [n for n, k in seen.items() if k > 1]
    check(not dups, f'listing repeats names: {dups[:5]}')
    missing = sorted(old - set(seen))
    check(not missing, f'listing misses {len(missing)} pre-existing names: {missing[:5]}')


@case
def fsyncdir(m):
    w = m.work('fsyncdir')
    with opened(w.mnt, os.O_RDONLY | os.O_DIRECTORY) as fd:
        ufs.write_file(f'{w.mnt}/f', b'x')
        check_eq(os.fsync(fd), None, 'fsync of a directory')
        check_eq(os.fdatasync(fd), None, 'fdatasync of a directory')
    check(os.path.exists(f'{w.src}/f'), 'backing entry missing after fsyncdir')


@case
def statvfs(m):
    w = m.work('statvfs')
    for path, back in ((m.mnt, m.src), (w.mnt, w.src)):
        got, want = os.statvfs(path), os.statvfs(back)
        for field in ('f_bsize', 'f_frsize', 'f_blocks', 'f_files', 'f_namemax'):
            check_eq(getattr(got, field), getattr(want, field), f'statvfs {field}')
        for field, total in (('f_bfree', 'f_blocks'), ('f_bavail', 'f_blocks'),
                             ('f_ffree', 'f_files')):
            slack = getattr(want, total) // 100
            check(abs(getattr(got, field) - getattr(want, field)) <= slack,
                  f'statvfs {field}: mount {getattr(got, field)}, backing {getattr(want, field)}')


# --- xattrs -----------------------------------------------------------------

def xattr_steps(d):
    ufs.write_file(f'{d}/f', b'x')
    os.mkdir(f'{d}/dir')
    os.symlink('f', f'{d}/l')
    out = []
    for target in (f'{d}/f', f'{d}/dir'):
        steps = [
            (os.getxattr, target, 'user.a'),
            (os.setxattr, target, 'user.a', b'1'),
            (os.getxattr, target, 'user.a'),
            (os.setxattr, target, 'user.a', b'2', os.XATTR_CREATE),
            (os.setxattr, target, 'user.b', b'2', os.XATTR_REPLACE),
            (os.setxattr, target, 'user.a', b'22', os.XATTR_REPLACE),
            (os.setxattr, target, 'user.empty', b''),
            (os.setxattr, target, 'user.bin', bytes(range(256))),
            (os.setxattr, target, 'user.big', b'v' * 4000),
            (os.getxattr, target, 'user.a'),
            (os.getxattr, target, 'user.empty'),
            (os.getxattr, target, 'user.bin'),
            (os.getxattr, target, 'user.big'),
            (lambda p: sorted(os.listxattr(p)), target),
            (os.removexattr, target, 'user.a'),
            (os.removexattr, target, 'user.a'),
            (os.getxattr, target, 'user.a'),
            (lambda p: sorted(os.listxattr(p)), target),
        ]
        out += [str(ufs.outcome(fn, *args)) for fn, *args in steps]
    out.append(str(ufs.outcome(os.setxattr, f'{d}/l', 'user.x', b'1', follow_symlinks=False)))
    return out


@case
def xattr(m):
    w = m.work('xattr')
    out = w.both(xattr_steps).value
    check_eq(out[:6], ['ENODATA', 'None', "b'1'", 'EEXIST', 'ENODATA', 'None'], 'first steps')
    check_eq(os.getxattr(f'{w.src}/f', 'user.bin'), bytes(range(256)), 'backing user.bin')
    check_eq(sorted(os.listxattr(f'{w.mnt}/dir')), sorted(os.listxattr(f'{w.src}/dir')),
             'listxattr vs backing')


def erange_steps(d):
    ufs.write_file(f'{d}/f')
    os.setxattr(f'{d}/f', 'user.ten', b'0123456789')
    steps = [(sx.getxattr, 0), (sx.getxattr, 4), (sx.getxattr, 10), (sx.getxattr, 11),
             (sx.listxattr, 0), (sx.listxattr, 1)]
    out = []
    for fn, size in steps:
        args = (f'{d}/f', 'user.ten', size) if fn is sx.getxattr else (f'{d}/f', size)
        out.append(str(ufs.outcome(fn, *args)))
    return out


@case
def xattr_erange(m):
    w = m.work('xattr_erange')
    out = w.both(erange_steps).value
    check_eq(out[:4], ['10', 'ERANGE', "b'0123456789'", "b'0123456789'"], 'getxattr sizes')
    check_eq(out[5], 'ERANGE', 'listxattr with a 1-byte buffer')


# --- permissions ------------------------------------------------------------

MODES = (0o000, 0o100, 0o010, 0o001, 0o400, 0o200, 0o644, 0o755)
ACCESS = (os.F_OK, os.R_OK, os.W_OK, os.X_OK, os.R_OK | os.W_OK | os.X_OK)


def make_modes(d, uid=0):
    for mode in MODES:
        for kind in ('f', 'd'):
            path = f'{d}/{kind}{mode:03o}'
            (os.mkdir if kind == 'd' else ufs.write_file)(path)
            os.chmod(path, mode)
            os.chown(path, uid, -1)


def access_table(d):
    names = [f'{k}{mode:03o}' for mode in MODES for k in 'fd'] + ['missing']
    return [(n, a, os.access(f'{d}/{n}', a)) for n in names for a in ACCESS]


@case(root=True)
def access_root(m):
    w = m.work('access_root')
    w.setup(make_modes)
    table = w.both(access_table).value
    check((f'f{0o644:03o}', os.X_OK, False) in table and (f'f{0:03o}', os.R_OK, True) in table,
          'root access(2) results do not look like root: ' + repr(table[:10]))


@case(user=True, root=True, opts='allow_other')
def access_user(m):
    w = m.work('access_user')
    uid = ufs.test_user().pw_uid
    w.setup(make_modes)
    os.mkdir(f'{w.src}/mine')
    os.mkdir(f'{w.ref}/mine')
    w.setup(lambda d: make_modes(f'{d}/mine', uid))
    for sub in ('', '/mine'):
        got = ufs.as_user(access_table, w.mnt + sub)
        want = ufs.as_user(access_table, w.ref + sub)
        if ufs.backing_is_nfs() and sub:
            # The NFS server grants W_OK on a directory only with search
            # too (nfsd: ACCESS4_DELETE), where default_permissions has the
            # kernel answer from the mode bits; writing in one still needs
            # both (may_create), through the mount as natively.
            want = [(n, a, True if n in ('d200', 'd644') and a == os.W_OK else r)
                    for n, a, r in want]
        ufs.check_same(got, want, f'access(2) table as {ufs.TEST_USER} in {sub or "root dir"}')
    check(('f644', os.R_OK, True) in got and ('f644', os.W_OK, True) in got,
          f'{ufs.TEST_USER} cannot read/write its own 0644 file')


@case(root=True, opts='default_permissions=off')
def access_served_by_daemon(m):
    """Without default_permissions the kernel asks the daemon (FUSE_ACCESS).
    Only the mounting user gets in: allow_other needs default_permissions."""
    ufs.require_daemon('a bind mount has no FUSE_ACCESS')
    w = m.work('access_daemon')
    w.setup(make_modes)
    before = m.stats()['op_access']
    got_root = access_table(w.mnt)
    ufs.check_same(got_root, access_table(w.ref), 'access(2) table as root')
    check(m.stats()['op_access'] > before, 'no FUSE_ACCESS reached the daemon')


# --- space management -------------------------------------------------------

FALLOC_BASIC = [
    (0, 0, 65536),
    (sx.FALLOC_FL_KEEP_SIZE, 65536, 65536),
    (sx.FALLOC_FL_PUNCH_HOLE | sx.FALLOC_FL_KEEP_SIZE, 4096, 8192),
    (sx.FALLOC_FL_PUNCH_HOLE | sx.FALLOC_FL_KEEP_SIZE, 100, 50),
    (sx.FALLOC_FL_PUNCH_HOLE, 0, 4096),
    (0, 200000, 0),
]
FALLOC_EXTRA = [
    ('ZERO_RANGE', sx.FALLOC_FL_ZERO_RANGE, 1000, 10000),
    ('ZERO_RANGE|KEEP_SIZE', sx.FALLOC_FL_ZERO_RANGE | sx.FALLOC_FL_KEEP_SIZE, 60000, 20000),
    ('COLLAPSE_RANGE', sx.FALLOC_FL_COLLAPSE_RANGE, 4096, 8192),
    ('INSERT_RANGE', sx.FALLOC_FL_INSERT_RANGE, 8192, 4096),
]


def falloc(path, mode, offset, length):
    with opened(path, os.O_RDWR) as fd:
        sx.fallocate(fd, mode, offset, length)
        return os.fstat(fd).st_size


@case
def fallocate(m):
    w = m.work('fallocate')
    w.setup(lambda d: ufs.write_file(f'{d}/f', DATA[:16384]))
    for mode, off, length in FALLOC_BASIC:
        w.both(lambda d: falloc(f'{d}/f', mode, off, length),
               what=f'fallocate(mode {mode:#x}, {off}, {length})')
        check_eq(ufs.read_file(f'{w.src}/f'), ufs.read_file(f'{w.ref}/f'), 'contents')
        check_same_stat(f'{w.mnt}/f', f'{w.src}/f')


@case
def fallocate_extra_modes(m):
    """ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE where the backing fs has them.

    The kernel's FUSE client refuses the modes it does not forward with
    EOPNOTSUPP before the daemon sees them; such modes are listed in the SKIP
    reason, but the file must then be left untouched.
    """
    w = m.work('fallocate_extra_modes')
    not_forwarded = []
    for name, mode, off, length in FALLOC_EXTRA:
        w.setup(lambda d: ufs.write_file(f'{d}/{name}', DATA[:65536]))
        want = ufs.outcome(falloc, f'{w.ref}/{name}', mode, off, length)
        got = ufs.outcome(falloc, f'{w.mnt}/{name}', mode, off, length)
        if got != want and got.err == E.EOPNOTSUPP and not m.bind:
            check_eq(ufs.read_file(f'{w.src}/{name}'), DATA[:65536], f'{name}: file changed')
            not_forwarded.append(name)
            continue
        ufs.check_same(got, want, f'fallocate {name}')
        check_eq(ufs.read_file(f'{w.src}/{name}'), ufs.read_file(f'{w.ref}/{name}'),
                 f'contents after {name}')
        check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}')
    if not_forwarded:
        raise ufs.Skip('EOPNOTSUPP through the mount but supported by the backing fs: '
                       + ', '.join(not_forwarded))


def sparse_file(path):
    with opened(path, os.O_RDWR | os.O_CREAT) as fd:
        os.ftruncate(fd, 1 << 20)
        for off in (0, 256 << 10, (768 << 10) + 100):
            os.pwrite(fd, DATA[:4096], off)
        os.fsync(fd)


def seeks(path):
    size = os.stat(path).st_size
    offsets = (0, 1, 4095, 4096, 100000, 256 << 10, (256 << 10) + 4096, 800000,
               size - 1, size, size + 10)
    with opened(path) as fd:
        return [(off, whence, str(ufs.outcome(os.lseek, fd, off, whence)))
                for off in offsets for whence in (os.SEEK_DATA, os.SEEK_HOLE)]


@case
def lseek_data_hole(m):
    w = m.work('lseek_data_hole')
    sparse_file(f'{w.mnt}/f')
    got, want = seeks(f'{w.mnt}/f'), seeks(f'{w.src}/f')
    check_eq(got, want, 'SEEK_DATA/SEEK_HOLE offsets vs backing')
    size = 1 << 20
    check_eq(want[-4:], [(size, os.SEEK_DATA, 'ENXIO'), (size, os.SEEK_HOLE, 'ENXIO'),
                         (size + 10, os.SEEK_DATA, 'ENXIO'), (size + 10, os.SEEK_HOLE, 'ENXIO')],
             'lseek at and past EOF')
    check(any(r[2] not in ('ENXIO', str(r[0])) for r in got), 'no hole was ever reported')


def cfr_steps(d):
    ufs.write_file(f'{d}/in', DATA)
    ufs.write_file(f'{d}/out', b'')
    out = []
    with opened(f'{d}/in') as fin, opened(f'{d}/out', os.O_RDWR) as fout:
        out.append(os.copy_file_range(fin, fout, 5000, 100, 0))
        out.append(os.copy_file_range(fin, fout, 3000, 0, 20000))
        out.append(os.copy_file_range(fin, fout, 100, len(DATA) + 5, 0))
        os.lseek(fin, 1000, os.SEEK_SET)
        os.lseek(fout, 10, os.SEEK_SET)
        out.append(os.copy_file_range(fin, fout, 300))
        out.append((os.lseek(fin, 0, os.SEEK_CUR), os.lseek(fout, 0, os.SEEK_CUR)))
        out.append(str(ufs.outcome(os.copy_file_range, fout, fout, 1000, 0, 500)))
        with opened(f'{d}/in') as ro:
            out.append(str(ufs.outcome(os.copy_file_range, fin, ro, 10, 0, 0)))
    out.append(ufs.read_file(f'{d}/out'))
    return out


@case
def copy_file_range(m):
    w = m.work('copy_file_range')
    out = w.both(cfr_steps).value
    check_eq(out[:3], [5000, 3000, 0], 'copy_file_range return values')
    check_eq(ufs.read_file(f'{w.src}/out'), ufs.read_file(f'{w.ref}/out'), 'backing contents')
    check_same_stat(f'{w.mnt}/out', f'{w.src}/out')


STATX_MUST = (sx.STATX_TYPE | sx.STATX_MODE | sx.STATX_NLINK | sx.STATX_UID | sx.STATX_GID
              | sx.STATX_INO | sx.STATX_SIZE | sx.STATX_BLOCKS | sx.STATX_MTIME
              | sx.STATX_CTIME)
STATX_COMPARE = [('mode', sx.STATX_TYPE | sx.STATX_MODE), ('nlink', sx.STATX_NLINK),
                 ('uid', sx.STATX_UID), ('gid', sx.STATX_GID), ('ino', sx.STATX_INO),
                 ('size', sx.STATX_SIZE), ('blocks', sx.STATX_BLOCKS),
                 ('mtime', sx.STATX_MTIME), ('ctime', sx.STATX_CTIME),
                 ('btime', sx.STATX_BTIME)]


@case
def statx(m):
    w = m.work('statx')
    make_tree(w.src)
    os.mkfifo(f'{w.src}/fifo')
    for name, flags in (('file', 0), ('dir', 0), ('link', sx.AT_SYMLINK_NOFOLLOW),
                        ('link', 0), ('fifo', 0)):
        got = sx.statx(f'{w.mnt}/{name}', flags=flags)
        want = sx.statx(f'{w.src}/{name}', flags=flags)
        check_eq(hex(got['mask'] & STATX_MUST), hex(STATX_MUST), f'{name}: stx_mask')
        for field, bit in STATX_COMPARE:
            if got['mask'] & want['mask'] & bit:
                check_eq(got[field], want[field], f'{name} (flags {flags:#x}): stx_{field}')
        check_eq(got['rdev'], want['rdev'], f'{name}: stx_rdev')


@case
def syncfs(m):
    w = m.work('syncfs')
    with opened(f'{w.mnt}/f', os.O_RDWR | os.O_CREAT) as fd:
        os.write(fd, DATA[:5000])
        check_eq(sx.syncfs(fd), None, 'syncfs on a file')
    with opened(w.mnt, os.O_RDONLY | os.O_DIRECTORY) as fd:
        check_eq(sx.syncfs(fd), None, 'syncfs on a directory')
    check_eq(ufs.read_file(f'{w.src}/f'), DATA[:5000], 'backing contents after syncfs')


# --- ioctl, mmap, open-unlinked ---------------------------------------------

def getflags(fd):
    return int.from_bytes(fcntl.ioctl(fd, sx.FS_IOC_GETFLAGS, bytes(8))[:4], 'little')


def setflags(fd, flags):
    fcntl.ioctl(fd, sx.FS_IOC_SETFLAGS, flags.to_bytes(8, 'little'))


@case(root=True)
def ioctl_flags(m):
    w = m.work('ioctl_flags')
    ufs.write_file(f'{w.src}/f', b'data')
    with opened(f'{w.src}/f') as back, opened(f'{w.mnt}/f') as fd:
        base = ufs.outcome(getflags, back)
        if base.err in (E.ENOTTY, E.EOPNOTSUPP):
            raise ufs.Skip(f'the backing fs has no FS_IOC_GETFLAGS ({ufs.errname(base.err)})')
        check_eq(hex(getflags(fd)), hex(base.value), 'FS_IOC_GETFLAGS vs backing')
        native = ufs.outcome(setflags, back, base.value)
        if native.err in (E.ENOTTY, E.EOPNOTSUPP):
            # Flags to read but none to set (NFS): the mount says the same.
            ufs.check_same(ufs.outcome(setflags, fd, base.value), native, 'FS_IOC_SETFLAGS')
            return
        for flags in (base.value | sx.FS_NODUMP_FL, base.value | sx.FS_NOATIME_FL, base.value):
            os.stat(f'{w.mnt}/f')       # the kernel caches the attributes
            time.sleep(0.01)            # so the ctime that follows differs
            setflags(fd, flags)
            check_eq(hex(getflags(back)), hex(flags), 'backing flags after FS_IOC_SETFLAGS')
            check_eq(hex(getflags(fd)), hex(flags), 'flags through the mount')
            # The change moved ctime; the kernel must not show the one it cached.
            check_eq(os.stat(f'{w.mnt}/f').st_ctime_ns, os.fstat(back).st_ctime_ns,
                     'ctime through the mount after FS_IOC_SETFLAGS')


UNKNOWN_IOCTL = (ord('u') << 8) | 0xf3  # _IO('u', 0xf3): no driver knows it


@case
def ioctl_unknown(m):
    w = m.work('ioctl_unknown')
    w.setup(lambda d: ufs.write_file(f'{d}/f', b'data'))
    out = w.both(lambda d: unknown_ioctl(f'{d}/f'))
    check_eq(str(out), 'ENOTTY', 'unknown ioctl')


def unknown_ioctl(path):
    with opened(path) as fd:
        return fcntl.ioctl(fd, UNKNOWN_IOCTL, 0)


@case
def mmap_shared(m):
    w = m.work('mmap_shared')
    size = 3 * mmap.PAGESIZE
    ufs.write_file(f'{w.mnt}/f', DATA[:size])
    with opened(f'{w.mnt}/f', os.O_RDWR) as fd:
        with mmap.mmap(fd, size, mmap.MAP_SHARED) as mm:
            check_eq(mm[:], DATA[:size], 'mapped contents')
            mm[100:200] = b'Z' * 100
            mm[size - 10:] = b'E' * 10
            mm.flush()
        want = DATA[:100] + b'Z' * 100 + DATA[200:size - 10] + b'E' * 10
        check_eq(ufs.read_file(f'{w.src}/f'), want, 'backing contents after msync')
        check_eq(os.pread(fd, size, 0), want, 'read through the mount after msync')
        with mmap.mmap(fd, size, mmap.MAP_PRIVATE) as mm:
            mm[0:5] = b'PRIVA'
            mm.flush()
    check_eq(ufs.read_file(f'{w.src}/f'), want, 'MAP_PRIVATE write reached the backing file')


@case
def unlinked_open(m):
    w = m.work('unlinked_open')
    # NFS renames an open file that is unlinked to .nfsXXXX (silly rename)
    # and removes it at the last close; until then it has its link.
    nfs = ufs.backing_is_nfs()
    with opened(f'{w.mnt}/f', os.O_RDWR | os.O_CREAT) as fd:
        os.write(fd, b'abc')
        os.unlink(f'{w.mnt}/f')
        check_eq(os.fstat(fd).st_nlink, 1 if nfs else 0, 'st_nlink of an unlinked open file')
        check_eq([n for n in os.listdir(w.src) if not (nfs and n.startswith('.nfs'))], [],
                 'backing dir after unlink (hidden files?)')
        check_errno(E.ENOENT, os.stat, f'{w.mnt}/f')
        os.write(fd, b'def')
        check_eq(os.pread(fd, 100, 0), b'abcdef', 'read after unlink')
        os.ftruncate(fd, 2)
        check_eq(os.fstat(fd).st_size, 2, 'size after ftruncate of an unlinked file')
    # The kernel sends RELEASE after close(2) returns, and NFS removes its
    # .nfs file after that in the background: give both 10 s.
    deadline = time.monotonic() + (10 if nfs else 0)
    while os.listdir(w.src) and time.monotonic() < deadline:
        time.sleep(0.1)
    check_eq(os.listdir(w.src), [], 'backing dir after close')


# --- errno checks -----------------------------------------------------------

def read_some(path):
    with opened(path) as fd:
        return os.read(fd, 10)


def errno_steps(d, steps):
    return [f'{label}: {ufs.outcome(fn, *args)}' for label, fn, *args in steps]


def make_errno_tree(d):
    make_tree(d)
    os.symlink('loop2', f'{d}/loop1')
    os.symlink('loop1', f'{d}/loop2')
    for i in range(41):
        os.symlink(f'c{i + 1}' if i < 40 else 'file', f'{d}/c{i}')


def errno_case(name, steps_fn, expect):
    """Register a case comparing a list of failing calls with the reference."""
    @case(name=name)
    def run(m):
        w = m.work(name)
        w.setup(make_errno_tree)
        out = w.both(lambda d: errno_steps(d, steps_fn(d))).value
        for line, want in zip(out, expect):
            check(line.endswith(': ' + want), f'expected {want}: {line}')
    return run


errno_case('errno_enoent', lambda d: [
    ('stat', os.stat, f'{d}/missing'), ('open', os.open, f'{d}/missing', os.O_RDONLY),
    ('unlink', os.unlink, f'{d}/missing'), ('rmdir', os.rmdir, f'{d}/missing'),
    ('rename', os.rename, f'{d}/missing', f'{d}/x'), ('readlink', os.readlink, f'{d}/missing'),
    ('open dangling', os.open, f'{d}/dangling', os.O_RDONLY),
    ('mkdir under missing', os.mkdir, f'{d}/missing/x')],
    ['ENOENT'] * 8)

errno_case('errno_eexist', lambda d: [
    ('mkdir', os.mkdir, f'{d}/dir'), ('symlink', os.symlink, 'x', f'{d}/file'),
    ('link', os.link, f'{d}/file', f'{d}/link'), ('mkfifo', os.mkfifo, f'{d}/dir'),
    ('open excl', os.open, f'{d}/file', os.O_CREAT | os.O_EXCL | os.O_WRONLY)],
    ['EEXIST'] * 5)

errno_case('errno_enotdir', lambda d: [
    ('stat', os.stat, f'{d}/file/x'), ('open dir', os.open, f'{d}/file',
                                       os.O_RDONLY | os.O_DIRECTORY),
    ('listdir', os.listdir, f'{d}/file'), ('rmdir', os.rmdir, f'{d}/file'),
    ('rename dir over file', os.rename, f'{d}/dir', f'{d}/file')],
    ['ENOTDIR'] * 5)

errno_case('errno_eisdir', lambda d: [
    ('open wronly', os.open, f'{d}/dir', os.O_WRONLY), ('open rdwr', os.open, f'{d}/dir',
                                                        os.O_RDWR),
    ('unlink', os.unlink, f'{d}/dir'),
    ('rename file over dir', os.rename, f'{d}/file', f'{d}/dir'),
    ('read', read_some, f'{d}/dir')],
    ['EISDIR'] * 5)

errno_case('errno_eloop', lambda d: [
    ('O_NOFOLLOW', os.open, f'{d}/link', os.O_RDONLY | os.O_NOFOLLOW),
    ('loop stat', os.stat, f'{d}/loop1'), ('loop open', os.open, f'{d}/loop2', os.O_RDONLY),
    ('41 links', os.stat, f'{d}/c0')],
    ['ELOOP'] * 4)

errno_case('errno_enametoolong', lambda d: [
    ('create', os.open, f'{d}/{"n" * 256}', os.O_CREAT | os.O_WRONLY),
    ('stat', os.stat, f'{d}/{"n" * 256}'), ('mkdir', os.mkdir, f'{d}/{"n" * 256}'),
    ('symlink', os.symlink, 'x', f'{d}/{"n" * 256}'),
    ('255 bytes', lambda p: os.close(os.open(p, os.O_CREAT | os.O_WRONLY)), f'{d}/{"n" * 255}')],
    ['ENAMETOOLONG'] * 4 + ['None'])


@case
def errno_exdev(m):
    w = m.work('errno_exdev')
    ufs.write_file(f'{w.src}/f', b'x')
    ufs.write_file(f'{m.tmp}/outside', b'y')
    check_errno(E.EXDEV, os.rename, f'{w.mnt}/f', f'{m.tmp}/f')
    check_errno(E.EXDEV, os.link, f'{w.mnt}/f', f'{m.tmp}/g')
    check_errno(E.EXDEV, os.rename, f'{m.tmp}/outside', f'{w.mnt}/outside')
    check_errno(E.EXDEV, os.link, f'{m.tmp}/outside', f'{w.mnt}/outside')
    check(os.path.exists(f'{w.src}/f') and not os.path.exists(f'{m.tmp}/f'), 'file moved')


OLD_ATIME = 978307200 * 10**9       # 2001-01-01: any read on a relatime mount moves it


def atime_after_reads(opts):
    """(file atime, directory atime) of the backing file and directory
    after reading both through a mount with opts, and of their twins read
    natively; all start at OLD_ATIME."""
    def reads(top, back):
        check_eq(ufs.read_file(f'{top}/d/f'), DATA[:8192], 'contents')
        check_eq(os.listdir(f'{top}/d'), ['f'], 'listing')
        return os.stat(f'{back}/d/f').st_atime_ns, os.stat(f'{back}/d').st_atime_ns

    with ufs.Mount(opts=opts) as m:
        native = ufs.scratch_dir('atime-native')
        for top in (m.src, native):
            os.mkdir(f'{top}/d')
            ufs.write_file(f'{top}/d/f', DATA[:8192])
            for path in (f'{top}/d/f', f'{top}/d'):
                os.utime(path, ns=(OLD_ATIME, os.stat(path).st_mtime_ns))
        return reads(m.mnt, m.src), reads(native, native)


@case(mount=False, root=True)
def atime_mount_options():
    """noatime keeps the backing files' and directories' atimes, nodiratime
    the directories', as on a local mount with those options; relatime
    (the default) lets the backing mount move them.  strictatime, which
    would ask for more than the backing mount does, is refused."""
    ufs.require_daemon('the daemon keeps these options')
    (f, d), native = atime_after_reads('relatime')
    # Where native reads leave an atime (NFS: a read from the client's page
    # cache never reaches the server), reads through the mount leave it too.
    check_eq((f != OLD_ATIME, d != OLD_ATIME), tuple(t != OLD_ATIME for t in native),
             'relatime: (file, dir) atime moved, against native reads')
    if not ufs.backing_is_nfs():
        check(native[0] != OLD_ATIME and native[1] != OLD_ATIME,
              'relatime: native reads did not move the atimes (is the source mounted noatime?)')
    check_eq(atime_after_reads('noatime')[0], (OLD_ATIME, OLD_ATIME), 'noatime: (file, dir) atime')
    (f, d), native = atime_after_reads('nodiratime')
    check_eq(f != OLD_ATIME, native[0] != OLD_ATIME, 'nodiratime: file atime moved, as natively')
    check_eq(d, OLD_ATIME, 'nodiratime: directory atime')
    with ufs.Mount(opts='noatime') as m:
        check('noatime' in m.entry.options, f'noatime not in the mount options {m.entry.options}')
