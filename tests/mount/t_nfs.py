# SPDX-License-Identifier: GPL-2.0-or-later
"""uringfs in front of NFSv4.2: a loopback export (nfsd and the NFS client
are modules of Debian's 7.3 kernel: the guest suite runs this), mounted,
and that mount as the backing directory. copy_file_range through uringfs
must become the server's COPY (server-side copy: the client reads nothing),
and what NFS does differently from a local file system (a file the server
dropped, a silly-renamed open file) must look through uringfs as it looks
on the NFS mount itself.
"""

import contextlib
import errno
import os
import select
import subprocess
import sys
import time

import ufs
import ufs_nfs
from ufs import case, check, check_eq

E = errno
MiB = 1 << 20
OP_COPY = 60    # RFC 7862: the NFSv4.2 COPY operation


@contextlib.contextmanager
def nfs_loopback():
    """ufs_nfs.loopback at a new scratch directory; yields (the export's own
    directory, the NFS mount)."""
    mnt = ufs.scratch_dir('nfs')
    with ufs_nfs.loopback(mnt) as export:
        yield export, mnt


def nfsd_ops():
    """nfsd's count of each NFSv4 operation (/proc/net/rpc/nfsd, proc4ops)."""
    with open('/proc/net/rpc/nfsd') as f:
        for line in f:
            if line.startswith('proc4ops '):
                return [int(x) for x in line.split()[2:]]
    raise AssertionError('nfsd has no proc4ops line')


def nfs_read_bytes(mnt):
    """The NFS client's bytes read from the server for the mount at mnt
    (/proc/self/mountstats: the first of "bytes:", normal reads)."""
    with open('/proc/self/mountstats') as f:
        inside = False
        for line in f:
            if line.startswith('device '):
                inside = f' mounted on {mnt} ' in line
            elif inside and line.strip().startswith('bytes:'):
                return int(line.split()[1])
    raise AssertionError(f'no NFS statistics for {mnt}')


