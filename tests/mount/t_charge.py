# SPDX-License-Identifier: GPL-2.0-or-later
"""Whose limits a call meets (issue 24 item 1): a client writing through the
mount gets exactly the limits it has natively on the backing file system, not
the daemon's (root's).

SOURCE is a small loop-mounted ext4 made with `mkfs.ext4 -m 50`: half of it
is reserved for root (s_resuid 0) and CAP_SYS_RESOURCE.  An ordinary user
fills it natively up to the reserve; through the mount the same user must
stop at the same place, whatever the data path (daemon copy, kernel
passthrough, a backing file root registered first) and whatever the call
(write, fallocate, copy_file_range, link, rename, setxattr).  Quota hard
limits (user, group, project) need a kernel with CONFIG_QUOTA (the 7.3
guest).  RLIMIT_FSIZE must end writes as natively.
"""

import contextlib
import ctypes
import errno
import os
import re
import resource
import signal
import struct
import subprocess

import ufs
from ufs import case, check, check_eq

MiB = 1 << 20
# What bytes may differ between two runs that stop at ENOSPC: the kernel's
# block reservations are estimates, and the daemon path writes in chunks.
SLACK = 2 * MiB


def test_ids():
    pw = ufs.test_user()
    return pw.pw_uid, pw.pw_gid


def as_ids(uid, gid, fn, *args):
    """fn(*args) in a child with only uid/gid (no supplementary groups)."""
    def body(_chan):
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        return fn(*args)
    with ufs.Child(body) as c:
        return c.join(60)


def as_test_user(fn, *args):
    return as_ids(*test_ids(), fn, *args)


