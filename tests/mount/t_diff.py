# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeded differential test: random operations over a small namespace, applied
identically through the mount and on the reference directory.  Every result
(value or errno) must match, and every 500 operations and at the end the two
trees must be identical.

UFS_SEED=N replays a run (the seed is in the case name); UFS_DIFF_OPS=N
changes the number of operations (default 10000).
"""

import errno
import os
import random
import stat

import ufs
import ufs_sys as sx
from ufs import case, opened

SEED = int(os.environ.get('UFS_SEED') or random.SystemRandom().randrange(1 << 32))
OPS = int(os.environ.get('UFS_DIFF_OPS') or 10000)
CHECK_EVERY = 500

TOP = ['a', 'b', 'c', 'd', 'e']
SUBS = [f'{t}/{s}' for t in TOP for s in ('x', 'y', 'z')]
PATHS = TOP + SUBS
# Symlink targets that stay inside the tree: relative, '..' only one level down.
TARGETS_TOP = ['a', 'b', 'c/x', 'd/y', 'missing', 'e/z/deeper']
TARGETS_SUB = ['x', 'y', '../a', '../b/z', '.', '..', '../missing']
XATTRS = ['user.a', 'user.b', 'user.c']
MODES = [0o644, 0o600, 0o755, 0o700, 0o444, 0o000, 0o1777, 0o2755]


# --- operations: fn(root, *args) -> comparable value ------------------------

def op_create(root, p, flags, mode):
    os.close(os.open(f'{root}/{p}', os.O_CREAT | os.O_WRONLY | flags, mode))


def op_write(root, p, flags, off, length, seed):
    with opened(f'{root}/{p}', os.O_WRONLY | flags) as fd:
        return os.pwrite(fd, ufs.pattern(length, seed), off)


def op_read(root, p, off, length):
    with opened(f'{root}/{p}') as fd:
        return os.pread(fd, length, off)


def op_truncate(root, p, size):
    os.truncate(f'{root}/{p}', size)


def op_rename(root, p, q, flags):
    if flags:
        sx.renameat2(f'{root}/{p}', f'{root}/{q}', flags)
    else:
        os.rename(f'{root}/{p}', f'{root}/{q}')


def op_link(root, p, q):
    os.link(f'{root}/{p}', f'{root}/{q}')


def op_unlink(root, p):
    os.unlink(f'{root}/{p}')


def op_mkdir(root, p, mode):
    os.mkdir(f'{root}/{p}', mode)


def op_rmdir(root, p):
    os.rmdir(f'{root}/{p}')


def op_symlink(root, target, p):
    os.symlink(target, f'{root}/{p}')


def op_readlink(root, p):
    return os.readlink(f'{root}/{p}')


def op_chmod(root, p, mode):
    os.chmod(f'{root}/{p}', mode)


def op_utime(root, p, atime, mtime):
    os.utime(f'{root}/{p}', ns=(atime, mtime))
    st = os.stat(f'{root}/{p}')
    return st.st_atime_ns, st.st_mtime_ns


def op_setxattr(root, p, name, value, flags):
    os.setxattr(f'{root}/{p}', name, value, flags)


def op_removexattr(root, p, name):
    os.removexattr(f'{root}/{p}', name)


def op_getxattr(root, p, name):
    return os.getxattr(f'{root}/{p}', name)


def op_listxattr(root, p):
    return sorted(os.listxattr(f'{root}/{p}'))


def op_punch(root, p, off, length):
    with opened(f'{root}/{p}', os.O_RDWR) as fd:
        sx.fallocate(fd, sx.FALLOC_FL_PUNCH_HOLE | sx.FALLOC_FL_KEEP_SIZE, off, length)
        return os.fstat(fd).st_size


def op_copy(root, p, q, flags, off_in, off_out, length):
    with opened(f'{root}/{p}') as fin, opened(f'{root}/{q}', os.O_WRONLY | flags) as fout:
        return os.copy_file_range(fin, fout, length, off_in, off_out)


def op_seek(root, p, off, whence):
    with opened(f'{root}/{p}') as fd:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            # lseek on a FUSE directory is the kernel's, not the backing fs's.
            raise IsADirectoryError(errno.EISDIR, 'directory')
        return os.lseek(fd, off, whence)


def op_readdir(root, p):
    with os.scandir(f'{root}/{p}') as it:
        return sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink(),
                       e.is_file(follow_symlinks=False)) for e in it)


def op_stat(root, p):
    st = os.lstat(f'{root}/{p}')
    kind = stat.S_IFMT(st.st_mode)
    return kind, stat.S_IMODE(st.st_mode), None if stat.S_ISDIR(kind) else st.st_size, st.st_nlink


# --- the generator: weights and argument choices -----------------------------

def _offset(r):
    return r.choice([0, r.randrange(65536), r.randrange(16) * 4096])


def _length(r):
    return r.choice([1, r.randrange(1, 8192), 4096, r.randrange(1, 3) * 4096])


def _creat(r):
    return r.choice([0, os.O_CREAT])


def _path(r):
    return r.choice(PATHS)


def _file_path(r):
    """Mostly second-level names, so that files and directories mix."""
    return r.choice(SUBS if r.random() < 0.75 else TOP)


def _dir_path(r):
    return r.choice(TOP if r.random() < 0.7 else SUBS)


def _target(r, p):
    return r.choice(TARGETS_SUB if '/' in p else TARGETS_TOP)


GENERATORS = [
    (12, op_write, lambda r: (_file_path(r), _creat(r), _offset(r), _length(r),
                              r.randrange(1 << 30))),
    (10, op_create, lambda r: (_file_path(r), r.choice([0, os.O_EXCL, os.O_TRUNC]),
                               r.choice([0o644, 0o600, 0o755]))),
    (8, op_read, lambda r: (_file_path(r), _offset(r), _length(r))),
    (4, op_truncate, lambda r: (_file_path(r), r.choice([0, r.randrange(70000), 4096]))),
    (8, op_rename, lambda r: (_path(r), _path(r), r.choice([0, 0, 0, sx.RENAME_NOREPLACE,
                                                             sx.RENAME_EXCHANGE]))),
    (3, op_link, lambda r: (_path(r), _path(r))),
    (6, op_unlink, lambda r: (_path(r),)),
    (5, op_mkdir, lambda r: (_dir_path(r), r.choice([0o755, 0o700, 0o777]))),
    (4, op_rmdir, lambda r: (_dir_path(r),)),
    (3, op_symlink, lambda r: (lambda p: (_target(r, p), p))(_path(r))),
    (2, op_readlink, lambda r: (_path(r),)),
    (3, op_chmod, lambda r: (_path(r), r.choice(MODES))),
    (2, op_utime, lambda r: (_path(r), r.randrange(1 << 60), r.randrange(1 << 60))),
    (4, op_setxattr, lambda r: (_path(r), r.choice(XATTRS), ufs.pattern(r.randrange(64), 1),
                                r.choice([0, 0, os.XATTR_CREATE, os.XATTR_REPLACE]))),
    (2, op_removexattr, lambda r: (_path(r), r.choice(XATTRS))),
    (2, op_getxattr, lambda r: (_path(r), r.choice(XATTRS))),
    (1, op_listxattr, lambda r: (_path(r),)),
    (3, op_punch, lambda r: (_file_path(r), _offset(r), _length(r))),
    (3, op_copy, lambda r: (_file_path(r), _file_path(r), _creat(r), _offset(r), _offset(r),
                            _length(r))),
    (3, op_seek, lambda r: (_file_path(r), _offset(r),
                            r.choice([os.SEEK_DATA, os.SEEK_HOLE]))),
    (3, op_readdir, lambda r: (r.choice(TOP + ['.']),)),
    (4, op_stat, lambda r: (_path(r),)),
]


def operations(seed, count):
    """The seeded sequence of (fn, args)."""
    r = random.Random(seed)
    weights = [w for w, _, _ in GENERATORS]
    for _ in range(count):
        _, fn, gen = r.choices(GENERATORS, weights)[0]
        yield fn, gen(r)


def describe(fn, args):
    return f'{fn.__name__[3:]}{tuple(args)!r}'


def replay_hint(i, fn, args, history):
    recent = '\n'.join(f'  #{j}: {text}' for j, text in history[-10:])
    return (f'seed {SEED}, op #{i}: {describe(fn, args)}\n'
            f'replay: UFS_SEED={SEED} tests/mount/run.py t_diff\nlast operations:\n{recent}')


@case(name=f'random_ops[seed={SEED}]', timeout=120)
def random_ops(m):
    w = m.work('diff')
    history = []
    # On NFS every operation is a round trip to the server, twice over.
    ops = OPS // 5 if ufs.backing_is_nfs() and not os.environ.get('UFS_DIFF_OPS') else OPS
    for i, (fn, args) in enumerate(operations(SEED, ops)):
        history.append((i, describe(fn, args)))
        got = ufs.outcome(fn, w.mnt, *args)
        want = ufs.outcome(fn, w.ref, *args)
        if got != want:
            raise AssertionError(f'mount gave {got}, reference gave {want}\n'
                                 + replay_hint(i, fn, args, history))
        if (i + 1) % CHECK_EVERY == 0 or i + 1 == ops:
            try:
                w.same_tree(f'after op #{i}')
            except AssertionError as e:
                e.add_note(replay_hint(i, fn, args, history))
                raise
