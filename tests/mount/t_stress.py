# SPDX-License-Identifier: GPL-2.0-or-later
"""Integrity under load.

- file_exerciser: one file, a seeded random sequence of pread, pwrite,
  ftruncate, fallocate (plain, KEEP_SIZE, PUNCH_HOLE), mmap reads and
  writes with msync, copy_file_range inside the file and from another file,
  fsync and reopen.  After every operation the whole file (size and bytes)
  must equal an in-memory model; at the end the backing file must too.
- metadata_stress: processes creating, linking, renaming and removing names
  in shared directories at the same time; afterwards the tree through the
  mount must equal the backing tree, and every errno seen must be one the
  operation can legitimately give in a race (ENOENT, EEXIST, ENOTEMPTY...).
- After each, with everything closed and the kernel's dentries dropped (so
  FORGETs arrive), the daemon's descriptor count and the control file's
  `inodes` must come back to their baseline: nothing leaked.

UFS_SEED=N replays a run (the seed is in the case names); UFS_STRESS_OPS
sets the exerciser's length (default 3000), UFS_STRESS_SECONDS the
metadata stress's duration (default 6).
"""

import collections
import errno
import mmap
import os
import random
import stat
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, opened

E = errno
SEED = int(os.environ.get('UFS_SEED') or random.SystemRandom().randrange(1 << 32))
OPS = int(os.environ.get('UFS_STRESS_OPS') or 3000)
SECONDS = float(os.environ.get('UFS_STRESS_SECONDS') or 6)
PAGE = mmap.PAGESIZE
MAX_SIZE = 300 * 1024 + 123        # not page aligned on purpose
DONOR = ufs.pattern(128 * 1024, seed=99)


def replay(what):
    return f'replay: UFS_SEED={SEED} tests/mount/run.py -k {what} t_stress'


# --- the file exerciser -----------------------------------------------------

