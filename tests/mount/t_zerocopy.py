# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero copy over io_uring (Linux 7.3): READ_FIXED/WRITE_FIXED into the
client's pages, the memory-file bounce for O_DIRECT backing files and the
control file, the fallback without CAP_SYS_ADMIN, and what a kernel without
buffer pools (the 6.18 host) does with zero_copy=auto and =on.

Every data case compares checksums through the mount with the backing file
and proves through the counters which path served it.
"""

import errno
import hashlib
import mmap
import os
import subprocess
import threading

import ufs
from ufs import case, check, check_eq

E = errno
MiB = 1 << 20
# A payload buffer is max_write (1 MiB): these sizes cross it.
SIZES = (4096, 1234567, 3 * MiB + 12345)


def kernel_has_bufpool():
    """Whether this kernel offers FUSE-over-io_uring buffer pools (7.3)."""
    ufs.require_daemon()
    with ufs.Mount(opts='io_uring=auto,zero_copy=auto') as m:
        stats = m.stats()
    return stats['queue_mode'] == 'bufpool'


_has_bufpool = None


def require_zero_copy_kernel():
    global _has_bufpool
    if _has_bufpool is None:
        _has_bufpool = kernel_has_bufpool()
    if not _has_bufpool:
        raise ufs.Skip('the kernel has no FUSE-over-io_uring buffer pools (Linux 7.3)')


def require_no_bufpool_kernel():
    global _has_bufpool
    if _has_bufpool is None:
        _has_bufpool = kernel_has_bufpool()
    if _has_bufpool:
        raise ufs.Skip('this kernel has buffer pools: covered by the zero-copy cases')


def digest(data):
    return hashlib.sha256(data).hexdigest()


def file_digest(path):
    with open(path, 'rb') as f:
        return digest(f.read())


def drop_caches():
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3')


def delta(before, after, *names):
    return {n: after[n] - before[n] for n in names}


def io_delta(m, fn):
    """Counters moved by fn alone: reading the control file (itself a bounce) is
    measured once and taken out."""
    s0 = m.stats()
    s1 = m.stats()
    fn()
    s2 = m.stats()
    return {n: (s2[n] - s1[n]) - (s1[n] - s0[n]) for n in ZC}


ZC = ('zc_reads', 'zc_writes', 'zc_read_bytes', 'zc_write_bytes', 'bounce_reads',
      'bounce_writes', 'copied_reads', 'copied_writes')


def zc_mount(extra=None):
    return ufs.Mount(opts=ufs.join_opts('io_uring=on,zero_copy=on', extra))


@case(mount=False, root=True)
def buffered_read_write():
    """Page-cache writes and reads (after dropping caches) are zero-copied."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        st = m.stats()
        check_eq(st['zero_copy'], 'on', 'zero_copy state')
        check(st['queues'] > 0 and st['zero_copy_queues'] == st['queues'],
              f'not every queue has zero copy: {st}')
        for i, size in enumerate(SIZES):
            data = ufs.pattern(size, seed=i)
            before = m.stats()
            ufs.write_file(f'{m.mnt}/f{i}', data)
            os.sync()
            drop_caches()
            check_eq(file_digest(f'{m.mnt}/f{i}'), digest(data), f'read back {size} bytes')
            check_eq(file_digest(f'{m.src}/f{i}'), digest(data), f'backing file of {size} bytes')
            d = delta(before, m.stats(), *ZC)
            check(d['zc_writes'] > 0 and d['zc_write_bytes'] >= size, f'writes not zero-copied: {d}')
            check(d['zc_reads'] > 0 and d['zc_read_bytes'] >= size, f'reads not zero-copied: {d}')
            check_eq((d['copied_reads'], d['copied_writes']), (0, 0), 'copied requests')