@contextlib.contextmanager
def reserve_fs(size_mb=64, reserve=50, features=None, mount_opts=None):
    """A loop-mounted ext4 with reserve% for root; yields its src/ (0777)."""
    base = ufs.scratch_dir('ext4')
    img, fsdir = f'{base}/img', f'{base}/fs'
    os.mkdir(fsdir)
    with open(img, 'wb') as f:
        f.truncate(size_mb * MiB)
    mkfs = ['mkfs.ext4', '-q', '-F', '-m', str(reserve)] + \
        (['-O', features] if features else []) + [img]
    r = subprocess.run(mkfs, capture_output=True, text=True)
    if r.returncode:
        raise ufs.Skip(f'mkfs.ext4 failed: {r.stderr.strip()}')
    cmd = ['mount', '-o', 'loop' + (',' + mount_opts if mount_opts else ''), img, fsdir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        # The kernel's reason (no quota format built in...) is in its log.
        k = subprocess.run(['dmesg'], capture_output=True, text=True).stdout.splitlines()
        why = [line for line in k if 'EXT4-fs' in line][-1:]
        raise ufs.Skip(f'cannot loop-mount an ext4 with {cmd[2]}: {r.stderr.strip()} '
                       f'{" ".join(why)}')
    try:
        src = f'{fsdir}/src'
        os.mkdir(src)
        os.chmod(src, 0o777)
        yield src
    finally:
        # The loop device goes with the mount (autoclear); lazily if busy.
        if subprocess.run(['umount', fsdir], capture_output=True).returncode:
            subprocess.run(['umount', '-l', fsdir], capture_output=True)
        os.unlink(img)


def fill(path, total=100 * MiB, chunk=MiB, flags=0):
    """dd if=/dev/zero bs=1M count=100 of=path: the bytes written, and the error."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
    buf = b'\0' * chunk
    done, err = 0, None
    try:
        while done < total:
            try:
                n = os.write(fd, buf)
            except OSError as e:
                err = errno.errorcode.get(e.errno, e.errno)
                break
            done += n
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
    return done, err


def settle(path):
    """Unlink path and let the file system count its blocks free again."""
    os.unlink(path)
    os.sync()


def fill_up(path):
    """Fill as the user to the last block: 1 MiB writes, then 4 KiB ones
    after fsync has released what delayed allocation held back."""
    out = []
    for i, chunk in enumerate((MiB, 4096, 4096)):
        os.sync()
        out.append(fill(f'{path}{i}', 100 * MiB, chunk))
    return out


def native_fill(src):
    got = as_test_user(fill, f'{src}/native')
    settle(f'{src}/native')
    check(got[1] == 'ENOSPC', f'natively the user stops at ENOSPC, got {got}')
    return got[0]


def check_near(got, want, what):
    check(abs(got - want) <= SLACK,
          f'{what}: {got} bytes through the mount, {want} natively (the reserve is root\'s)')


def opts_for(io_path=None, extra=None):
    """allow_other, and io_path unless the variant forces it (it must agree)."""
    forced = 'io_path=' in (ufs.config().opts or '')
    if io_path and forced and f'io_path={io_path}' not in ufs.config().opts:
        raise ufs.Skip(f'the variant forces {ufs.config().opts}')
    return ufs.join_opts('allow_other', f'io_path={io_path}' if io_path and not forced else None,
                         extra)


def reserve_case(io_path):
    def run():
        ufs.require_daemon()
        with reserve_fs() as src:
            native = native_fill(src)
            with ufs.Mount(opts=opts_for(io_path), source=src) as m:
                got = as_test_user(fill, f'{m.mnt}/f')
            check_eq(got[1], 'ENOSPC', 'the error through the mount')
            check_near(got[0], native, 'dd as the user')
    run.__name__ = f'reserve_{io_path or "default"}'
    run.__doc__ = f'A user\'s writes stop at root\'s reserve (io_path={io_path or "auto"}).'
    case(mount=False, user=True, root=True, timeout=120)(run)


for _p in (None, 'copy', 'passthrough'):
    reserve_case(_p)


def write_all(path, total):
    """Writes that the page cache takes; the errors come with fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(total // MiB):
            with contextlib.suppress(OSError):
                os.write(fd, b'\0' * MiB)
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@case(mount=False, user=True, root=True, timeout=120)
def reserve_writeback():
    """With the writeback cache the kernel writes the pages back with no
    caller (uid 0, pid 0): the file's opener pays, not root."""
    ufs.require_daemon()
    with reserve_fs() as src:
        native = native_fill(src)
        opts = opts_for('copy', 'writeback_cache=on')
        with ufs.Mount(opts=opts, source=src) as m:
            as_test_user(write_all, f'{m.mnt}/f', 100 * MiB)
        got = os.stat(f'{src}/f').st_blocks * 512
        check_near(got, native, 'bytes written back for the user')


def shared_case(io_path):
    def run():
        shared_open(io_path)
    run.__name__ = f'reserve_root_opened_first_{io_path}'
    run.__doc__ = f"Root opens the file first, then the user writes it (io_path={io_path})."
    case(mount=False, user=True, root=True, timeout=120)(run)


def shared_open(io_path):
    """Root opens the file first (with passthrough: the inode's backing file
    registered as root, shared by every open), then the user writes it:
    still the user's limits; root's own writes through its open still get
    the reserve."""
    ufs.require_daemon()
    uid, gid = test_ids()
    with reserve_fs() as src:
        native = native_fill(src)
        with ufs.Mount(opts=opts_for(io_path), source=src) as m:
            path = f'{m.mnt}/f'
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                os.fchown(fd, uid, gid)
                got = as_test_user(fill, path, 100 * MiB, MiB, 0)
                check_eq(got[1], 'ENOSPC', 'the user\'s error')
                check_near(got[0], native, 'dd as the user after root\'s open')
                # Root's own open: past the user's limit, into the reserve.
                n = os.pwrite(fd, b'\1' * MiB, got[0])
                check_eq(n, MiB, 'root\'s write into the reserve')
            finally:
                os.close(fd)


for _p in ('passthrough', 'copy'):
    shared_case(_p)


def fallocate(path, length):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, length)
        return None
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)
    finally:
        os.close(fd)


@case(mount=False, user=True, root=True, timeout=120)
def fallocate_reserve():
    """fallocate of more than the user's share fails as natively."""
    ufs.require_daemon()
    with reserve_fs() as src:
        native = as_test_user(fallocate, f'{src}/native', 30 * MiB)
        settle(f'{src}/native')
        check_eq(native, 'ENOSPC', 'native fallocate as the user')
        with ufs.Mount(opts=opts_for(), source=src) as m:
            check_eq(as_test_user(fallocate, f'{m.mnt}/f', 30 * MiB), native,
                     'fallocate through the mount')
            check_eq(fallocate(f'{m.mnt}/g', 30 * MiB), None, 'root\'s fallocate')


