# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel passthrough (FUSE_PASSTHROUGH, Linux 6.9) and the io_path setting:
which data path each open gets, the backing id per inode, every refusal
falling back to the daemon with its reason counted, and the data staying the
same whichever path reads or writes it.

A passed-through file's reads and writes never reach the daemon: the cases
prove the path by the opcode counters (op_read, op_write stay still) as well
as by opens_passthrough.
"""

import contextlib
import errno
import fcntl
import mmap
import os
import shutil
import subprocess
import time

import ufs
from ufs import case, check, check_eq

E = errno
MiB = 1 << 20
PT = 'io_path=passthrough'


def require_own_io_path():
    """The variant must leave io_path to the case."""
    ufs.require_daemon()
    if 'io_path=' in (ufs.config().opts or ''):
        raise ufs.Skip(f'the variant forces {ufs.config().opts}')


def pt_mount(opts=PT, **kwargs):
    require_own_io_path()
    return ufs.Mount(opts=opts, **kwargs)


def wait_for(m, name, want, what, timeout=5.0):
    """RELEASE is sent after close(2) returns: poll the counter."""
    deadline = time.monotonic() + timeout
    while True:
        got = m.stats()[name]
        if got == want or time.monotonic() > deadline:
            check_eq(got, want, what)
            return
        time.sleep(0.02)


def moved(before, after, *names):
    return {n: after[n] - before[n] for n in names}


def requests_of(m, fn, *names):
    """Counters moved by fn alone: reading the control file is itself an OPEN and
    READs, measured once and taken out."""
    s0 = m.stats()
    s1 = m.stats()
    fn()
    s2 = m.stats()
    return {n: (s2[n] - s1[n]) - (s1[n] - s0[n]) for n in names}


def drop_caches():
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3')


@case(mount=False, root=True)
def reads_and_writes_skip_the_daemon():
    """Data written and read through a passed-through open is the backing file's,
    and no READ or WRITE request reaches the daemon."""
    with pt_mount() as m:
        check_eq(m.stats()['passthrough'], 'on', 'passthrough state')
        data = ufs.pattern(3 * MiB + 4321, seed=3)

        def write_and_read():
            ufs.write_file(f'{m.mnt}/f', data)
            drop_caches()
            check_eq(ufs.read_file(f'{m.mnt}/f'), data, 'read back through the mount')

        d = requests_of(m, write_and_read, 'op_read', 'op_write', 'opens_passthrough',
                        'opens_copy', 'opens_zero_copy')
        check_eq(ufs.read_file(f'{m.src}/f'), data, 'the backing file')
        check_eq(d, {'op_read': 0, 'op_write': 0, 'opens_passthrough': 2, 'opens_copy': 0,
                     'opens_zero_copy': 0}, 'requests and opens by path')


@case(mount=False, root=True)
def one_backing_id_per_inode():
    """Every open of one inode, hard links included, shares one backing id; the
    last close gives it back."""
    with pt_mount() as m:
        ufs.write_file(f'{m.src}/a', b'a' * 5000)
        ufs.write_file(f'{m.src}/b', b'b' * 5000)
        os.link(f'{m.src}/a', f'{m.src}/a2')
        fds = [os.open(f'{m.mnt}/{n}', fl) for n, fl in
               (('a', os.O_RDONLY), ('a', os.O_RDWR), ('a2', os.O_WRONLY), ('b', os.O_RDONLY))]
        try:
            st = m.stats()
            check_eq(st['backing_ids'], 2, 'backing ids for two inodes, four opens')
            check_eq(os.pread(fds[1], 4, 4996), b'aaaa', 'read through the second open')
            os.pwrite(fds[2], b'XY', 10)
            check_eq(os.pread(fds[0], 4, 9), b'aXYa', 'a write through the link is seen')
        finally:
            for fd in fds:
                os.close(fd)
        wait_for(m, 'backing_ids', 0, 'backing ids after the last close')


@case(mount=False, root=True)
def odirect_and_mmap_stay_consistent():
    """A file open in passthrough, then opened O_DIRECT and mapped: all three see
    each other's writes, and the backing file has them (libfuse #1027 is a
    passthrough server failing O_DIRECT opens)."""
    with pt_mount() as m:
        path = f'{m.mnt}/f'
        ufs.write_file(path, ufs.pattern(4 * 4096, seed=5))
        plain = os.open(path, os.O_RDWR)
        direct = os.open(path, os.O_RDWR | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            buf[:] = b'D' * 4096
            check_eq(os.pwritev(direct, [buf], 4096), 4096, 'O_DIRECT write')
            check_eq(os.pread(plain, 4096, 4096), b'D' * 4096, 'buffered read after O_DIRECT')
            with mmap.mmap(plain, 4 * 4096) as mm:
                check_eq(mm[4096:4100], b'DDDD', 'the mapping sees the O_DIRECT write')
                mm[0:5] = b'mmap!'
                mm.flush()
            check_eq(os.preadv(direct, [buf], 0), 4096, 'O_DIRECT read')
            check_eq(bytes(buf[:5]), b'mmap!', 'O_DIRECT read sees the mapping\'s write')
            os.pwrite(plain, b'plain', 8192)
            with open(f'{m.src}/f', 'rb') as f:
                back = f.read()
            check_eq((back[:5], back[4096:4100], back[8192:8197]),
                     (b'mmap!', b'DDDD', b'plain'), 'the backing file has every write')
            check_eq(m.stats()['opens_passthrough'] >= 3, True, 'all opens passed through')
        finally:
            os.close(direct)
            os.close(plain)


@case(mount=False, root=True)
def setid_files_stay_with_the_daemon():
    """A set-id file is served by the daemon, which clears the bits as the kernel
    says per writer; a bit set while a file is passed through is cleared by the
    next write (the backing id was registered without CAP_FSETID)."""
    if not shutil.which('capsh'):
        raise ufs.Skip('capsh is missing (Debian package libcap2-bin)')
    with pt_mount() as m:
        ufs.write_file(f'{m.src}/s', b'x' * 100, mode=0o4755)
        before = m.stats()
        with open(f'{m.mnt}/s', 'r+b', buffering=0) as f:
            f.write(b'y')
        after = m.stats()
        check_eq(moved(before, after, 'passthrough_refused_setid', 'opens_copy'),
                 {'passthrough_refused_setid': 1, 'opens_copy': 1}, 'a set-id file\'s open')
        check_eq(os.stat(f'{m.src}/s').st_mode & 0o7777, 0o4755,
                 'root (CAP_FSETID) keeps the bit, as natively')
        # A writer without CAP_FSETID opens first, then the bit is set outside.
        ufs.write_file(f'{m.src}/t', b'x' * 100, mode=0o755)
        script = ('import os,sys,time\n'
                  'fd = os.open(sys.argv[1], os.O_WRONLY)\n'
                  'os.chmod(sys.argv[2], 0o6755)\n'
                  'os.pwrite(fd, b"z", 0)\n'
                  'os.close(fd)\n')
        r = subprocess.run(['capsh', '--drop=cap_fsetid', '--', '-c',
                            f'exec /usr/bin/python3 -c \'{script}\' {m.mnt}/t {m.src}/t'],
                           capture_output=True, text=True)
        check_eq(r.returncode, 0, f'the writer under capsh: {r.stderr.strip()}')
        check_eq(os.stat(f'{m.src}/t').st_mode & 0o7777, 0o0755,
                 'set-id bits after a passed-through write without CAP_FSETID')
        check(m.stats()['opens_passthrough'] > after['opens_passthrough'],
              'the writer was not passed through')


def chattr(flag, path):
    r = subprocess.run(['chattr', flag, path], capture_output=True, text=True)
    if r.returncode:
        raise ufs.Skip(f'chattr {flag}: {r.stderr.strip()}')


@case(mount=False, root=True)
def append_only_and_mixed():
    """An append-only file is served by the daemon (a passthrough mapping would
    overwrite it); the inode's next opens follow that path while it is open
    (mixed); a writer joining a passed-through file made append-only since is
    refused with ETXTBSY."""
    with pt_mount() as m:
        ufs.write_file(f'{m.src}/a', b'a' * 100)
        chattr('+a', f'{m.src}/a')
        try:
            before = m.stats()
            fa = os.open(f'{m.mnt}/a', os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fa, b'tail')
                subprocess.run(['chattr', '-a', f'{m.src}/a'], check=True)
                with open(f'{m.mnt}/a', 'rb') as f:
                    check_eq(f.read()[-5:], b'atail', 'read through the mixed open')
            finally:
                os.close(fa)
            after = m.stats()
            check_eq(moved(before, after, 'passthrough_refused_attr',
                           'passthrough_refused_mixed', 'opens_copy', 'opens_passthrough'),
                     {'passthrough_refused_attr': 1, 'passthrough_refused_mixed': 1,
                      'opens_copy': 2, 'opens_passthrough': 0}, 'opens by path')
            # Passed through first, made append-only outside, then joined.
            ufs.write_file(f'{m.src}/b', b'b' * 100)
            fb = os.open(f'{m.mnt}/b', os.O_RDONLY)
            try:
                chattr('+a', f'{m.src}/b')
                ufs.check_errno(E.ETXTBSY, os.open, f'{m.mnt}/b', os.O_WRONLY | os.O_APPEND)
                ufs.check_errno(E.EPERM, os.open, f'{m.mnt}/b', os.O_WRONLY)
            finally:
                os.close(fb)
                subprocess.run(['chattr', '-a', f'{m.src}/b'])
        finally:
            subprocess.run(['chattr', '-a', f'{m.src}/a'])


def append_only_writer(path):
    """What a writer of an append-only file can do: a shared mapping (refused
    natively, EACCES), a pwrite at offset 0 and a write after F_SETFL
    clears O_APPEND (natively EPERM); returns the outcomes."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        def shared_map():
            with mmap.mmap(fd, 100, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mm:
                mm[0:4] = b'OVER'
                mm.flush()
            return 'mapped'

        mapped = ufs.outcome(shared_map)
        os.pwrite(fd, b'tail', 0)
        setfl = ufs.outcome(fcntl.fcntl, fd, fcntl.F_SETFL,
                            fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_APPEND)
        os.pwrite(fd, b'more', 0)
    finally:
        os.close(fd)
    return mapped, setfl


@case(mount=False, root=True)
def append_only_writers_overwrite_nothing():
    """A writer of an append-only file (chattr +a) overwrites nothing, on every
    data path: a shared mapping is refused (natively EACCES; the FUSE inode
    has no S_APPEND, so the daemon answers such opens FOPEN_DIRECT_IO and the
    kernel refuses it, ENODEV), and every write lands at the end, also after
    F_SETFL took O_APPEND off (natively EPERM; the kernel does not ask the
    daemon, whose backing descriptor keeps O_APPEND)."""
    with ufs.Mount() as m:
        start = b'a' * 100
        for d in (m.src, m.ref):
            ufs.write_file(f'{d}/f', start)
        try:
            for d in (m.src, m.ref):
                chattr('+a', f'{d}/f')
            got = append_only_writer(f'{m.mnt}/f')
            want = append_only_writer(f'{m.ref}/f')
            check_eq(want, (ufs.Outcome(None, E.EACCES), ufs.Outcome(None, E.EPERM)),
                     'natively: the shared mapping and F_SETFL refused')
            check(got[0].err in (E.EACCES, E.ENODEV),
                  f'a shared mapping through the mount: got {got[0]}, want EACCES or ENODEV')
            check_eq(ufs.read_file(f'{m.src}/f'), start + b'tail' + b'more',
                     'the backing file: every write appended, nothing overwritten')
            check_eq(ufs.read_file(f'{m.mnt}/f'), ufs.read_file(f'{m.ref}/f'),
                     'read through the mount, as natively')
        finally:
            for d in (m.src, m.ref):
                subprocess.run(['chattr', '-a', f'{d}/f'], capture_output=True)


@contextlib.contextmanager
def mounted(args, where):
    os.makedirs(where, exist_ok=True)
    r = subprocess.run(['mount'] + args + [where], capture_output=True, text=True)
    if r.returncode:
        raise ufs.Skip(f'mount {" ".join(args)}: {r.stderr.strip()}')
    try:
        yield where
    finally:
        subprocess.run(['umount', '-l', where])


@case(mount=False, root=True)
def pseudo_and_stacked_backings_fall_back():
    """Files of /proc are never passed through; files on overlayfs are refused by
    the kernel (ELOOP: max_stack_depth 1); both are served by the daemon."""
    require_own_io_path()
    base = ufs.scratch_dir('pt-stack')
    src = f'{base}/src'
    os.makedirs(f'{base}/lower')
    os.makedirs(f'{base}/upper')
    os.makedirs(f'{base}/work')
    ufs.write_file(f'{base}/lower/l', b'lower file\n')
    with mounted(['-t', 'proc', 'proc'], f'{src}/proc'):
        with mounted(['-t', 'overlay', 'overlay', '-o',
                      f'lowerdir={base}/lower,upperdir={base}/upper,workdir={base}/work'],
                     f'{src}/ovl'):
            with ufs.Mount(opts=PT, source=src) as m:
                before = m.stats()
                # Its size is 0, so the kernel reads nothing of it, on any path.
                ufs.read_file(f'{m.mnt}/proc/version')
                check_eq(ufs.read_file(f'{m.mnt}/ovl/l'), b'lower file\n', 'overlayfs file')
                after = m.stats()
                check_eq(moved(before, after, 'passthrough_refused_pseudo',
                               'passthrough_refused_eloop', 'opens_passthrough'),
                         {'passthrough_refused_pseudo': 1, 'passthrough_refused_eloop': 1,
                          'opens_passthrough': 0}, 'refusals')


@case(mount=False, root=True, user=True)
def without_cap_sys_admin():
    """An ordinary user's daemon cannot register backing files: auto says eperm
    and copies, the data is the same; io_path=passthrough refuses to start."""
    require_own_io_path()
    if os.stat('/dev/fuse').st_mode & 0o006 != 0o006:
        raise ufs.Skip('/dev/fuse is not open to ordinary users')
    with ufs.Mount(user=ufs.TEST_USER) as m:
        stats = m.stats()
        check(stats['passthrough'] in ('eperm', 'unused'), f'passthrough state {stats}')
        data = ufs.pattern(MiB + 7, seed=8)
        ufs.as_user(ufs.write_file, f'{m.mnt}/u', data)
        check_eq(ufs.as_user(ufs.read_file, f'{m.mnt}/u'), data, 'data through the mount')
        after = m.stats()
        check(after['opens_passthrough'] == 0 and after['op_write'] > 0,
              f'opens were passed through: {after}')
        if stats['passthrough'] == 'eperm':
            check('CAP_SYS_ADMIN' in m.log_text(), 'the log does not say why')
    m = ufs.Mount(user=ufs.TEST_USER, opts=PT)
    try:
        m.start()
    except Exception as e:
        check('CAP_SYS_ADMIN' in m.log_text(), f'io_path=passthrough as a user: {e}')
    else:
        m.stop()
        raise AssertionError('io_path=passthrough started without CAP_SYS_ADMIN')
    finally:
        m.abort()


@case(mount=False, root=True)
def forced_paths_are_kept():
    """io_path=copy copies every open; io_path=passthrough with writeback_cache,
    and io_path=zero_copy where the kernel has no buffer pools, refuse to start
    with a line naming why."""
    require_own_io_path()
    with ufs.Mount(opts='io_path=copy') as m:
        ufs.write_file(f'{m.mnt}/c', b'c' * 9000)
        check_eq(ufs.read_file(f'{m.mnt}/c'), b'c' * 9000, 'data')
        st = m.stats()
        check_eq((st['passthrough'], st['opens_passthrough'], st['io_path']), ('off', 0, 'copy'),
                 'passthrough with io_path=copy')
        check(st['opens_copy'] + st['opens_zero_copy'] >= 2, f'opens not counted: {st}')
    err = ufs.start_fails(['-o', 'io_path=passthrough,writeback_cache=on', ufs.run_dir()],
                          'passthrough with the writeback cache')
    check('writeback_cache' in err, f'message: {err}')
    with ufs.Mount() as m:
        bufpool = m.stats()['queue_mode'] == 'bufpool'
    if not bufpool:
        err = ufs.start_fails(['-o', 'io_path=zero_copy', ufs.run_dir()],
                              'zero copy without buffer pools')
        check('zero_copy' in err, f'message: {err}')


EXEC_AS_WRITER = '''import os, sys
target = sys.argv[1]
fd = os.open(target, os.O_RDONLY)      # the inode is now open (passed through, where allowed)
print("open", flush=True)
sys.stdin.readline()                   # the set-uid bit is set meanwhile
os.stat(target)                        # the mount caches the mode with the bit
fd2 = os.open(target, os.O_WRONLY)
with open("/usr/bin/whoami", "rb") as f:
    os.write(fd2, f.read())
os.close(fd2)
os.close(fd)
os.execv(target, [target])
'''


@case(mount=False, root=True, user=True)
def suid_mount_never_passes_through():
    """On a suid mount a user who rewrites a file made set-uid root while it was
    open must not exec it as root: a passthrough write clears the backing file's
    bit, but the mount's cached mode would keep it (killpriv_v2), so passthrough
    stays off there; io_path=passthrough with suid refuses to start."""
    require_own_io_path()
    user = ufs.test_user()
    with ufs.Mount(opts='allow_other,suid') as m:
        shutil.copy('/usr/bin/id', f'{m.src}/h')
        os.chown(f'{m.src}/h', 0, user.pw_gid)
        os.chmod(f'{m.src}/h', 0o775)
        p = subprocess.Popen(['setpriv', f'--reuid={user.pw_uid}', f'--regid={user.pw_gid}',
                              '--init-groups', '/usr/bin/python3', '-c', EXEC_AS_WRITER, f'{m.mnt}/h'],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            check_eq(p.stdout.readline().strip(), 'open', 'the user\'s first open')
            os.chmod(f'{m.src}/h', 0o4775)
            time.sleep(1.2)     # past attr_timeout: the user's stat sees the bit
            out, _ = p.communicate('\n', timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
        check_eq(out.strip(), user.pw_name, 'who the rewritten program ran as')
        check_eq(m.stats()['passthrough'], 'off', 'passthrough on a suid mount')
        check('suid' in m.log_text(), 'the log does not say why')
    err = ufs.start_fails(['-o', 'io_path=passthrough,suid', ufs.run_dir()],
                          'passthrough on a suid mount')
    check('suid' in err, f'message: {err}')