@case(mount=False, root=True)
def mmap_read_write():
    """mmap faults read through READ_FIXED; msync writes back through WRITE_FIXED."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        data = ufs.pattern(2 * MiB + 777, seed=7)
        ufs.write_file(f'{m.src}/m', data)
        before = m.stats()
        fd = os.open(f'{m.mnt}/m', os.O_RDWR)
        try:
            with mmap.mmap(fd, len(data)) as mm:
                check_eq(digest(mm[:]), digest(data), 'mapped contents')
                mm[100:200] = b'z' * 100
                mm[MiB + 5:MiB + 10] = b'12345'
                mm.flush()
        finally:
            os.close(fd)
        want = bytearray(data)
        want[100:200] = b'z' * 100
        want[MiB + 5:MiB + 10] = b'12345'
        check_eq(file_digest(f'{m.src}/m'), digest(bytes(want)), 'backing file after msync')
        d = delta(before, m.stats(), *ZC)
        check(d['zc_reads'] > 0 and d['zc_writes'] > 0, f'mmap I/O not zero-copied: {d}')


@case(mount=False, root=True)
def client_o_direct():
    """Client O_DIRECT I/O registers the caller's own pages and is zero-copied."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        size = 3 * MiB
        buf = mmap.mmap(-1, size)
        buf.write(ufs.pattern(size, seed=3))
        back = mmap.mmap(-1, size)

        def round_trip():
            fd = os.open(f'{m.mnt}/d', os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
            try:
                check_eq(os.pwritev(fd, [buf], 0), size, 'O_DIRECT write')
                check_eq(os.preadv(fd, [back], 0), size, 'O_DIRECT read')
            finally:
                os.close(fd)

        d = io_delta(m, round_trip)
        check_eq(digest(back[:]), digest(buf[:]), 'O_DIRECT round trip')
        check_eq(file_digest(f'{m.src}/d'), digest(buf[:]), 'backing file')
        check(d['zc_writes'] > 0 and d['zc_reads'] > 0, f'O_DIRECT not zero-copied: {d}')
        check_eq((d['bounce_reads'], d['bounce_writes']), (0, 0), 'bounces (backing not O_DIRECT)')


@case(mount=False, root=True)
def eof_and_holes():
    """Reads across EOF come back short; holes read as zeros."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        path = f'{m.src}/h'
        with open(path, 'wb') as f:
            f.seek(5 * MiB)
            f.write(b'tail')
        drop_caches()
        with open(f'{m.mnt}/h', 'rb', buffering=0) as f:
            f.seek(5 * MiB - 2)
            check_eq(f.read(100), b'\0\0tail', 'read across EOF')
            f.seek(MiB + 3)
            check_eq(f.read(70000), bytes(70000), 'read in a hole')
            f.seek(6 * MiB)
            check_eq(f.read(10), b'', 'read past EOF')
        check_eq(file_digest(f'{m.mnt}/h'), file_digest(path), 'whole sparse file')


@case(mount=False, root=True, timeout=120)
def concurrent_readers_writers():
    """Readers and writers of one file at once: every byte ends where it belongs."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        # Under emulation (the 7.3 guest) everything is many times slower.
        slow = bool(os.environ.get('UFS_VM_GUEST'))
        block = (64 if slow else 256) * 1024
        nblocks = 24
        rounds = 8 if slow else 40
        path = f'{m.mnt}/c'
        ufs.write_file(path, bytes(block * nblocks))
        errors = []

        def writer(k):
            fd = os.open(path, os.O_WRONLY)
            try:
                for b in range(k, nblocks, 3):
                    os.pwrite(fd, bytes([b + 1]) * block, b * block)
            except OSError as e:
                errors.append(e)
            finally:
                os.close(fd)

        def reader():
            fd = os.open(path, os.O_RDONLY)
            try:
                for _ in range(rounds):
                    data = os.pread(fd, block * nblocks, 0)
                    # A read racing a write may see part of it (Linux does not
                    # make them atomic), but never a byte from anywhere else.
                    for b in range(nblocks):
                        chunk = data[b * block:(b + 1) * block]
                        stray = set(chunk) - {0, b + 1}
                        if stray:
                            errors.append(f'block {b} has stray bytes {sorted(stray)[:4]}')
            except OSError as e:
                errors.append(e)
            finally:
                os.close(fd)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
        threads += [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check_eq(errors, [], 'errors from readers and writers')
        want = b''.join(bytes([b + 1]) * block for b in range(nblocks))
        check_eq(file_digest(f'{m.src}/c'), digest(want), 'final contents')


@case(mount=False, root=True)
def bounce_o_direct_backing():
    """backing_direct_io=on: an O_DIRECT client's data bounces through the memory file,
    at aligned and unaligned offsets and lengths."""
    require_zero_copy_kernel()
    with zc_mount('backing_direct_io=on') as m:
        data = ufs.pattern(2 * MiB, seed=11)
        ufs.write_file(f'{m.src}/b', data)
        before = m.stats()
        buf = mmap.mmap(-1, MiB)
        fd = os.open(f'{m.mnt}/b', os.O_RDWR | os.O_DIRECT)
        try:
            check_eq(os.preadv(fd, [buf], 4096), MiB, 'aligned O_DIRECT read')
            check_eq(digest(buf[:]), digest(data[4096:4096 + MiB]), 'aligned read contents')
            odd = bytearray(5000)
            n = os.preadv(fd, [odd], 12345)
            check_eq(bytes(odd[:n]), data[12345:12345 + n], 'unaligned read contents')
            buf[:] = ufs.pattern(MiB, seed=12)
            check_eq(os.pwritev(fd, [buf], MiB), MiB, 'aligned O_DIRECT write')
        finally:
            os.close(fd)
        want = data[:MiB] + ufs.pattern(MiB, seed=12)
        check_eq(file_digest(f'{m.src}/b'), digest(want), 'backing file')
        d = delta(before, m.stats(), *ZC)
        check(d['bounce_reads'] >= 2 and d['bounce_writes'] >= 1, f'no bounces: {d}')


@case(mount=False, root=True)
def bounce_fcntl_o_direct():
    """A file switched to O_DIRECT with fcntl(F_SETFL) bounces from then on."""
    require_zero_copy_kernel()
    import fcntl
    with zc_mount('backing_direct_io=on') as m:
        data = ufs.pattern(MiB, seed=13)
        ufs.write_file(f'{m.src}/s', data)
        fd = os.open(f'{m.mnt}/s', os.O_RDWR)
        try:
            before = m.stats()
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_DIRECT)
            buf = mmap.mmap(-1, 65536)
            check_eq(os.preadv(fd, [buf], 65536), 65536, 'read after F_SETFL O_DIRECT')
            check_eq(buf[:], data[65536:131072], 'contents')
            d = delta(before, m.stats(), *ZC)
            check(d['bounce_reads'] >= 1, f'F_SETFL O_DIRECT read did not bounce: {d}')
        finally:
            os.close(fd)


@case(mount=False, root=True)
def bounce_control_file():
    """The control file has no backing descriptor: zero-copied reads of it bounce."""
    require_zero_copy_kernel()
    with zc_mount() as m:
        before = m.stats()
        path = f'{m.mnt}/{ufs.CONTROL}'
        whole = ufs.read_file(path)
        check(whole.startswith(b'transport uring\n'), f'control file starts {whole[:40]!r}')
        with open(path, 'rb', buffering=0) as f:
            f.seek(7)
            part = f.read(13)
        check_eq(part, whole[7:20], 'unaligned read of the control file')
        d = delta(before, m.stats(), *ZC)
        check(d['bounce_reads'] >= 2, f'control file reads did not bounce: {d}')


@case(mount=False, root=True, user=True)
def without_cap_sys_admin():
    """An ordinary user's daemon (through fusermount3) gets EPERM for zero copy,
    says so, and serves the same data by copying."""
    require_zero_copy_kernel()
    if os.stat('/dev/fuse').st_mode & 0o006 != 0o006:
        raise ufs.Skip('/dev/fuse is not open to ordinary users')
    with ufs.Mount(user=ufs.TEST_USER, opts='io_uring=on,zero_copy=auto') as m:
        stats = m.stats()
        check_eq(stats['zero_copy'], 'eperm', 'zero_copy state without CAP_SYS_ADMIN')
        check_eq(stats['zero_copy_queues'], 0, 'queues with zero copy')
        check('EPERM' in m.log_text(), 'the fallback is not in the log')
        data = ufs.pattern(3 * MiB + 1, seed=21)
        ufs.as_user(ufs.write_file, f'{m.mnt}/u', data)
        got = ufs.as_user(ufs.read_file, f'{m.mnt}/u')
        check_eq(digest(got), digest(data), 'data through a copying mount')
        after = m.stats()
        check(after['copied_writes'] > 0 and after['zc_writes'] == 0,
              f'writes were not copied: {after}')


@case(mount=False)
def no_bufpool_auto_says_off():
    """On a kernel without buffer pools zero_copy=auto runs without it and says so."""
    require_no_bufpool_kernel()
    with ufs.Mount(opts='zero_copy=auto') as m:
        st = m.stats()
        check_eq(st['zero_copy'], 'off', 'zero_copy state')
        check_eq(st['zero_copy_queues'], 0, 'queues with zero copy')
        ufs.write_file(f'{m.mnt}/f', b'copied')
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'copied', 'data')
        check('zero copy: off' in m.log_text() or 'io_uring=off' in m.log_text(),
              'the log does not say zero copy is off' + m.log_tail())


@case(mount=False)
def no_bufpool_on_fails():
    """On a kernel without buffer pools zero_copy=on stops at start-up, mounting nothing."""
    require_no_bufpool_kernel()
    src, mnt = ufs.scratch_dir('zsrc'), ufs.scratch_dir('zmnt')
    r = subprocess.run([ufs.config().daemon, '-f', '-o', 'zero_copy=on', src, mnt],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode != 0, 'zero_copy=on started without buffer pools')
    check('zero_copy=on' in r.stderr, f'no clear message: {r.stderr!r}')
    check(ufs.mount_entry(mnt) is None, 'a mount was left behind')