def copy_range(path_in, path_out, length):
    fi = os.open(path_in, os.O_RDONLY)
    fo = os.open(path_out, os.O_WRONLY | os.O_CREAT, 0o644)
    done = 0
    try:
        while done < length:
            n = os.copy_file_range(fi, fo, length - done, done, done)
            if not n:
                break
            done += n
    except OSError as e:
        return done, errno.errorcode.get(e.errno, e.errno)
    finally:
        os.close(fi)
        os.close(fo)
    return done, None


@case(mount=False, user=True, root=True, timeout=120)
def copy_file_range_reserve():
    """copy_file_range by the user stops where it does natively."""
    ufs.require_daemon()
    with reserve_fs() as src:
        ufs.write_file(f'{src}/big', b'\1' * (16 * MiB))
        os.sync()
        native = as_test_user(copy_range, f'{src}/big', f'{src}/native', 16 * MiB)
        settle(f'{src}/native')
        check(native[1] == 'ENOSPC', f'natively the copy stops at ENOSPC, got {native}')
        with ufs.Mount(opts=opts_for(), source=src) as m:
            got = as_test_user(copy_range, f'{m.mnt}/big', f'{m.mnt}/c', 16 * MiB)
        check_eq(got[1], 'ENOSPC', 'the error through the mount')
        check_near(got[0], native[0], 'copy_file_range as the user')


def names_until_enospc(op, src_dir, dst_dir, count):
    """link or rename src_dir/f<i> to long names in dst_dir: how many went."""
    for i in range(count):
        name = f'{dst_dir}/' + f'{i:04d}' + 'n' * 200
        try:
            if op == 'link':
                os.link(f'{src_dir}/f', name)
            elif op == 'mkdir':
                os.mkdir(name)
            else:
                os.rename(f'{src_dir}/f{i}', name)
        except OSError as e:
            return i, errno.errorcode.get(e.errno, e.errno)
    return count, None


def big_xattrs(path, count):
    for i in range(count):
        name = f'{path}{i}'
        open(name, 'w').close()
        try:
            os.setxattr(name, 'user.big', b'x' * 900)
        except OSError as e:
            return i, errno.errorcode.get(e.errno, e.errno)
    return count, None


@case(mount=False, user=True, root=True, timeout=120)
def names_and_xattrs_reserve():
    """On a file system full for the user, link, rename, setxattr and mkdir
    that need a block fail as natively (the reserve is not theirs)."""
    ufs.require_daemon()
    uid, gid = test_ids()
    with reserve_fs() as src:
        for side in ('n', 'm'):
            for d in (f'{side}pool', f'{side}dst', f'{side}x'):
                os.mkdir(f'{src}/{d}')
                os.chown(f'{src}/{d}', uid, gid)
            ufs.write_file(f'{src}/{side}pool/f', b'')
            for i in range(64):
                ufs.write_file(f'{src}/{side}pool/f{i}', b'')
            subprocess.run(['chown', '-R', f'{uid}:{gid}', f'{src}/{side}pool'], check=True)
        got = as_test_user(fill_up, f'{src}/filler')
        check_eq([g[1] for g in got], ['ENOSPC'] * 3, 'filling as the user')
        os.sync()
        native = {
            'link': as_test_user(names_until_enospc, 'link', f'{src}/npool', f'{src}/ndst', 64),
            'xattr': as_test_user(big_xattrs, f'{src}/nx/f', 64),
            'mkdir': as_test_user(names_until_enospc, 'mkdir', None, f'{src}/nx', 64),
        }
        for what, res in native.items():
            check_eq(res[1], 'ENOSPC', f'natively, {what} as the user')
        with ufs.Mount(opts=opts_for(), source=src) as m:
            # The few blocks left between the two runs differ: the error counts.
            got = as_test_user(names_until_enospc, 'link', f'{m.mnt}/mpool', f'{m.mnt}/mdst', 64)
            check_eq(got[1], 'ENOSPC', f'links through the mount ({got[0]} made)')
            got = as_test_user(big_xattrs, f'{m.mnt}/mx/f', 64)
            check_eq(got[1], 'ENOSPC', f'xattr blocks through the mount ({got[0]} made)')
            # A creating call runs as the caller, without root's CAP_SYS_RESOURCE.
            got = as_test_user(names_until_enospc, 'mkdir', None, f'{m.mnt}/mx', 64)
            check_eq(got[1], 'ENOSPC', f'mkdir through the mount ({got[0]} made)')
        # rename: its own run, on the directories the links left alone
        os.mkdir(f'{src}/nr')
        os.mkdir(f'{src}/mr')
        for d in ('nr', 'mr'):
            os.chown(f'{src}/{d}', uid, gid)
        want = as_test_user(names_until_enospc, 'rename', f'{src}/npool', f'{src}/nr', 64)
        check_eq(want[1], 'ENOSPC', 'natively, rename as the user')
        with ufs.Mount(opts=opts_for(), source=src) as m:
            got = as_test_user(names_until_enospc, 'rename', f'{m.mnt}/mpool', f'{m.mnt}/mr', 64)
        check_eq(got[1], 'ENOSPC', f'renames through the mount ({got[0]} made)')


