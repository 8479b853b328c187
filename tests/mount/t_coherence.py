# SPDX-License-Identifier: GPL-2.0-or-later
"""Coherence with changes made beside the mount (issue 26): every kind of
change made directly in SOURCE, after the mount has cached the state it
changes, is visible through the mount within a loose bound.

The mounts cache for 30 s (entry_timeout, attr_timeout, negative_timeout:
options every daemon knows), so a daemon that does not learn of outside
changes serves the old state for 30 s and every case here fails at its
bound (2 s; 10 s in the emulated 7.3 guest). A daemon that watches the
backing file system (fanotify) and tells the kernel (FUSE_NOTIFY_INVAL_ENTRY,
INVAL_INODE, INC_EPOCH) passes in a few milliseconds: each case prints the
time the change took to show as a `# coherence-latency` line, for p50/p99.

Each case first caches through the mount what the change will make stale:
the names (a stat), the names looked up as missing (a negative entry), the
attributes of the file and of its directory, and where it matters the
contents (a read, a descriptor kept open, a mapping). Then it changes
SOURCE directly and polls the mount until it shows what SOURCE shows.
The policy cases (defaults, echoes, a flood of events, the `cache=`
setting) are in t_coherence_policy.py.
"""

import contextlib
import functools
import mmap
import os
import shutil
import subprocess
import time

import ufs
from ufs import case, check

LONG = 'entry_timeout=30,attr_timeout=30,negative_timeout=30'
OLD = 1_000_000_000          # 2001: a time any change moves
NOBODY = 65534


# O_PATH descriptors on what a case cached, closed when it ends (pinning_case).
_pins = []


def release():
    """Close the descriptors pin() opened."""
    while _pins:
        os.close(_pins.pop())


@contextlib.contextmanager
def held():
    """A block whose pins are released at its end (inside a Mount's block:
    a pinned mount cannot be unmounted)."""
    try:
        yield
    finally:
        release()


def releasing(fn):
    """fn, releasing the pins when it ends."""
    @functools.wraps(fn)
    def run(*args):
        try:
            fn(*args)
        finally:
            release()
    return run


def pinning_case(fn):
    """A case on the shared long-cache mount whose cached entries are held
    (O_PATH) for its duration: other suites on the machine drop the
    kernel's caches (drop_caches) at any time, and a dropped entry is looked
    up afresh, which would let a daemon that never invalidates pass."""
    return case(opts=LONG)(releasing(fn))


def pin(path):
    try:
        _pins.append(os.open(path, os.O_PATH | os.O_NOFOLLOW))
    except OSError:
        pass


def bound():
    """Seconds a change may take to show: loose, far below the 30 s a
    daemon without coherence serves the old state for."""
    return 10.0 if os.environ.get('UFS_VM_GUEST') else 2.0


def seen(fn, *args):
    """fn(*args), or the errno's name it failed with."""
    try:
        return fn(*args)
    except OSError as e:
        return ufs.errname(e.errno)


def attrs(path):
    """What the mount must carry from the backing inode (no atime: reads
    through the mount move it), or the errno's name."""
    def get():
        st = os.lstat(path)
        return tuple(getattr(st, f) for f in ufs.STAT_FIELDS if f != 'st_blocks')
    return seen(get)


def shown(value):
    """A value for a message: long bytes as their length and runs."""
    if isinstance(value, bytes) and len(value) > 64:
        runs, i = [], 0
        while i < len(value) and len(runs) < 8:
            j = i
            while j < len(value) and value[j] == value[i]:
                j += 1
            runs.append(f'{j - i}x{bytes([value[i]])!r}')
            i = j
        return f'{len(value)} bytes: ' + ' '.join(runs) + (' ...' if i < len(value) else '')
    return repr(value)


