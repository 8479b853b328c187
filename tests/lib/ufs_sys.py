# SPDX-License-Identifier: GPL-2.0-or-later
"""System calls the os module does not expose, through ctypes (Linux only).

Every wrapper raises OSError with the errno of the failed call, like the os
module does, so callers can compare errno values with ufs.outcome().
"""

import ctypes
import errno
import os
import platform
import struct
import time

libc = ctypes.CDLL(None, use_errno=True)

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_SYMLINK_FOLLOW = 0x400
AT_STATX_SYNC_AS_STAT = 0

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4

UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_INSERT_RANGE = 0x20

FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_NODUMP_FL = 0x00000040
FS_NOATIME_FL = 0x00000080

STATX_TYPE = 0x001
STATX_MODE = 0x002
STATX_NLINK = 0x004
STATX_UID = 0x008
STATX_GID = 0x010
STATX_ATIME = 0x020
STATX_MTIME = 0x040
STATX_CTIME = 0x080
STATX_INO = 0x100
STATX_SIZE = 0x200
STATX_BLOCKS = 0x400
STATX_BASIC_STATS = 0x7ff
STATX_BTIME = 0x800

# struct statx up to stx_dev_minor; the kernel fills all 256 bytes.
_STATX = struct.Struct('=IIQIIIHHQQQQ' + 'qIi' * 4 + 'IIII')
_STATX_FIELDS = ('mask', 'blksize', 'attributes', 'nlink', 'uid', 'gid',
                 'mode', '_pad', 'ino', 'size', 'blocks', 'attributes_mask')
_STATX_TIMES = ('atime', 'btime', 'ctime', 'mtime')

_SYSCALLS = {
    'x86_64': {'statx': 332, 'getdents64': 217},
    'aarch64': {'statx': 291, 'getdents64': 61},
}

DT_NAMES = {0: 'unknown', 1: 'fifo', 2: 'chr', 4: 'dir', 6: 'blk',
            8: 'reg', 10: 'lnk', 12: 'sock'}


def _syscall_nr(name):
    return _SYSCALLS[platform.machine()][name]


def _check(ret, what):
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), what)
    return ret


def _path(p):
    return os.fsencode(p)


class Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def _timespec(t):
    """A timespec from nanoseconds, or from UTIME_NOW / UTIME_OMIT."""
    if t in (UTIME_NOW, UTIME_OMIT):
        return Timespec(0, t)
    return Timespec(t // 10**9, t % 10**9)


class Flock(ctypes.Structure):
    _fields_ = [('l_type', ctypes.c_short), ('l_whence', ctypes.c_short),
                ('l_start', ctypes.c_int64), ('l_len', ctypes.c_int64),
                ('l_pid', ctypes.c_int)]


libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_int64]
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                           ctypes.c_char_p, ctypes.c_uint]
libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p,
                           ctypes.POINTER(Timespec), ctypes.c_int]
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                          ctypes.c_size_t]
libc.getxattr.restype = ctypes.c_ssize_t
libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.listxattr.restype = ctypes.c_ssize_t
libc.fcntl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(Flock)]
libc.syscall.restype = ctypes.c_long


def renameat2(old, new, flags):
    """renameat2(2) on two paths relative to the current directory."""
    ret = libc.renameat2(AT_FDCWD, _path(old), AT_FDCWD, _path(new), flags)
    _check(ret, old)


def linkat(old, new, flags):
    """linkat(2) on two paths relative to the current directory."""
    _check(libc.linkat(AT_FDCWD, _path(old), AT_FDCWD, _path(new), flags), old)


def utimensat(path, atime, mtime, flags=0):
    """utimensat(2); atime and mtime are nanoseconds, UTIME_NOW or UTIME_OMIT."""
    times = (Timespec * 2)(_timespec(atime), _timespec(mtime))
    _check(libc.utimensat(AT_FDCWD, _path(path), times, flags), path)