def fsize_limited(path, limit, op):
    """op past RLIMIT_FSIZE: what it does (the bytes, errno, signal ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if op == 'write':
            done = 0
            while done < 2 * limit:
                done += os.write(fd, b'\2' * (256 << 10))
            return done, None
        if op == 'fallocate':
            os.posix_fallocate(fd, 0, 2 * limit)
            return os.fstat(fd).st_size, None
        if op == 'truncate':
            os.ftruncate(fd, 2 * limit)
            return os.fstat(fd).st_size, None
    except OSError as e:
        return os.fstat(fd).st_size, errno.errorcode.get(e.errno, e.errno)
    finally:
        os.close(fd)


@case(mount=True, user=True, root=True, opts='allow_other')
def fsize_limit(m):
    """RLIMIT_FSIZE ends a user's write, fallocate and truncate as natively."""
    os.chmod(m.src, 0o777)
    for op in ('write', 'fallocate', 'truncate'):
        want = as_test_user(fsize_limited, f'{m.src}/n-{op}', 4 * MiB, op)
        got = as_test_user(fsize_limited, f'{m.mnt}/m-{op}', 4 * MiB, op)
        check_eq(got, want, f'{op} past RLIMIT_FSIZE')


def try_write(path, n):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)
    try:
        os.write(fd, b'\3' * n)
        os.fsync(fd)
        return None
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)
    finally:
        os.close(fd)


@case(mount=False, user=True, root=True, timeout=120)
def many_writers():
    """More writers than a worker keeps io_uring personalities for: each is
    charged as itself (ENOSPC past the user's share), root's writes still
    get the reserve, in any order."""
    ufs.require_daemon()
    with reserve_fs() as src:
        # Files made first: only their data needs space afterwards.
        uids = [70000 + i for i in range(24)]
        for u in uids:
            ufs.write_file(f'{src}/w{u}', b'')
            os.chown(f'{src}/w{u}', u, u)
        got = as_test_user(fill_up, f'{src}/filler')
        check_eq([g[1] for g in got], ['ENOSPC'] * 3, 'filling as the user')
        os.sync()
        # The copy path: on the ring, one io_uring personality per writer.
        with ufs.Mount(opts=opts_for('copy'), source=src) as m:
            for rnd in range(2):
                for u in uids:
                    check_eq(as_ids(u, u, try_write, f'{m.mnt}/w{u}', 256 << 10), 'ENOSPC',
                             f'round {rnd}: uid {u} writing past its share')
                    if u % 8 == 0:
                        check_eq(try_write(f'{m.mnt}/root{u}-{rnd}', 64 << 10), None,
                                 'root writing into its reserve')


# ---- quotas: a kernel with CONFIG_QUOTA (the 7.3 guest) ----

Q_SETQUOTA = 0x800008
USRQUOTA, GRPQUOTA, PRJQUOTA = 0, 1, 2
QIF_BLIMITS = 1
FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR = 0x801c581f, 0x401c5820
FS_XFLAG_PROJINHERIT = 0x200


def require_quota():
    if not os.path.exists('/proc/sys/fs/quota'):
        raise ufs.Skip('this kernel has no quota support (CONFIG_QUOTA: no /proc/sys/fs/quota)')


