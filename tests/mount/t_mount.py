# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's life cycle and its mount: how it shows in mountinfo, the ways
it ends (fusermount3 -u, umount, SIGTERM, SIGINT) with exit status 0, start-up
failures, and the hidden read-only control file.  These cases need the real
daemon and skip on the bind variant.
"""

import contextlib
import errno
import os
import signal
import subprocess
import time

import ufs
from ufs import case, check, check_eq, check_errno

E = errno


@case(mount=False)
def mount_entry():
    ufs.require_daemon()
    with ufs.Mount() as m:
        entry = ufs.mount_entry(m.mnt)
        check_eq(entry.fstype, ufs.FSTYPE, 'fstype')
        check_eq(entry.source, m.src, 'fsname (mount source)')
        check('default_permissions' in entry.superopts,
              f'default_permissions not on by default: {entry.superopts}')
        check('allow_other' not in entry.superopts, f'allow_other without asking: {entry.superopts}')
    with ufs.Mount(opts='allow_other') as m:
        check('allow_other' in ufs.mount_entry(m.mnt).superopts, 'allow_other missing')


@case(mount=False)
def unmount_right_after_mount():
    """fusermount3 -u as soon as the mount shows in mountinfo, many times:
    nothing the daemon does at start-up may keep the mount busy."""
    ufs.require_daemon()
    for i in range(20):
        with ufs.Mount(opts='allow_other' if i % 2 else None):
            pass


def ends_with(how):
    """Start a mount, write a file, end the daemon `how`; exit 0, mount gone."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'before the end')
        if how == 'umount':
            subprocess.run(['umount', m.mnt], check=True)
            m.ended('umount')
        else:
            m.terminate(how)
        check_eq(ufs.read_file(f'{m.src}/f'), b'before the end', 'backing file after the end')


@case(mount=False)
def exit_on_umount():
    ends_with('umount')


@case(mount=False)
def exit_on_sigterm():
    ends_with(signal.SIGTERM)


@case(mount=False)
def exit_on_sigint():
    ends_with(signal.SIGINT)


@case(mount=False)
def sigterm_with_open_file():
    """SIGTERM while a file is open: the daemon must still unmount and exit 0."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        fd = os.open(f'{m.mnt}/f', os.O_CREAT | os.O_RDWR)
        try:
            os.write(fd, b'x')
            m.terminate(signal.SIGTERM)
        finally:
            with contextlib.suppress(OSError):  # the connection may be gone by now
                os.close(fd)


def start_fails(args, what):
    """The daemon started with args must exit non-zero with a message, unmounted."""
    ufs.require_daemon()
    mnt = f'{ufs.scratch_dir("fail")}/mnt'
    os.mkdir(mnt)
    proc = subprocess.Popen([ufs.config().daemon, '-f'] + args + [mnt], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + ufs.EXIT_TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline and not ufs.mount_entry(mnt):
            time.sleep(0.05)
        check(not ufs.mount_entry(mnt), f'{what}: the daemon mounted anyway')
        check(proc.poll() is not None, f'{what}: the daemon is still running')
    finally:
        if ufs.mount_entry(mnt):
            subprocess.run(['fusermount3', '-u', '-z', mnt])
        proc.kill()
        stderr = proc.communicate()[1]
    check(proc.returncode != 0, f'{what}: exit status 0')
    check(stderr.strip(), f'{what}: no error message on stderr')


@case(mount=False)
def missing_source_fails():
    start_fails(['/nonexistent/uringfs-source'], 'missing source')


@case(mount=False)
def bad_option_fails():
    src = ufs.scratch_dir('src')
    start_fails(['-o', 'no_such_option=1', src], 'unknown option')
    start_fails(['-o', 'io_uring=maybe', src], 'io_uring=maybe')


@case
def control_file(m):
    ufs.require_daemon('the control file is the daemon\'s')
    stats = m.stats()
    if stats is None:
        raise ufs.Skip(f'no {ufs.CONTROL} control file yet')
    path = f'{m.mnt}/{ufs.CONTROL}'
    check('transport' in stats, f'no transport line in {stats}')
    check(ufs.CONTROL not in os.listdir(m.mnt), f'{ufs.CONTROL} is listed by readdir')
    check(not os.path.exists(f'{m.src}/{ufs.CONTROL}'), 'control file created in the source')
    check_errno((E.EACCES, E.EPERM, E.EROFS), os.open, path, os.O_WRONLY)
    check_errno((E.EACCES, E.EPERM, E.EROFS), os.unlink, path)
    check_errno((E.EACCES, E.EPERM, E.EROFS, E.EEXIST), os.mkdir, path)
    check_eq(m.stats().keys(), stats.keys(), 'stats names on a second read')