def eventually(what, look, want, limit=None):
    """Poll look() until it returns want() (both re-evaluated: want reads
    SOURCE); print and return the latency in seconds."""
    limit = limit or bound()
    start = time.monotonic()
    while True:
        got, expect = look(), want()
        elapsed = time.monotonic() - start
        if got == expect:
            ufs.diag(f'coherence-latency {what}: {elapsed * 1000:.2f} ms')
            return elapsed
        if elapsed > limit:
            raise AssertionError(f'{what}: the mount still shows {shown(got)} {limit:.0f} s '
                                 f'after the change in SOURCE, which shows {shown(expect)} '
                                 '(stale; the mount caches for 30 s)')
        time.sleep(0.001)


def same(what, mnt_path, src_path, fn=attrs):
    """The mount shows fn(mnt_path) == fn(src_path) within the bound."""
    return eventually(what, lambda: fn(mnt_path), lambda: fn(src_path))


def listing(path):
    return seen(lambda: sorted(os.listdir(path)))


def content(path):
    return seen(ufs.read_file, path)


def require_watchable():
    """Skip where no daemon can be coherent: SOURCE on NFS (the guest-nfs
    variant), whose changes by the server or other clients fanotify never
    sees, so the daemon keeps timeouts there."""
    if ufs.backing_is_nfs():
        raise ufs.Skip('SOURCE is on NFS: fanotify does not see changes made by the server '
                       'or other clients, so coherence cannot be had there')


def prepare(m, name, files=None, dirs=()):
    """A case directory in SOURCE with old times (so any change in it
    moves them), cached through the mount: the directory's attributes and
    listing and each file's attributes and contents.  Returns (src, mnt)."""
    require_watchable()
    w = m.work(name)
    for d in dirs:
        os.mkdir(f'{w.src}/{d}')
        os.utime(f'{w.src}/{d}', (OLD, OLD))
    for f, data in (files or {}).items():
        ufs.write_file(f'{w.src}/{f}', data)
        os.utime(f'{w.src}/{f}', (OLD, OLD))
    os.utime(w.src, (OLD, OLD))
    cache(w.mnt, *(list(files or {}) + list(dirs)))
    return w.src, w.mnt


def cache(mnt, *names, missing=(), hold=True):
    """Look names up through the mount (and read files), and look up the
    missing ones so that the kernel caches them as missing.  hold: pin()
    the directory and the names (for cases that release them, releasing(),
    before their mount goes)."""
    # Reads and listings first: each marks the atime stale in the kernel
    # (fuse_invalidate_atime), and a stat (which asks for the atime) then
    # asks the daemon; the stats after them cache all the attributes.
    listing(mnt)
    for n in names:
        if os.path.isfile(f'{mnt}/{n}'):
            content(f'{mnt}/{n}')
    attrs(mnt)
    for n in names:
        attrs(f'{mnt}/{n}')
    if hold:
        for p in [mnt] + [f'{mnt}/{n}' for n in names]:
            pin(p)
    for n in missing:
        got = attrs(f'{mnt}/{n}')
        check(got == 'ENOENT', f'{n}: looked up through the mount before the change: {got!r}')
    # A change must not share the coarse clock's tick with the cached times.
    time.sleep(0.01)


def names_and_dir(what, src, mnt, *names):
    """Each name and the directory itself show as in SOURCE."""
    for n in names:
        same(f'{what} ({n})', f'{mnt}/{n}', f'{src}/{n}')
    same(f'{what} (the directory\'s attributes)', mnt, src)
    same(f'{what} (the listing)', mnt, src, listing)


@pinning_case
def outside_create(m):
    """A file created in SOURCE: listed, and its directory's mtime moved."""
    src, mnt = prepare(m, 'create', {'a': b'a'})
    ufs.write_file(f'{src}/new', b'new')
    names_and_dir('create', src, mnt, 'new')
    check(content(f'{mnt}/new') == b'new', 'the new file\'s contents')


@pinning_case
def outside_create_missing_name(m):
    """A name the mount looked up as missing (a negative entry), then
    created in SOURCE."""
    src, mnt = prepare(m, 'neg')
    cache(mnt, missing=['x'])
    ufs.write_file(f'{src}/x', b'here')
    same('create of a name cached as missing', f'{mnt}/x', f'{src}/x')
    same('create of a name cached as missing (contents)', f'{mnt}/x', f'{src}/x', content)