def set_block_limit(dev, kind, qid, limit):
    libc = ctypes.CDLL(None, use_errno=True)
    # struct if_dqblk: 8 x u64 (bhard, bsoft, cur, ihard, isoft, cur, btime, itime), u32 valid
    blk = struct.pack('QQQQQQQQI', limit // 1024, limit // 1024, 0, 0, 0, 0, 0, 0, QIF_BLIMITS)
    buf = ctypes.create_string_buffer(blk, len(blk) + 4)
    if libc.quotactl(ctypes.c_int((Q_SETQUOTA << 8) | kind), dev.encode(), qid, buf):
        e = ctypes.get_errno()
        raise ufs.Skip(f'quotactl(Q_SETQUOTA) on {dev}: {os.strerror(e)}')


def set_project(path, projid):
    import fcntl
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = bytearray(28)
        fcntl.ioctl(fd, FS_IOC_FSGETXATTR, buf)
        xflags, extsize, _, _, cowext = struct.unpack('IIIII', buf[:20])
        struct.pack_into('IIIII', buf, 0, xflags | FS_XFLAG_PROJINHERIT, extsize, 0, projid,
                         cowext)
        fcntl.ioctl(fd, FS_IOC_FSSETXATTR, buf)
    finally:
        os.close(fd)


def quota_case(kind):
    def run():
        ufs.require_daemon()
        require_quota()
        uid, gid = test_ids()
        with reserve_fs(reserve=0, features='quota,project',
                        mount_opts='usrquota,grpquota,prjquota') as src:
            dev = subprocess.run(['findmnt', '-no', 'SOURCE', '--target', src],
                                 capture_output=True, text=True).stdout.strip()
            d = f'{src}/q'
            os.mkdir(d)
            os.chown(d, uid, gid)
            if kind == PRJQUOTA:
                set_project(d, 4242)
            qid = {USRQUOTA: uid, GRPQUOTA: gid, PRJQUOTA: 4242}[kind]
            set_block_limit(dev, kind, qid, 8 * MiB)
            native = as_test_user(fill, f'{d}/native')
            settle(f'{d}/native')
            check(native[1] == 'EDQUOT', f'natively the user stops at EDQUOT, got {native}')
            with ufs.Mount(opts=opts_for(), source=src) as m:
                got = as_test_user(fill, f'{m.mnt}/q/f')
            check_eq(got[1], 'EDQUOT', 'the error through the mount')
            check_near(got[0], native[0], 'dd as the user under a quota')
    run.__name__ = f'quota_{("user", "group", "project")[kind]}'
    run.__doc__ = 'A hard quota limit holds through the mount as natively.'
    case(mount=False, user=True, root=True, timeout=180)(run)


for _k in (USRQUOTA, GRPQUOTA, PRJQUOTA):
    quota_case(_k)


def chgrp(path, gid):
    try:
        os.chown(path, -1, gid)
        return None
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)


@case(mount=False, user=True, root=True, timeout=180)
def quota_chgrp():
    """chgrp moves a file's blocks to the new group's quota: past its hard
    limit that fails for the user as natively (the daemon's CAP_SYS_RESOURCE
    would waive it)."""
    ufs.require_daemon()
    require_quota()
    uid, gid = test_ids()
    grp_gid = ufs.test_group().gr_gid
    with reserve_fs(reserve=0, features='quota', mount_opts='usrquota,grpquota') as src:
        dev = subprocess.run(['findmnt', '-no', 'SOURCE', '--target', src],
                             capture_output=True, text=True).stdout.strip()
        for name in ('n', 'm'):
            ufs.write_file(f'{src}/{name}', b'\4' * (4 * MiB))
            os.chown(f'{src}/{name}', uid, gid)
        os.sync()
        set_block_limit(dev, GRPQUOTA, grp_gid, MiB)
        groups = [gid, grp_gid]
        native = ufs.as_user(chgrp, f'{src}/n', grp_gid, groups=groups)
        check_eq(native, 'EDQUOT', 'natively, chgrp past the group\'s hard limit')
        with ufs.Mount(opts=opts_for(), source=src) as m:
            got = ufs.as_user(chgrp, f'{m.mnt}/m', grp_gid, groups=groups)
        check_eq(got, native, 'chgrp through the mount')