class Exerciser:
    """The file under test (through the mount), its model, and the operations."""

    def __init__(self, path, donor_path, rnd):
        self.path, self.r = path, rnd
        self.model = bytearray()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.donor = os.open(donor_path, os.O_RDONLY)
        self.unsupported = collections.Counter()
        self.counts = collections.Counter()

    def close(self):
        for fd in (self.fd, self.donor):
            if fd is not None:
                os.close(fd)
        self.fd = self.donor = None

    # offsets and lengths: page-aligned, next to a page boundary, or anywhere
    def offset(self, limit=MAX_SIZE):
        r = self.r
        kind = r.random()
        if kind < 0.3:
            off = r.randrange(0, limit // PAGE + 1) * PAGE
        elif kind < 0.6:
            off = r.randrange(0, limit // PAGE + 1) * PAGE + r.randint(-3, 3)
        elif kind < 0.8 and self.model:
            off = r.randrange(0, len(self.model) + 1)   # inside the current file
        else:
            off = r.randrange(0, limit)
        return max(0, min(off, limit))

    def length(self, limit=64 * 1024):
        r = self.r
        kind = r.random()
        if kind < 0.3:
            n = r.randint(1, 16)
        elif kind < 0.6:
            n = r.randint(1, 2 * PAGE + 7)
        elif kind < 0.8:
            n = PAGE * r.randint(1, 8) + r.randint(-1, 1)
        else:
            n = r.randint(1, limit)
        return max(1, min(n, limit))

    def room(self, off, n):
        """Clip a write so the file stays under MAX_SIZE."""
        return max(0, min(n, MAX_SIZE - off))

    # -- operations: each returns a description and updates the model

    def op_pread(self):
        off, n = self.offset(), self.length()
        got = os.pread(self.fd, n, off)
        want = bytes(self.model[off:off + n])
        if got != want:
            raise AssertionError(f'pread({off}, {n}) returned {len(got)} bytes, model has '
                                 f'{len(want)}; first difference at {first_diff(got, want)}')
        return f'pread(off={off}, n={n})'

    def op_pwrite(self):
        off = self.offset()
        n = self.room(off, self.length())
        data = self.r.randbytes(n)
        done = os.pwrite(self.fd, data, off)
        check_eq(done, n, f'pwrite({off}, {n}) return value')
        self._store(off, data)
        return f'pwrite(off={off}, n={n})'

    def op_ftruncate(self):
        size = self.offset()
        os.ftruncate(self.fd, size)
        self._resize(size)
        return f'ftruncate({size})'

    def op_fallocate(self):
        mode = self.r.choice([0, sx.FALLOC_FL_KEEP_SIZE,
                              sx.FALLOC_FL_PUNCH_HOLE | sx.FALLOC_FL_KEEP_SIZE])
        off = self.offset()
        n = self.room(off, self.length(128 * 1024)) or 1
        name = {0: 'plain', sx.FALLOC_FL_KEEP_SIZE: 'KEEP_SIZE'}.get(mode, 'PUNCH_HOLE')
        if off + n > MAX_SIZE and mode == 0:
            return f'fallocate {name} skipped (past MAX_SIZE)'
        try:
            sx.fallocate(self.fd, mode, off, n)
        except OSError as e:
            if e.errno != E.EOPNOTSUPP:
                raise
            self.unsupported[name] += 1
            return f'fallocate {name}(off={off}, n={n}): EOPNOTSUPP'
        if mode == 0 and off + n > len(self.model):
            self._resize(off + n)
        elif mode & sx.FALLOC_FL_PUNCH_HOLE:
            end = min(off + n, len(self.model))
            if off < end:
                self.model[off:end] = bytes(end - off)
        return f'fallocate {name}(off={off}, n={n})'

    def op_mmap_read(self):
        size = len(self.model)
        if not size:
            return 'mmap read skipped (empty file)'
        off = self.r.randrange(size)
        n = min(self.length(), size - off)
        with mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ) as mm:
            got = mm[off:off + n]
        want = bytes(self.model[off:off + n])
        if got != want:
            raise AssertionError(f'mmap read({off}, {n}) differs from the model at '
                                 f'{first_diff(got, want)}')
        return f'mmap read(off={off}, n={n})'

    def op_mmap_write(self):
        size = len(self.model)
        if not size:
            return 'mmap write skipped (empty file)'
        off = self.r.randrange(size)
        n = min(self.length(), size - off)
        data = self.r.randbytes(n)
        with mmap.mmap(self.fd, size, mmap.MAP_SHARED) as mm:
            mm[off:off + n] = data
            mm.flush()      # msync(MS_SYNC)
        self.model[off:off + n] = data
        return f'mmap write(off={off}, n={n}) + msync'

    def op_copy_within(self):
        size = len(self.model)
        if not size:
            return 'copy within skipped (empty file)'
        src = self.r.randrange(size)
        n = min(self.length(), size - src)
        # a destination that does not overlap [src, src + n): before it, or
        # after it (up to a page past the end of the file)
        dsts = []
        if src >= n:
            dsts.append(self.r.randrange(0, src - n + 1))
        top = min(MAX_SIZE - n, size + PAGE)
        if top >= src + n:
            dsts.append(self.r.randrange(src + n, top + 1))
        if not dsts:
            return 'copy within skipped (no room)'
        dst = self.r.choice(dsts)
        done = os.copy_file_range(self.fd, self.fd, n, src, dst)
        check(0 < done <= n, f'copy_file_range(src={src}, dst={dst}, n={n}) returned {done}')
        self._store(dst, bytes(self.model[src:src + done]))
        return f'copy_file_range(src={src}, dst={dst}, n={n}) = {done}'

    def op_copy_donor(self):
        src = self.r.randrange(len(DONOR))
        dst = self.offset()
        n = self.room(dst, min(self.length(), len(DONOR) - src))
        if not n:
            return 'copy from donor skipped (no room)'
        done = os.copy_file_range(self.donor, self.fd, n, src, dst)
        check(0 < done <= n, f'copy_file_range(donor {src}, dst={dst}, n={n}) returned {done}')
        self._store(dst, DONOR[src:src + done])
        return f'copy_file_range(donor src={src}, dst={dst}, n={n}) = {done}'

    def op_fsync(self):
        (os.fdatasync if self.r.random() < 0.5 else os.fsync)(self.fd)
        return 'fsync'

    def op_reopen(self):
        os.close(self.fd)
        self.fd = None
        self.fd = os.open(self.path, os.O_RDWR)
        return 'close + reopen'

    OPS = [(14, 'op_pread'), (20, 'op_pwrite'), (6, 'op_ftruncate'), (8, 'op_fallocate'),
           (6, 'op_mmap_read'), (8, 'op_mmap_write'), (6, 'op_copy_within'),
           (6, 'op_copy_donor'), (2, 'op_fsync'), (2, 'op_reopen')]

    def step(self):
        _, name = self.r.choices(self.OPS, [w for w, _ in self.OPS])[0]
        self.counts[name[3:]] += 1
        return getattr(self, name)()

    def _store(self, off, data):
        if off > len(self.model):
            self.model.extend(bytes(off - len(self.model)))
        self.model[off:off + len(data)] = data

    def _resize(self, size):
        if size < len(self.model):
            del self.model[size:]
        else:
            self.model.extend(bytes(size - len(self.model)))

    def verify(self, fd=None):
        """The whole file, through a descriptor, must equal the model."""
        fd = self.fd if fd is None else fd
        size = os.fstat(fd).st_size
        if size != len(self.model):
            raise AssertionError(f'size is {size}, the model has {len(self.model)}')
        got = os.pread(fd, len(self.model) + 1, 0)
        if got != self.model:
            raise AssertionError(f'contents differ from the model at '
                                 f'{first_diff(got, self.model)} (size {len(self.model)})')


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return f'offset {j} (got {a[j]:#04x}, want {b[j]:#04x})'
    return f'offset {n} (lengths {len(a)} and {len(b)})'


def exercise(m, label):
    """Run the exerciser on a fresh file under m; return a summary line."""
    base = ufs.baseline(m)
    d = m.work(label)
    ufs.write_file(f'{d.mnt}/donor', DONOR)
    r = random.Random(SEED)
    ex = Exerciser(f'{d.mnt}/file', f'{d.mnt}/donor', r)
    history = collections.deque(maxlen=12)
    start = time.monotonic()
    try:
        for i in range(OPS):
            try:
                history.append(f'#{i}: {ex.step()}')
                ex.verify()
            except (AssertionError, OSError) as e:
                e.add_note(f'seed {SEED}, operation #{i}; the last operations:\n  '
                           + '\n  '.join(history) + '\n' + replay(label))
                raise
        os.fsync(ex.fd)
        with opened(f'{d.src}/file') as back:
            try:
                ex.verify(back)
            except AssertionError as e:
                e.add_note(f'the backing file after {OPS} operations and fsync (seed {SEED})')
                raise
    finally:
        ex.close()
    took = time.monotonic() - start
    ufs.drop_caches(3)
    with opened(f'{d.mnt}/file') as fd:
        ex.verify(fd)   # read back from the daemon, not the page cache
    summary = (f'{label}: {OPS} operations in {took:.1f} s, final size {len(ex.model)}, '
               f'counts {dict(ex.counts)}')
    if ex.unsupported:
        summary += f', unsupported by the backing fs: {dict(ex.unsupported)}'
    ufs.diag(summary)
    os.unlink(f'{d.mnt}/file')
    os.unlink(f'{d.mnt}/donor')
    check_no_leak(m, base, label)


def check_no_leak(m, base, what):
    if base is None:
        return
    settled = ufs.settle(m, *base)
    ufs.diag(f'{what}: daemon descriptors {base[0]} -> {settled[0]}, '
             f'inodes {base[1]} -> {settled[1]}')


@case(name=f'file_exerciser[seed={SEED}]', mount=False, root=True, timeout=120)
def file_exerciser():
    with ufs.Mount() as m:
        exercise(m, 'file_exerciser')


@case(name=f'file_exerciser_writeback[seed={SEED}]', mount=False, root=True, timeout=120)
def file_exerciser_writeback():
    """The same sequence with the kernel's writeback cache on."""
    with ufs.Mount(opts='writeback_cache=on') as m:
        exercise(m, 'file_exerciser_writeback')


# --- concurrent metadata stress ---------------------------------------------

DIRS = ['d0', 'd1', 'd2', 'd3']
NAMES = [f'n{i}' for i in range(12)]

# The errnos a name operation may give when other processes change the same
# names concurrently.  Anything else (EIO, ESTALE, EBADF, ENOMEM, EMFILE,
# ENOTCONN...) is a failure.
RACE_ERRNOS = {E.ENOENT, E.EEXIST, E.ENOTEMPTY, E.ENOTDIR, E.EISDIR,
               E.ELOOP}  # symlinks (targets are the same short names) can form loops
ALLOWED = {
    'create': RACE_ERRNOS, 'mkdir': RACE_ERRNOS, 'symlink': RACE_ERRNOS,
    'unlink': RACE_ERRNOS, 'rmdir': RACE_ERRNOS,
    # a directory moved into its own subtree; rename over a non-empty dir
    'rename': RACE_ERRNOS | {E.EINVAL}, 'noreplace': RACE_ERRNOS | {E.EINVAL},
    'exchange': RACE_ERRNOS | {E.EINVAL},
    'link': RACE_ERRNOS | {E.EPERM},     # hard link to a directory
    'stat': RACE_ERRNOS | {E.ELOOP}, 'listdir': RACE_ERRNOS | {E.ELOOP},
    'read': RACE_ERRNOS | {E.ELOOP},
    'write': RACE_ERRNOS | {E.ELOOP},
}


def rand_path(r, root):
    """d/n or d/n/n: the second level exists when a dir was made or moved there."""
    parts = [r.choice(DIRS), r.choice(NAMES)]
    if r.random() < 0.35:
        parts.append(r.choice(NAMES))
    return os.path.join(root, *parts)


KINDS = [('create', 10), ('mkdir', 6), ('symlink', 3), ('unlink', 8), ('rmdir', 5),
         ('rename', 12), ('noreplace', 3), ('exchange', 3), ('link', 6), ('stat', 6),
         ('listdir', 3), ('read', 4), ('write', 4)]


def meta_pick(r, root):
    kind = r.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
    return kind, rand_path(r, root), rand_path(r, root), r.choice(NAMES)


def meta_do(kind, p, q, target, me):
    if kind == 'create':
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            os.write(fd, f'{me}:{p}'.encode())
        finally:
            os.close(fd)
    elif kind == 'mkdir':
        os.mkdir(p)
    elif kind == 'symlink':
        os.symlink(target, p)
    elif kind == 'unlink':
        os.unlink(p)
    elif kind == 'rmdir':
        os.rmdir(p)
    elif kind == 'rename':
        os.rename(p, q)
    elif kind == 'noreplace':
        sx.renameat2(p, q, sx.RENAME_NOREPLACE)
    elif kind == 'exchange':
        sx.renameat2(p, q, sx.RENAME_EXCHANGE)
    elif kind == 'link':
        os.link(p, q, follow_symlinks=False)
    elif kind == 'stat':
        os.stat(p)
    elif kind == 'listdir':
        os.listdir(p)
    elif kind == 'read':
        with opened(p, os.O_RDONLY | os.O_NONBLOCK) as fd:
            os.read(fd, 100)
    elif kind == 'write':
        with opened(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK) as fd:
            os.write(fd, b'+')


def meta_worker(chan, root, seed, seconds):
    """Child: random name operations until the time is up; outcome counts
    and the operations that failed with an errno no race explains."""
    r = random.Random(seed)
    seen = collections.Counter()
    bad = []
    chan.send('ready')
    chan.recv(timeout=30)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        kind, p, q, target = meta_pick(r, root)
        try:
            meta_do(kind, p, q, target, seed)
            seen[(kind, 'ok')] += 1
        except OSError as e:
            seen[(kind, ufs.errname(e.errno))] += 1
            if e.errno not in ALLOWED[kind] and len(bad) < 20:
                bad.append(f'worker {seed - SEED} op #{n} {kind}({os.path.relpath(p, root)}, '
                           f'{os.path.relpath(q, root)}): {ufs.errname(e.errno)} {e.strerror}')
        n += 1
    return n, dict(seen), bad


WORKERS = 4


@case(name=f'metadata_stress[seed={SEED}]', mount=False, root=True, timeout=90)
def metadata_stress():
    with ufs.Mount() as m:
        base = ufs.baseline(m)
        w = m.work('meta')
        for d in DIRS:
            os.mkdir(f'{w.mnt}/{d}')
        workers = [ufs.Child(meta_worker, w.mnt, SEED + i, SECONDS) for i in range(WORKERS)]
        try:
            for c in workers:
                c.recv()
            for c in workers:
                c.send('go')
            results = [c.join(timeout=SECONDS + 60) for c in workers]
        finally:
            for c in workers:
                c.kill()
        total = collections.Counter()
        bad = []
        for n, seen, errors in results:
            total.update(seen)
            bad += errors
        ops = sum(n for n, _, _ in results)
        by_errno = collections.Counter()
        for (kind, err), count in total.items():
            by_errno[err] += count
        ufs.diag(f'metadata_stress: {ops} operations by {WORKERS} processes in {SECONDS} s; '
                 f'outcomes {dict(sorted(by_errno.items()))}')
        check(not bad, f'errnos no race explains (seed {SEED}):\n  ' + '\n  '.join(bad)
              + '\n' + replay('metadata_stress'))
        check(total[('create', 'ok')] > 20 and total[('rename', 'ok')] > 20,
              f'too little work succeeded to mean anything: {dict(total)}')
        # The same tree through the mount as in the backing directory.
        got, want = ufs.snapshot(w.mnt), ufs.snapshot(w.src)
        ufs.check_snapshots(got, want, f'mount vs backing after the stress (seed {SEED})')
        names = len(want) - 1
        for rel in sorted(want, key=lambda p: -p.count('/')):
            if rel == '.' or rel in DIRS:
                continue
            path = os.path.join(w.mnt, rel)
            (os.rmdir if stat.S_ISDIR(os.lstat(path).st_mode) else os.unlink)(path)
        ufs.diag(f'metadata_stress: {names} names in the final tree')
        check_no_leak(m, base, 'metadata_stress')


@case(mount=False, root=True)
def link_made_during_unlink():
    """A local process links a file just before the daemon removes one of its
    names (unlink, rename over it): the file keeps a name, so the inode must
    stay usable through the mount, as natively.  Deciding "last link" from a
    check before the call would close its only descriptor (inode_handles=never)
    and give ESTALE."""
    ufs.require_daemon('the race is injected into the daemon')
    with ufs.Mount(opts='inode_handles=never,attr_timeout=0,entry_timeout=0',
                   env=ufs.preload_env('shim/linkrace.c')) as m:
        for how in ('unlink', 'rename'):
            ufs.write_file(f'{m.src}/race-{how}', how.encode())
            ufs.write_file(f'{m.src}/from-{how}', b'new')
            with opened(f'{m.mnt}/race-{how}', os.O_PATH) as fd:
                if how == 'unlink':
                    os.unlink(f'{m.mnt}/race-{how}')
                else:
                    os.rename(f'{m.mnt}/from-{how}', f'{m.mnt}/race-{how}')
                check(os.path.exists(f'{m.src}/race-{how}.linked'),
                      f'{how}: the shim did not link the file (is it preloaded?)')
                st = ufs.outcome(os.fstat, fd)
                check(st.err is None, f'{how}: fstat of the file that kept a name: {st}')
                check_eq(st.value.st_nlink, 1, f'{how}: st_nlink')
            check_eq(ufs.read_file(f'{m.mnt}/race-{how}.linked'), how.encode(),
                     f'{how}: contents under the other name')