@pinning_case
def outside_unlink(m):
    src, mnt = prepare(m, 'unlink', {'f': b'gone soon'})
    os.unlink(f'{src}/f')
    names_and_dir('unlink', src, mnt, 'f')


@pinning_case
def outside_rename(m):
    """Old name gone, new name present (it was cached as missing), the
    same inode and contents."""
    src, mnt = prepare(m, 'rename', {'a': b'renamed'})
    cache(mnt, missing=['b'])
    os.rename(f'{src}/a', f'{src}/b')
    names_and_dir('rename', src, mnt, 'a', 'b')
    same('rename (contents)', f'{mnt}/b', f'{src}/b', content)


@pinning_case
def outside_rename_over(m):
    """A file replaced by rename over it: the mount shows the new inode
    and its contents, not the old file's."""
    src, mnt = prepare(m, 'over', {'a': b'the new one', 'b': b'the old one'})
    os.rename(f'{src}/a', f'{src}/b')
    names_and_dir('rename over', src, mnt, 'a', 'b')
    same('rename over (contents)', f'{mnt}/b', f'{src}/b', content)


@pinning_case
def outside_chmod(m):
    src, mnt = prepare(m, 'chmod', {'f': b'x'})
    os.chmod(f'{src}/f', 0o640)
    same('chmod', f'{mnt}/f', f'{src}/f')


@pinning_case
def outside_chown(m):
    if os.geteuid() != 0:
        raise ufs.Skip('needs root (chown to nobody)')
    src, mnt = prepare(m, 'chown', {'f': b'x'})
    os.chown(f'{src}/f', NOBODY, NOBODY)
    same('chown', f'{mnt}/f', f'{src}/f')


@pinning_case
def outside_utimes(m):
    src, mnt = prepare(m, 'utimes', {'f': b'x'})
    os.utime(f'{src}/f', ns=(OLD * 2 * 10**9 + 7, OLD * 2 * 10**9 + 7))
    same('utimes', f'{mnt}/f', f'{src}/f')


@pinning_case
def outside_truncate(m):
    src, mnt = prepare(m, 'truncate', {'f': ufs.pattern(20000)})
    os.truncate(f'{src}/f', 5000)
    same('truncate', f'{mnt}/f', f'{src}/f')
    same('truncate (contents)', f'{mnt}/f', f'{src}/f', content)


def overwrite(path, data, offset=0):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def append(path, data):
    with open(path, 'ab') as f:
        f.write(data)


@pinning_case
def outside_write(m):
    """Bytes overwritten in place (same size), read by a new open."""
    src, mnt = prepare(m, 'write', {'f': b'A' * 8192})
    overwrite(f'{src}/f', b'B' * 100, 4000)
    same('write', f'{mnt}/f', f'{src}/f')
    same('write (contents)', f'{mnt}/f', f'{src}/f', content)


@pinning_case
def outside_append(m):
    src, mnt = prepare(m, 'append', {'f': b'A' * 5000})
    append(f'{src}/f', b'appended')
    same('append', f'{mnt}/f', f'{src}/f')
    same('append (contents)', f'{mnt}/f', f'{src}/f', content)


@pinning_case
def outside_append_after_a_write_through_the_mount(m):
    """A file written through the mount (a passthrough writer: the watcher
    ignores its writes while it is open), closed, then appended beside the
    mount: the mount shows the new size and contents (the ignore mark must
    go with the last writer, though a passed-through open keeps no
    descriptor of its own)."""
    src, mnt = prepare(m, 'written', {'f': b'A' * 100})
    with open(f'{mnt}/f', 'r+b') as f:
        f.write(b'M')
    cache(mnt, 'f')
    append(f'{src}/f', b'appended beside the mount')
    same('append after a write through the mount', f'{mnt}/f', f'{src}/f')
    same('append after a write through the mount (contents)', f'{mnt}/f', f'{src}/f',
         content)


