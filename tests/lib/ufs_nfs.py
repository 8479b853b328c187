# SPDX-License-Identifier: GPL-2.0-or-later
"""An NFSv4.2 loopback: a tmpfs exported by the kernel's nfsd and mounted
over 127.0.0.1. nfsd and the NFS client are modules of Debian's 7.3 kernel
(the guest suite has them; this host's 6.18 has no nfsd). t_nfs mounts one
per case; the guest-nfs variant runs the core modules with their run
directory on one.
"""

import contextlib
import os
import shutil
import subprocess
import time

import ufs

EXPORT = '/srv/ufs-export'
GRACE_S = 10     # nfsd's shortest lease and grace time (nfsd4_lease_time: >= 10)


def run(*cmd):
    """Run cmd; its stdout, or AssertionError naming it and its error."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f'{" ".join(cmd)}: status {r.returncode}: '
                             f'{(r.stderr or r.stdout).strip()}')
    return r.stdout


def unavailable():
    """Why this machine cannot serve NFS over loopback, or None."""
    for mod in ('nfsd', 'nfsv4'):
        r = subprocess.run(['modprobe', mod], capture_output=True, text=True)
        if r.returncode:
            return f'no {mod} module in this kernel ({r.stderr.strip()}): the 7.3 guest has it'
    for tool in ('exportfs', 'rpc.nfsd', 'rpc.mountd', 'mount.nfs4'):
        if not shutil.which(tool):
            return f'{tool} is missing: apt install nfs-kernel-server nfs-common'
    if os.path.ismount(EXPORT):
        return f'{EXPORT} is mounted already: one loopback export at a time'
    return None


@contextlib.contextmanager
def loopback(mnt, size='1200m'):
    """Export a tmpfs of size and mount it at mnt (an empty directory);
    yields the export's own directory. Skip where unavailable()."""
    reason = unavailable()
    if reason:
        raise ufs.Skip(reason)
    with contextlib.ExitStack() as stack:
        os.makedirs(EXPORT, exist_ok=True)
        run('mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs', EXPORT)
        stack.callback(subprocess.run, ['umount', '-l', EXPORT])
        if not os.path.ismount('/proc/fs/nfsd'):
            run('mount', '-t', 'nfsd', 'nfsd', '/proc/fs/nfsd')
        os.makedirs('/var/lib/nfs/v4recovery', exist_ok=True)
        with open('/etc/exports', 'w') as f:
            f.write(f'{EXPORT} 127.0.0.1(rw,no_root_squash,fsid=0,insecure,no_subtree_check)\n')
        run('exportfs', '-ra')
        stack.callback(subprocess.run, ['exportfs', '-ua'])
        mountd = subprocess.Popen(['rpc.mountd', '-F', '-N', '2', '-N', '3'],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(mountd.wait)
        stack.callback(mountd.terminate)
        # A new nfsd refuses OPENs for its grace period (90 s), in which
        # clients of a previous instance reclaim their state: there are
        # none, so make it the shortest nfsd takes, and wait it out below.
        for knob in ('nfsv4leasetime', 'nfsv4gracetime'):
            try:
                with open(f'/proc/fs/nfsd/{knob}', 'w') as f:
                    f.write(str(GRACE_S))
            except OSError as e:    # EBUSY while nfsd runs: its 90 s then
                ufs.diag(f'nfsd {knob}: {e.strerror}; the first OPEN waits for it')
        run('rpc.nfsd', '-N', '3', '4')
        stack.callback(subprocess.run, ['rpc.nfsd', '0'])
        # noac: every stat asks the server, as the comparisons need
        run('mount', '-t', 'nfs4', '-o', 'vers=4.2,noac', '127.0.0.1:/', mnt)
        stack.callback(subprocess.run, ['umount', '-f', mnt])
        start = time.monotonic()
        open(f'{mnt}/.grace-over', 'w').close()   # blocks until it is
        os.unlink(f'{mnt}/.grace-over')
        if time.monotonic() - start > 120:
            raise ufs.HarnessError(f'the first OPEN took {time.monotonic() - start:.0f} s')
        yield EXPORT