@case(mount=False, root=True, timeout=600)
def server_side_copy():
    """copy_file_range of 256 MiB through uringfs over NFSv4.2 is the
    server's COPY: nfsd counts COPY operations, the NFS client reads far
    less than the file, and the copy is byte-identical."""
    ufs.require_daemon()
    size = 256 * MiB
    with nfs_loopback() as (export, nfs):
        os.mkdir(f'{nfs}/src')
        with open(f'{nfs}/src/big', 'wb') as f:
            for i in range(size // MiB):
                f.write(ufs.pattern(MiB, seed=i))
        with ufs.Mount(source=f'{nfs}/src') as m:
            copies_before, read_before = nfsd_ops()[OP_COPY], nfs_read_bytes(nfs)
            fi = os.open(f'{m.mnt}/big', os.O_RDONLY)
            fo = os.open(f'{m.mnt}/copy', os.O_WRONLY | os.O_CREAT, 0o644)
            done = 0
            while done < size:
                n = os.copy_file_range(fi, fo, size - done, done, done)
                check(n > 0, f'copy_file_range returned {n} at {done}')
                done += n
            os.close(fi)
            os.close(fo)
            copies, read = nfsd_ops()[OP_COPY] - copies_before, nfs_read_bytes(nfs) - read_before
            stats = m.stats()
        r = subprocess.run(['cmp', f'{export}/src/big', f'{export}/src/copy'])
    ufs.diag(f'256 MiB through uringfs over NFSv4.2: {copies} COPY operations, the client read '
             f'{read // MiB} MiB, cfr_bytes {stats["cfr_bytes"]}, cfr_fallback '
             f'{stats["cfr_fallback"]}')
    check(copies >= 1, 'nfsd counted no COPY: the copy moved the bytes through the client')
    check(read < size // 4, f'the NFS client read {read // MiB} MiB for a 256 MiB copy')
    check_eq(r.returncode, 0, 'the copy, byte for byte, on the server')


def stale_steps(d, export_dir):
    """A file the server drops while it is open and while it is only known."""
    out = []
    ufs.write_file(f'{d}/open', b'x' * 100)
    ufs.write_file(f'{d}/known', b'y' * 100)
    fd = os.open(f'{d}/open', os.O_RDONLY)
    os.stat(f'{d}/known')
    os.unlink(f'{export_dir}/open')    # on the server, behind the client
    os.unlink(f'{export_dir}/known')
    time.sleep(0.2)
    for what, fn in (('fstat of the open file', lambda: os.fstat(fd)),
                     ('read of the open file', lambda: os.pread(fd, 10, 0)),
                     ('stat of the known name', lambda: os.stat(f'{d}/known')),
                     ('open of the known name', lambda: os.close(os.open(f'{d}/known',
                                                                        os.O_RDONLY)))):
        try:
            fn()
            out.append((what, 'ok'))
        except OSError as e:
            out.append((what, E.errorcode[e.errno]))
    os.close(fd)
    return out


@case(mount=False, root=True, timeout=400)
def server_drops_inode():
    """Files removed on the server behind the client: through uringfs the
    same errors (ESTALE, ENOENT) as on the NFS mount itself."""
    ufs.require_daemon()
    with nfs_loopback() as (export, nfs):
        for sub in ('native', 'src'):
            os.mkdir(f'{nfs}/{sub}')
        want = stale_steps(f'{nfs}/native', f'{export}/native')
        with ufs.Mount(source=f'{nfs}/src', opts='attr_timeout=0,entry_timeout=0') as m:
            got = stale_steps(m.mnt, f'{export}/src')
    ufs.diag(f'NFS itself: {want}')
    check_eq(got, want, 'through uringfs against the NFS mount itself')


def silly_steps(d):
    """An open file unlinked: NFS renames it to .nfsXXXX until the last close."""
    ufs.write_file(f'{d}/f', b'z' * 100)
    fd = os.open(f'{d}/f', os.O_RDWR)
    os.unlink(f'{d}/f')
    during = sorted('.nfs' if n.startswith('.nfs') else n for n in os.listdir(d))
    data = os.pread(fd, 4, 0)
    os.pwrite(fd, b'Z', 0)
    os.close(fd)
    deadline = time.monotonic() + 10
    while any(n.startswith('.nfs') for n in os.listdir(d)) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = sorted(os.listdir(d))
    return [('listing while open', during), ('read while open', data),
            ('listing after the close', after)]


@case(mount=False, root=True, timeout=400)
def silly_renamed_open_file():
    """An open file unlinked through uringfs over NFS stays readable and
    writable, shows as a .nfs file while open and is gone after the close,
    as on the NFS mount itself."""
    ufs.require_daemon()
    with nfs_loopback() as (_, nfs):
        for sub in ('native', 'src'):
            os.mkdir(f'{nfs}/{sub}')
        want = silly_steps(f'{nfs}/native')
        with ufs.Mount(source=f'{nfs}/src') as m:
            got = silly_steps(m.mnt)
    ufs.diag(f'NFS itself: {want}')
    check_eq(got, want, 'through uringfs against the NFS mount itself')


def nfsd_serve(path):
    """nfsd exporting path as the NFSv4 root; fsid= because a FUSE mount has
    no UUID for nfsd to put in its file handles."""
    with open('/etc/exports', 'w') as f:
        f.write(f'{path} 127.0.0.1(rw,no_root_squash,fsid=0,insecure,no_subtree_check)\n')
    ufs_nfs.run('exportfs', '-ra')
    for knob in ('nfsv4leasetime', 'nfsv4gracetime'):
        try:
            with open(f'/proc/fs/nfsd/{knob}', 'w') as f:
                f.write(str(ufs_nfs.GRACE_S))
        except OSError as e:
            ufs.diag(f'nfsd {knob}: {e.strerror}')
    ufs_nfs.run('rpc.nfsd', '-N', '3', '4')


def nfsd_stop():
    """The NFS server goes down (as at a reboot): its state and its exports."""
    subprocess.run(['rpc.nfsd', '0'], capture_output=True)
    subprocess.run(['exportfs', '-ua'], capture_output=True)


def unmount_when_free(m, timeout=60.0):
    """Unmount m once nfsd has let go of it (its export cache may hold it a while)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            m.stop()
            return
        except ufs.HarnessError as e:
            if time.monotonic() > deadline:
                raise
            ufs.diag(f'unmount: {str(e).splitlines()[0]}')
            time.sleep(2)


# The NFS client's side, in a child of its own: an NFS call to a server that
# is down waits (hard mount) until it comes back, and only SIGKILL ends such
# a wait, so a failure kills the child instead of hanging the suite.
HOLDER = r"""
import errno, os, sys
c = sys.argv[1]
def t(fn):
    try:
        return repr(fn())
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open(f'{c}/f', os.O_RDWR | os.O_DIRECT)
dfd = os.open(f'{c}/d', os.O_RDONLY | os.O_DIRECTORY)
print(t(lambda: os.pread(fd, 100, 0)), flush=True)
sys.stdin.readline()
print(t(lambda: os.pread(fd, 100, 0)), flush=True)
print(t(lambda: (os.pwrite(fd, b'CHANGED', 0), os.fsync(fd))[0]), flush=True)
print(t(lambda: sorted(os.listdir(dfd))), flush=True)
os.close(fd)
os.close(dfd)
print('closed', flush=True)
"""


def holder_says(proc, what, timeout=240.0):
    """The holder's next line, within timeout."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    check(ready, f'{what}: the NFS client still waits after {timeout:.0f} s')
    line = proc.stdout.readline().strip()
    check(line, f'{what}: the holder ended (status {proc.poll()})')
    ufs.diag(f'{time.strftime("%T")} {what}: {line}')
    return line


@case(mount=False, root=True, timeout=600)
def reexport_survives_daemon_restart():
    """uringfs re-exported over NFSv4 with export_store: a client holds a file
    open while the server goes down (nfsd stopped, the daemon unmounted) and
    a new daemon starts from scratch on the same SOURCE and store; the client
    then reads (O_DIRECT: from the server, what was written meanwhile) and
    writes on through its old file handle, and lists a directory it holds."""
    ufs.require_daemon()
    reason = ufs_nfs.unavailable()
    if reason:
        raise ufs.Skip(reason)
    src = ufs.scratch_dir('src')
    client = ufs.scratch_dir('nfs')
    opts = f'export_store={ufs.scratch_dir("store")}/export,allow_other'
    with contextlib.ExitStack() as stack:
        if not os.path.ismount('/proc/fs/nfsd'):
            ufs_nfs.run('mount', '-t', 'nfsd', 'nfsd', '/proc/fs/nfsd')
        os.makedirs('/var/lib/nfs/v4recovery', exist_ok=True)
        m = ufs.Mount(source=src, opts=opts)
        stack.enter_context(m)
        mountd = subprocess.Popen(['rpc.mountd', '-F', '-N', '2', '-N', '3'],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(mountd.wait)
        stack.callback(mountd.terminate)
        stack.callback(nfsd_stop)
        nfsd_serve(m.mnt)
        ufs_nfs.run('mount', '-t', 'nfs4', '-o', 'vers=4.2', '127.0.0.1:/', client)
        # With the server up (else the client's unmount waits for it): bounded all the same.
        stack.callback(subprocess.run, ['umount', '-f', '-l', client], timeout=60)
        ufs.diag(f'{time.strftime("%T")} {m.mnt} exported and mounted')
        ufs.write_file(f'{client}/f', b'before the restart')    # waits out the grace time
        os.mkdir(f'{client}/d')
        ufs.write_file(f'{client}/d/g', b'g')
        holder = subprocess.Popen([sys.executable, '-c', HOLDER, client], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        stack.callback(holder.wait)
        stack.callback(holder.kill)
        check_eq(holder_says(holder, 'the read before'), repr(b'before the restart'),
                 'the read before')

        nfsd_stop()
        unmount_when_free(m)
        ufs.diag(f'{time.strftime("%T")} nfsd stopped, the daemon unmounted')
        ufs.write_file(f'{src}/f', b'changed while down')
        ufs.write_file(f'{src}/d/h', b'h')
        m2 = ufs.Mount(source=src, opts=opts)
        stack.enter_context(m2)
        check('node ids of earlier daemons kept' in m2.log_text(), 'the store was read'
              + m2.log_tail())
        nfsd_serve(m2.mnt)
        ufs.diag(f'{time.strftime("%T")} nfsd and the daemon restarted')
        holder.stdin.write('go\n')
        holder.stdin.flush()
        check_eq(holder_says(holder, 'the held file read after the restart'),
                 repr(b'changed while down'), 'the held file read after the restart')
        check_eq(holder_says(holder, 'a write through it'), '7', 'a write through it')
        check_eq(ufs.read_file(f'{src}/f'), b'CHANGED while down', 'written through it')
        check_eq(holder_says(holder, 'the held directory listed'), repr(['g', 'h']),
                 'the held directory listed')
        check_eq(holder_says(holder, 'closing'), 'closed', 'the holder closes')
        ufs_nfs.run('umount', client)
        nfsd_stop()
        unmount_when_free(m2)
