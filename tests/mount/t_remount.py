# SPDX-License-Identifier: GPL-2.0-or-later
"""A live mount remounted read-only and back, the way mount(8) does it:
mount.fuse3 runs the daemon again with `-o ...,remount,...` and the whole
new option list (the mount table's words with the one asked for; see
remount.c).  Each case models an fstests case that fails on a file system
whose remount does not work; tests/ops/remount.sh drives mount(8) itself,
with and without an fstab line.  These cases need the real daemon and root.
"""

import errno
import os
import shutil
import stat
import subprocess

import ufs
from ufs import case, check, check_eq, check_errno

E = errno


def remount(m, word):
    """`mount -o remount,WORD` as mount.fuse3 hands it to the helper: the
    mount's present VFS and FUSE words, the new one, and remount."""
    entry = ufs.mount_entry(m.mnt)
    cancels = {'ro': 'rw', 'rw': 'ro'}
    words = [w for w in entry.options + entry.superopts if w != cancels.get(word, word)]
    words = [w for w in dict.fromkeys(words + [word, 'remount']) if w != cancels.get(word)]
    proc = subprocess.run([m.daemon, m.src, m.mnt, '-o', ','.join(words)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    check(proc.returncode == 0,
          f'remount,{word}: exit {proc.returncode}: {proc.stderr.strip()}')
    vfs = ufs.mount_entry(m.mnt).options
    check(word in vfs, f'remount,{word}: mountinfo says {",".join(vfs)}')
    check(m.proc.poll() is None, f'remount,{word}: the serving daemon ended')


@case(mount=False, root=True)
def generic_294_existing_names_eexist_new_names_erofs():
    """fstests generic/294: on a read-only remounted file system, creating
    an entry that exists fails with EEXIST, not EROFS (mknod, mkdir,
    symlink, open O_CREAT|O_EXCL), so the daemon must go on answering
    lookups while read-only; a new name fails with EROFS."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        d = f'{m.mnt}/294.test'
        os.mkdir(d)
        os.mknod(f'{d}/testnode', stat.S_IFIFO | 0o644)
        os.mkdir(f'{d}/testdir')
        os.symlink('testnode', f'{d}/testlink')
        ufs.write_file(f'{d}/testfile', b'x')
        remount(m, 'ro')
        for name, want in (('', E.EEXIST), ('new-', E.EROFS)):
            check_errno(want, os.mknod, f'{d}/{name}testnode', stat.S_IFIFO | 0o644)
            check_errno(want, os.mkdir, f'{d}/{name}testdir')
            check_errno(want, os.symlink, 'testnode', f'{d}/{name}testlink')
            check_errno(want, os.open, f'{d}/{name}testfile',
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        remount(m, 'rw')
        os.mkdir(f'{d}/after-rw')


@case(mount=False, root=True)
def generic_306_ro_reads_work_writes_erofs():
    """fstests generic/306: a read-only remount still opens device nodes
    for writing (they are not the file system's data), reads work, and
    every change to the file system fails with EROFS (write, truncate,
    unlink, rename, chmod); a file bind-mounted over one on the mount stays
    writable.  remount,rw restores writing."""
    ufs.require_daemon()
    with ufs.Mount(opts='dev') as m:
        os.mknod(f'{m.mnt}/devnull', stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.mknod(f'{m.mnt}/devzero', stat.S_IFCHR | 0o666, os.makedev(1, 5))
        os.symlink('devnull', f'{m.mnt}/symlink')
        ufs.write_file(f'{m.mnt}/file', b'contents')
        ufs.write_file(f'{m.mnt}/bindfile')
        ufs.write_file(f'{m.tmp}/target')
        remount(m, 'ro')
        check_eq(ufs.read_file(f'{m.mnt}/file'), b'contents', 'read on the ro mount')
        check_errno(E.EROFS, os.open, f'{m.mnt}/file', os.O_WRONLY)
        check_errno(E.EROFS, os.open, f'{m.mnt}/touched', os.O_WRONLY | os.O_CREAT, 0o644)
        check_errno(E.EROFS, os.truncate, f'{m.mnt}/file', 0)
        check_errno(E.EROFS, os.unlink, f'{m.mnt}/file')
        check_errno(E.EROFS, os.rename, f'{m.mnt}/file', f'{m.mnt}/renamed')
        check_errno(E.EROFS, os.chmod, f'{m.mnt}/file', 0o600)
        for dev in ('devnull', 'symlink'):
            with open(f'{m.mnt}/{dev}', 'wb') as f:
                f.write(b'written to a device node on a ro mount')
        with open(f'{m.mnt}/devzero', 'rb') as f:
            check_eq(f.read(4), b'\0' * 4, 'read from the ro mount\'s devzero')
        subprocess.run(['mount', '--bind', f'{m.tmp}/target', f'{m.mnt}/bindfile'], check=True)
        try:
            ufs.write_file(f'{m.mnt}/bindfile', b'through the bind')
        finally:
            subprocess.run(['umount', f'{m.mnt}/bindfile'], check=True)
        check_eq(ufs.read_file(f'{m.tmp}/target'), b'through the bind', 'bind-mounted file')
        remount(m, 'rw')
        ufs.write_file(f'{m.mnt}/file', b'after rw')
        check_eq(ufs.read_file(f'{m.src}/file'), b'after rw', 'backing file after rw')


@case(mount=False, root=True)
def generic_452_exec_across_ro_remount():
    """fstests generic/452: a program copied onto the mount runs, runs again
    after a read-only remount (exec maps the file read-only), and after
    remount,rw its contents are unchanged."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        prog = f'{m.mnt}/ls_on_mount'
        shutil.copy2(shutil.which('ls'), prog)
        want = ufs.read_file(prog)
        for word in (None, 'ro', 'rw'):
            if word:
                remount(m, word)
            proc = subprocess.run([prog, '-d', m.mnt], capture_output=True, text=True,
                                  timeout=30)
            check_eq(proc.stdout.strip(), m.mnt, f'ls on the mount after {word or "mount"}')
        check(ufs.read_file(prog) == want, 'the program changed across ro and rw')