def getxattr(path, name, size):
    """getxattr(2) with a buffer of exactly size bytes (0 asks for the length).

    Returns the value, or its length when size is 0.
    """
    buf = ctypes.create_string_buffer(max(size, 1))
    ret = _check(libc.getxattr(_path(path), name.encode(), buf if size else None,
                               size), path)
    return buf.raw[:ret] if size else ret


def listxattr(path, size):
    """listxattr(2) with a buffer of exactly size bytes (0 asks for the length)."""
    buf = ctypes.create_string_buffer(max(size, 1))
    ret = _check(libc.listxattr(_path(path), buf if size else None, size), path)
    return buf.raw[:ret] if size else ret


def fallocate(fd, mode, offset, length):
    _check(libc.fallocate(fd, mode, offset, length), 'fallocate')


def syncfs(fd):
    _check(libc.syncfs(fd), 'syncfs')


def statx(path, mask=STATX_BASIC_STATS | STATX_BTIME, flags=0):
    """statx(2) through the raw system call; returns a dict of the fields.

    Times are in nanoseconds; 'rdev' and 'dev' are (major, minor) pairs.
    """
    buf = ctypes.create_string_buffer(256)
    ret = libc.syscall(ctypes.c_long(_syscall_nr('statx')), ctypes.c_int(AT_FDCWD),
                       ctypes.c_char_p(_path(path)), ctypes.c_int(flags),
                       ctypes.c_uint(mask), buf)
    _check(ret, path)
    values = _STATX.unpack_from(buf.raw)
    st = dict(zip(_STATX_FIELDS, values[:12]))
    for i, name in enumerate(_STATX_TIMES):
        sec, nsec, _ = values[12 + 3 * i:15 + 3 * i]
        st[name] = sec * 10**9 + nsec
    st['rdev'] = values[24:26]
    st['dev'] = values[26:28]
    return st


def getdents(fd, bufsize=32768):
    """Every entry of an open directory via getdents64(2), read with a
    buffer of bufsize bytes; a list of (name, d_type, d_ino).

    A small bufsize makes the kernel continue from d_off many times.
    """
    buf = ctypes.create_string_buffer(bufsize)
    entries = []
    while True:
        n = _check(libc.syscall(ctypes.c_long(_syscall_nr('getdents64')),
                                ctypes.c_int(fd), buf, ctypes.c_uint(bufsize)),
                   'getdents64')
        if n == 0:
            return entries
        raw, pos = buf.raw, 0
        while pos < n:
            ino, _off, reclen, dtype = struct.unpack_from('=QqHB', raw, pos)
            name = raw[pos + 19:pos + reclen].split(b'\0', 1)[0]
            entries.append((os.fsdecode(name), dtype, ino))
            pos += reclen


def lock(fd, cmd, ltype, start=0, length=0, whence=os.SEEK_SET):
    """fcntl(2) record lock call without Python's EINTR retry.

    Returns the struct flock after the call as (type, whence, start, len, pid).
    """
    fl = Flock(ltype, whence, start, length, 0)
    _check(libc.fcntl(fd, cmd, ctypes.byref(fl)), 'fcntl')
    return (fl.l_type, fl.l_whence, fl.l_start, fl.l_len, fl.l_pid)


# --- added for t_confine: file handles --------------------------------------

MAX_HANDLE_SZ = 128
AT_EMPTY_PATH = 0x1000


class _FileHandle(ctypes.Structure):
    _fields_ = [('handle_bytes', ctypes.c_uint), ('handle_type', ctypes.c_int),
                ('f_handle', ctypes.c_ubyte * MAX_HANDLE_SZ)]


libc.name_to_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                   ctypes.POINTER(_FileHandle),
                                   ctypes.POINTER(ctypes.c_int), ctypes.c_int]
libc.open_by_handle_at.argtypes = [ctypes.c_int, ctypes.POINTER(_FileHandle), ctypes.c_int]