def kept_open(m, name, change, mapped=False):
    """A file opened (and read, or mapped and read) through the mount
    before the change; the same descriptor (mapping) then reads what
    SOURCE holds, and fstat shows SOURCE's attributes."""
    src, mnt = prepare(m, name, {'f': b'A' * 8192})
    with ufs.opened(f'{mnt}/f') as fd:
        if mapped:
            mm = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ)
            read = lambda: bytes(mm[:8192])     # noqa: E731
        else:
            read = lambda: os.pread(fd, 65536, 0)  # noqa: E731
        try:
            read()
            os.fstat(fd)
            time.sleep(0.01)
            change(f'{src}/f')
            eventually(f'{name} (fstat)', lambda: seen(lambda: os.fstat(fd).st_size),
                       lambda: os.stat(f'{src}/f').st_size)
            eventually(f'{name} (fstat mtime)', lambda: os.fstat(fd).st_mtime_ns,
                       lambda: os.stat(f'{src}/f').st_mtime_ns)
            want = ufs.read_file(f'{src}/f')
            eventually(f'{name} (contents)', read, lambda: want[:8192] if mapped else want)
        finally:
            if mapped:
                mm.close()


@pinning_case
def outside_write_kept_open(m):
    kept_open(m, 'write-open', lambda p: overwrite(p, b'B' * 4096, 4096))


@pinning_case
def outside_append_kept_open(m):
    kept_open(m, 'append-open', lambda p: append(p, b'C' * 3000))


@pinning_case
def outside_write_mapped(m):
    kept_open(m, 'write-mapped', lambda p: overwrite(p, b'D' * 4096, 0), mapped=True)


def xattrs(path):
    def get():
        return sorted((n, os.getxattr(path, n, follow_symlinks=False))
                      for n in os.listxattr(path, follow_symlinks=False))
    return seen(get)


@pinning_case
def outside_setxattr(m):
    src, mnt = prepare(m, 'setxattr', {'f': b'x'})
    xattrs(f'{mnt}/f')
    os.setxattr(f'{src}/f', 'user.coherence', b'set beside the mount')
    same('setxattr', f'{mnt}/f', f'{src}/f', xattrs)
    same('setxattr (ctime)', f'{mnt}/f', f'{src}/f')


@pinning_case
def outside_removexattr(m):
    w_src, w_mnt = prepare(m, 'rmxattr', {'f': b'x'})
    os.setxattr(f'{w_src}/f', 'user.coherence', b'there')
    # The attribute set before the caching: cache again.
    time.sleep(0.01)
    cache(w_mnt, 'f')
    xattrs(f'{w_mnt}/f')
    os.removexattr(f'{w_src}/f', 'user.coherence')
    same('removexattr', f'{w_mnt}/f', f'{w_src}/f', xattrs)
    same('removexattr (ctime)', f'{w_mnt}/f', f'{w_src}/f')


def acl(path):
    return seen(os.getxattr, path, 'system.posix_acl_access')


@pinning_case
def outside_acl(m):
    """setfacl in SOURCE: the ACL (which the kernel caches), and the mode
    whose group bits are its mask."""
    setfacl = shutil.which('setfacl')
    if not setfacl:
        raise ufs.Skip('setfacl is not installed (the acl package)')
    src, mnt = prepare(m, 'acl', {'f': b'x'})
    probe = f'{m.tmp}/acl-probe'
    ufs.write_file(probe)
    r = subprocess.run([setfacl, '-m', f'u:{NOBODY}:rw', probe], capture_output=True, text=True)
    if r.returncode != 0:
        raise ufs.Skip(f'the backing file system takes no POSIX ACL: {r.stderr.strip()}')
    acl(f'{mnt}/f')
    subprocess.run([setfacl, '-m', f'u:{NOBODY}:rw', f'{src}/f'], check=True)
    same('setfacl', f'{mnt}/f', f'{src}/f', acl)
    same('setfacl (mode and ctime)', f'{mnt}/f', f'{src}/f')