def iowq_links(tool, path):
    """tests/mount/helpers/iowq-drop.c as the test user, a root-made io-wq
    worker linking path: (worker tid, links made, errno name)."""
    uid, gid = test_ids()
    r = subprocess.run([tool, str(uid), str(gid), path, '64'], capture_output=True, text=True,
                       timeout=60)
    check_eq((r.returncode, r.stderr.strip()), (0, ''), f'iowq-drop {path}')
    got = dict(ln.split(' ', 1) for ln in r.stdout.splitlines())
    made, err = got['made'].split(' err ')
    return int(got['worker']), int(made), errno.errorcode.get(int(err), 'none')


@case(mount=False, user=True, root=True, timeout=120)
def worker_acting_for_the_caller():
    """A process that used io_uring as root and dropped to a user keeps a
    worker thread with root's own credentials, which runs the process's
    calls with the user's put over them (override_creds): the FUSE request
    names that worker.  Its links through the mount stop where the user's
    stop natively (the 7.3 guest, where root holds CAP_SYS_RESOURCE, shows
    the reserve), and the daemon never asks the worker's own capabilities
    (capget of it) for the user's request."""
    ufs.require_daemon()
    tool = ufs.c_helper('helpers/iowq-drop.c', '-luring')
    uid, gid = test_ids()
    with reserve_fs() as src:
        for side in ('native', 'mount'):
            os.mkdir(f'{src}/{side}')
            ufs.write_file(f'{src}/{side}/f', b'')
            for path in (f'{src}/{side}', f'{src}/{side}/f'):
                os.chown(path, uid, gid)
        got = as_test_user(fill_up, f'{src}/filler')
        check_eq([g[1] for g in got], ['ENOSPC'] * 3, 'filling as the user')
        os.sync()
        native = iowq_links(tool, f'{src}/native/f')
        check_eq(native[2], 'ENOSPC', f'natively the user\'s links stop at ENOSPC: {native}')
        out = []
        with ufs.Mount(opts=opts_for(), source=src) as m:
            trace = ufs.strace_daemon(m, lambda: out.append(iowq_links(tool, f'{m.mnt}/mount/f')),
                                      '-e', 'trace=capget')
        worker, made, err = out[0]
        ufs.diag(f'links natively {native[1:]}, through the mount {(made, err)}')
        check(err == 'ENOSPC' and made <= native[1] + 2,
              f'through the mount the user made {made} links ({err}), natively {native[1]}')
        asked = [ln for ln in trace.splitlines() if f'pid={worker}}}' in ln]
        check(worker and not asked, f'the daemon asked worker {worker}\'s own capabilities: '
              f'{asked[:1]}')

# ---- what asking about the caller costs ----

def root_file_calls(mnt, n):
    """As root: create, chown, chmod, truncate, utimes, setxattr, link,
    rename and reopen n files, the calls of an untar or a git checkout."""
    for i in range(n):
        name = f'{mnt}/f{i}'
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.fchown(fd, 0, 0)
            os.fchmod(fd, 0o640)
            os.ftruncate(fd, 100)
            os.utime(fd, (1, 1))
            os.setxattr(fd, 'user.k', b'v')
        finally:
            os.close(fd)
        os.link(name, f'{name}.l')
        os.rename(f'{name}.l', f'{name}.r')
        os.close(os.open(name, os.O_RDONLY))


@case(root=True)
def caller_read_without_proc(m):
    """A root caller's creating and attribute calls read no /proc/PID/status:
    while a caller waits for its reply its capabilities come from capget(2)
    (caller.c).  The status file cost about a round trip per read, and an
    untar read it four times a file.  What the answers decide (the reserve,
    CAP_FSETID) is checked by the cases above and t_posix's capsh steps."""
    ufs.require_daemon('the reads are the daemon\'s')
    root_file_calls(m.mnt, 2)
    os.mkdir(f'{m.mnt}/d')
    trace = ufs.strace_daemon(m, lambda: root_file_calls(f'{m.mnt}/d', 20),
                              '-e', 'trace=openat,open')
    reads = [ln for ln in trace.splitlines() if re.search(r'"/proc/\d+/status"', ln)]
    ufs.diag(f'{len(reads)} status reads for 20 files; first: {reads[:1]}')
    check_eq(len(reads), 0, 'reads of a caller\'s /proc/PID/status for 20 files made by root')