def name_to_handle_at(path, flags=0, dirfd=AT_FDCWD):
    """name_to_handle_at(2): returns (handle_type, handle bytes, mount id)."""
    fh = _FileHandle(MAX_HANDLE_SZ, 0)
    mount_id = ctypes.c_int(0)
    _check(libc.name_to_handle_at(dirfd, _path(path), ctypes.byref(fh),
                                  ctypes.byref(mount_id), flags), path)
    return fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes]), mount_id.value


def open_by_handle_at(mount_fd, handle, flags):
    """open_by_handle_at(2) with a handle from name_to_handle_at(); a descriptor."""
    handle_type, data, _ = handle
    fh = _FileHandle(len(data), handle_type)
    ctypes.memmove(fh.f_handle, data, len(data))
    return _check(libc.open_by_handle_at(mount_fd, ctypes.byref(fh), flags),
                  'open_by_handle_at')


def pidfd_getfd(pid, fd):
    """pidfd_getfd(2) (syscall 438 on every architecture): a duplicate of
    process pid's descriptor fd."""
    pidfd = os.pidfd_open(pid)
    try:
        return _check(libc.syscall(438, pidfd, fd, 0), f'pidfd_getfd {pid} {fd}')
    finally:
        os.close(pidfd)


def hold_rings(pid):
    """Duplicates of every io_uring descriptor of process pid: while they
    are open, its rings' last reference is ours."""
    held = []
    for name in os.listdir(f'/proc/{pid}/fd'):
        try:
            if os.readlink(f'/proc/{pid}/fd/{name}') != 'anon_inode:[io_uring]':
                continue
        except FileNotFoundError:
            continue
        held.append(pidfd_getfd(pid, int(name)))
    return held


OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_IDMAP = 0x00100000
CLONE_NEWUSER = 0x10000000


class _MountAttr(ctypes.Structure):
    _fields_ = [('attr_set', ctypes.c_uint64), ('attr_clr', ctypes.c_uint64),
                ('propagation', ctypes.c_uint64), ('userns_fd', ctypes.c_uint64)]


def _userns_fd(id_map):
    """A descriptor of a new user namespace whose uid_map and gid_map are
    id_map ("INSIDE OUTSIDE COUNT" lines): a child unshares it, we write
    its maps as root and open it, and the child goes."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            if libc.unshare(CLONE_NEWUSER) == 0:
                os.read(r, 1)       # until the parent has the namespace open
        finally:
            os._exit(0)
    os.close(r)
    try:
        deadline = time.monotonic() + 10
        while os.readlink(f'/proc/{pid}/ns/user') == os.readlink('/proc/self/ns/user'):
            if time.monotonic() > deadline:
                raise OSError(errno.EPERM, 'the child could not unshare a user namespace')
            time.sleep(0.005)
        for kind in ('uid_map', 'gid_map'):
            with open(f'/proc/{pid}/{kind}', 'w') as f:
                f.write(id_map)
        return os.open(f'/proc/{pid}/ns/user', os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(w)
        os.waitpid(pid, 0)


def idmapped_bind(src, dst, id_map):
    """Bind src at dst as an idmapped mount (open_tree, mount_setattr with
    MOUNT_ATTR_IDMAP, move_mount; what mount -o X-mount.idmap does): an
    on-disk id k shows as the host id the namespace's map gives its id k.
    Raises OSError with the errno of the call that failed."""
    tree = _check(libc.syscall(428, AT_FDCWD, _path(src), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
                  f'open_tree {src}')
    try:
        ns = _userns_fd(id_map)
        try:
            attr = _MountAttr(attr_set=MOUNT_ATTR_IDMAP, userns_fd=ns)
            _check(libc.syscall(442, tree, b'', AT_EMPTY_PATH, ctypes.byref(attr),
                                ctypes.sizeof(attr)), f'mount_setattr MOUNT_ATTR_IDMAP {src}')
        finally:
            os.close(ns)
        _check(libc.syscall(429, tree, b'', AT_FDCWD, _path(dst), MOVE_MOUNT_F_EMPTY_PATH),
               f'move_mount {dst}')
    finally:
        os.close(tree)