@pinning_case
def outside_mkdir(m):
    """A directory made in SOURCE under a name cached as missing: present,
    and its parent's link count and times moved."""
    src, mnt = prepare(m, 'mkdir')
    cache(mnt, missing=['d'])
    os.mkdir(f'{src}/d')
    names_and_dir('mkdir', src, mnt, 'd')


@pinning_case
def outside_rmdir(m):
    src, mnt = prepare(m, 'rmdir', dirs=['d'])
    listing(f'{mnt}/d')
    os.rmdir(f'{src}/d')
    names_and_dir('rmdir', src, mnt, 'd')


@pinning_case
def outside_dir_moved_in(m):
    """A directory moved into SOURCE from beside it (the same file system)
    under a name cached as missing: it and its file are there."""
    src, mnt = prepare(m, 'move-in')
    cache(mnt, missing=['d'])
    outside = f'{m.tmp}/move-in-{os.path.basename(src)}'
    os.mkdir(outside)
    ufs.write_file(f'{outside}/f', b'from outside')
    os.rename(outside, f'{src}/d')
    names_and_dir('directory moved in', src, mnt, 'd', 'd/f')
    same('directory moved in (contents)', f'{mnt}/d/f', f'{src}/d/f', content)


@pinning_case
def outside_dir_moved_out(m):
    """A directory moved out of SOURCE (to beside it): gone through the
    mount, and so is the path to its file."""
    src, mnt = prepare(m, 'move-out', dirs=['d'])
    ufs.write_file(f'{src}/d/f', b'leaving')
    cache(mnt, 'd', 'd/f')
    os.rename(f'{src}/d', f'{m.tmp}/move-out-{os.path.basename(src)}')
    names_and_dir('directory moved out', src, mnt, 'd', 'd/f')


@pinning_case
def outside_link_count(m):
    """A hard link made in SOURCE (its name cached as missing) and removed
    again: the link count through the mount follows."""
    src, mnt = prepare(m, 'link', {'f': b'x'})
    cache(mnt, missing=['g'])
    os.link(f'{src}/f', f'{src}/g')
    names_and_dir('link', src, mnt, 'f', 'g')
    os.unlink(f'{src}/g')
    names_and_dir('unlink of a link', src, mnt, 'f', 'g')


@pinning_case
def outside_changes_in_the_root(m):
    """Changes in SOURCE's top directory, the mount's root (node id 1)."""
    require_watchable()
    name = f'top-{os.getpid()}'
    cache(m.mnt, missing=[name])
    ufs.write_file(f'{m.src}/{name}', b'top')
    same('root: create', f'{m.mnt}/{name}', f'{m.src}/{name}')
    same('root: its attributes', m.mnt, m.src)
    os.chmod(f'{m.src}/{name}', 0o600)
    same('root: chmod', f'{m.mnt}/{name}', f'{m.src}/{name}')
    os.unlink(f'{m.src}/{name}')
    same('root: unlink', f'{m.mnt}/{name}', f'{m.src}/{name}')


@pinning_case
def outside_dir_rename(m):
    """A directory renamed in SOURCE: the old path and its file gone, the
    new ones there (looked up as missing first)."""
    src, mnt = prepare(m, 'dir-rename', dirs=['d1'])
    ufs.write_file(f'{src}/d1/f', b'in d1')
    cache(mnt, 'd1', 'd1/f', missing=['d2'])
    os.rename(f'{src}/d1', f'{src}/d2')
    names_and_dir('directory rename', src, mnt, 'd1', 'd1/f', 'd2', 'd2/f')


@pinning_case
def outside_rename_across_dirs(m):
    """A file moved into a subdirectory under a name cached as missing:
    both directories' attributes move."""
    src, mnt = prepare(m, 'across', {'f': b'moving'}, dirs=['a'])
    cache(mnt, 'f', 'a', missing=['a/g'])
    os.rename(f'{src}/f', f'{src}/a/g')
    names_and_dir('rename across directories', src, mnt, 'f', 'a', 'a/g')
