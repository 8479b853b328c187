# SPDX-License-Identifier: GPL-2.0-or-later
"""Credentials: an ordinary user working through an allow_other mount must get
the same ownership and the same EACCES/EPERM as on the reference directory,
and the daemon itself must run as an ordinary user through fusermount3.
"""

import errno
import os
import stat

import ufs
from ufs import case, check, check_eq, opened

E = errno
OPTS = 'allow_other'
OTHER_UID = 12345  # owns files that are neither root's nor the test user's


def user_case(fn=None, **kwargs):
    """A case run as root on the module's allow_other mount, using the test user."""
    return case(fn, user=True, opts=OPTS, **kwargs)


def ids():
    pw = ufs.test_user()
    return pw.pw_uid, pw.pw_gid


def owner(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid


def create_all(d):
    """Create one object of each kind in d; return their names."""
    os.close(os.open(f'{d}/file', os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(f'{d}/dir')
    os.symlink('file', f'{d}/link')
    os.mkfifo(f'{d}/fifo')
    return ['file', 'dir', 'link', 'fifo']


def both_as_user(w, fn, groups=None, what=None):
    """fn(dir) as the test user through the mount and on the reference."""
    got = ufs.outcome(ufs.as_user, fn, w.mnt, groups=groups)
    want = ufs.outcome(ufs.as_user, fn, w.ref, groups=groups)
    ufs.check_same(got, want, what or getattr(fn, '__name__', 'operation'))
    return got


@user_case
def create_owner(m):
    w = m.work('create_owner')
    w.setup(lambda d: (os.mkdir(f'{d}/pub'), os.chmod(f'{d}/pub', 0o777)))
    names = ufs.as_user(create_all, f'{w.mnt}/pub')
    ufs.as_user(create_all, f'{w.ref}/pub')
    for name in names:
        check_eq(owner(f'{w.src}/pub/{name}'), ids(), f'backing owner of {name}')
        check_eq(owner(f'{w.mnt}/pub/{name}'), ids(), f'owner of {name} through the mount')
        ufs.check_same_stat(f'{w.mnt}/pub/{name}', f'{w.src}/pub/{name}', follow=False)
    w.same_tree()


def create_in_group_dir(d):
    os.close(os.open(f'{d}/grp/file', os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(f'{d}/grp/dir')
    return owner(f'{d}/grp/file'), owner(f'{d}/grp/dir')


@user_case
def supplementary_group(m):
    w = m.work('supplementary_group')
    gid = ufs.test_group().gr_gid
    w.setup(lambda d: (os.mkdir(f'{d}/grp'), os.chown(f'{d}/grp', 0, gid),
                       os.chmod(f'{d}/grp', 0o770)))
    got = both_as_user(w, create_in_group_dir, groups=[], what='create without the group')
    check_eq(str(got), 'EACCES', 'create in a 0770 dir of a group the user is not in')
    got = both_as_user(w, create_in_group_dir, groups=[gid], what='create as a group member')
    check_eq(got.value, (ids(), ids()), 'owners of what a group member created')
    check_eq(owner(f'{w.src}/grp/file'), ids(), 'backing owner')


@user_case
def read_root_0600(m):
    w = m.work('read_root_0600')
    w.setup(lambda d: ufs.write_file(f'{d}/secret', b'root only', 0o600))
    got = both_as_user(w, lambda d: ufs.read_file(f'{d}/secret'), what='read a root 0600 file')
    check_eq(str(got), 'EACCES', 'reading a root 0600 file')


def chown_steps(d, gid, name):
    path = f'{d}/pub/{name}'
    ufs.write_file(path)
    return [str(ufs.outcome(os.chown, path, 0, 0)),
            str(ufs.outcome(os.chown, path, -1, 0)),
            str(ufs.outcome(os.chown, path, -1, gid)),
            owner(path)]


@user_case
def chown_as_user(m):
    w = m.work('chown_as_user')
    uid, ugid = ids()
    gid = ufs.test_group().gr_gid
    w.setup(lambda d: (os.mkdir(f'{d}/pub'), os.chmod(f'{d}/pub', 0o777)))
    got = both_as_user(w, lambda d: chown_steps(d, gid, 'member'), groups=[gid],
                       what='chown steps as a member of the group')
    check_eq(got.value, ['EPERM', 'EPERM', 'None', (uid, gid)], 'chown results as a member')
    check_eq(owner(f'{w.src}/pub/member'), (uid, gid), 'backing owner after chgrp')
    got = both_as_user(w, lambda d: chown_steps(d, gid, 'other'), groups=[],
                       what='chown steps as a non-member')
    check_eq(got.value[2:], ['EPERM', (uid, ugid)], 'chgrp to a group the user is not in')


def make_root_objects(d):
    os.mkdir(f'{d}/rdir')
    ufs.write_file(f'{d}/rdir/rfile', b'read me', 0o644)
    ufs.write_file(f'{d}/rdir/rw', b'anyone')
    os.chmod(f'{d}/rdir/rw', 0o666)
    ufs.write_file(f'{d}/rdir/x', b'#!/bin/sh\n', 0o711)
    os.mkdir(f'{d}/pub')
    os.chmod(f'{d}/pub', 0o777)


def perm_steps(d):
    r = f'{d}/rdir'
    steps = [
        ('write 0644', lambda: os.close(os.open(f'{r}/rfile', os.O_WRONLY))),
        ('truncate', lambda: os.truncate(f'{r}/rfile', 0)),
        ('unlink', lambda: os.unlink(f'{r}/rfile')),
        ('mkdir', lambda: os.mkdir(f'{r}/new')),
        ('create', lambda: os.close(os.open(f'{r}/new', os.O_CREAT | os.O_WRONLY))),
        ('rename', lambda: os.rename(f'{r}/rfile', f'{r}/moved')),
        ('rename out', lambda: os.rename(f'{r}/rfile', f'{d}/pub/moved')),
        ('chmod', lambda: os.chmod(f'{r}/rfile', 0o777)),
        ('utime explicit', lambda: os.utime(f'{r}/rfile', (1, 1))),
        ('utime now, no write', lambda: os.utime(f'{r}/rfile')),
        ('utime now, 0666', lambda: os.utime(f'{r}/rw')),
        ('utime explicit, 0666', lambda: os.utime(f'{r}/rw', (1, 1))),
        ('setxattr', lambda: os.setxattr(f'{r}/rfile', 'user.x', b'1')),
        ('setxattr 0666', lambda: os.setxattr(f'{r}/rw', 'user.x', b'1')),
        ('getxattr', lambda: os.getxattr(f'{r}/rw', 'user.x')),
        ('link', lambda: os.link(f'{r}/rfile', f'{d}/pub/hard')),
        ('read 0644', lambda: ufs.read_file(f'{r}/rfile')),
        ('write 0666', lambda: ufs.write_file(f'{r}/rw', b'changed')),
        ('read 0711', lambda: ufs.read_file(f'{r}/x')),
        ('listdir', lambda: sorted(os.listdir(r))),
        ('mknod fifo', lambda: os.mkfifo(f'{r}/fifo')),
        ('symlink', lambda: os.symlink('x', f'{r}/sl')),
        ('chmod pub', lambda: os.chmod(f'{d}/pub', 0o700)),
    ]
    return [f'{label}: {ufs.outcome(fn)}' for label, fn in steps]


@user_case
def permission_matrix(m):
    w = m.work('permission_matrix')
    w.setup(make_root_objects)
    out = both_as_user(w, perm_steps, what='permission matrix').value
    expected = {'write 0644': 'EACCES', 'chmod': 'EPERM', 'utime explicit': 'EPERM',
                'utime now, 0666': 'None', 'write 0666': 'None', 'read 0711': 'EACCES'}
    for line in out:
        label, _, result = line.partition(': ')
        if label in expected:
            check_eq(result, expected[label], f'{label} as {ufs.TEST_USER}')
    w.same_tree()


def sticky_steps(d):
    ufs.write_file(f'{d}/tmp/mine')
    return [str(ufs.outcome(os.unlink, f'{d}/tmp/other')),
            str(ufs.outcome(os.rename, f'{d}/tmp/other', f'{d}/tmp/taken')),
            str(ufs.outcome(os.unlink, f'{d}/tmp/rootfile')),
            str(ufs.outcome(os.unlink, f'{d}/tmp/mine'))]


@user_case
def sticky_dir(m):
    w = m.work('sticky_dir')

    def setup(d):
        os.mkdir(f'{d}/tmp')
        os.chmod(f'{d}/tmp', 0o1777)
        ufs.write_file(f'{d}/tmp/other', b'o')
        os.chown(f'{d}/tmp/other', OTHER_UID, OTHER_UID)
        ufs.write_file(f'{d}/tmp/rootfile', b'r')
        os.chmod(f'{d}/tmp/rootfile', 0o666)
    w.setup(setup)
    got = both_as_user(w, sticky_steps, what='sticky dir')
    check_eq(got.value, ['EPERM', 'EPERM', 'EPERM', 'None'], 'sticky dir results')
    check(os.path.exists(f'{w.src}/tmp/other'), 'backing file of another user was removed')
    w.same_tree()


def setgid_steps(d):
    os.close(os.open(f'{d}/sg/file', os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(f'{d}/sg/sub', 0o755)
    sub = os.stat(f'{d}/sg/sub')
    return owner(f'{d}/sg/file'), sub.st_gid, bool(sub.st_mode & stat.S_ISGID)


@user_case
def setgid_dir(m):
    w = m.work('setgid_dir')
    gid = ufs.test_group().gr_gid
    w.setup(lambda d: (os.mkdir(f'{d}/sg'), os.chown(f'{d}/sg', 0, gid),
                       os.chmod(f'{d}/sg', 0o2777)))
    got = both_as_user(w, setgid_steps, groups=[], what='create in a setgid dir')
    check_eq(got.value, ((ids()[0], gid), gid, True), '(file owner, subdir gid, subdir setgid)')
    check_eq(owner(f'{w.src}/sg/file')[1], gid, 'backing gid of the file')


def user_session(mnt):
    """What an ordinary user does on their own mount."""
    with opened(f'{mnt}/f', os.O_CREAT | os.O_RDWR, 0o600) as fd:
        os.write(fd, b'hello user')
        data = os.pread(fd, 100, 0)
    os.mkdir(f'{mnt}/d')
    names = sorted(os.listdir(mnt))
    size = os.stat(f'{mnt}/f').st_size
    os.unlink(f'{mnt}/f')
    os.rmdir(f'{mnt}/d')
    return data, names, size, os.listdir(mnt)


@case(user=True, mount=False)
def daemon_as_user():
    """The daemon run by the test user mounts through fusermount3 and serves.

    ufs.Mount runs a byte-identical copy of the daemon under test from the
    run directory (ufs.user_daemon): the build tree may sit in a 0700 home,
    where the user could not even exec it.  Everything after the exec is the
    daemon's, and fails this case if it goes wrong."""
    ufs.require_daemon('the daemon must run as the ordinary user')
    uid = ids()[0]
    if not ufs.as_user(os.access, '/dev/fuse', os.R_OK | os.W_OK):
        raise ufs.Skip(f'{ufs.TEST_USER} cannot open /dev/fuse (mode '
                       f'{stat.S_IMODE(os.stat("/dev/fuse").st_mode):o}; '
                       'udev normally makes it 0666: chmod 0666 /dev/fuse)')
    with ufs.Mount(user=ufs.TEST_USER) as m:
        check_eq(os.stat(m.src).st_uid, uid, 'owner of the source dir')
        got = ufs.as_user(user_session, m.mnt)
        check_eq(got, (b'hello user', ['d', 'f'], 10, []), 'user session results')
        check_eq(os.listdir(m.src), [], 'backing dir after the session')
        # Without allow_other even root is refused by the kernel.
        ufs.check_errno(E.EACCES, os.stat, f'{m.mnt}/.', what='root on a user mount')
        check_eq(m.proc.poll(), None, 'daemon still running')


def make_setid(d):
    """A file and a directory asked for with set-id bits; their modes."""
    fd = os.open(f'{d}/suid', os.O_CREAT | os.O_WRONLY, 0o6755)
    os.close(fd)
    os.mkdir(f'{d}/sgid-dir', 0o2775)
    return (oct(stat.S_IMODE(os.stat(f'{d}/suid').st_mode)),
            oct(stat.S_IMODE(os.stat(f'{d}/sgid-dir').st_mode)))


@case(mount=False, root=True, user=True)
def user_daemon_allow_other():
    """A daemon run by an ordinary user with allow_other creates what others
    ask for as its own user: no set-id bits on those, since nobody else can
    make a set-id file owned by that user locally; its own user's keep them."""
    ufs.require_daemon('the daemon must run as the ordinary user')
    if not ufs.as_user(os.access, '/dev/fuse', os.R_OK | os.W_OK):
        raise ufs.Skip(f'{ufs.TEST_USER} cannot open /dev/fuse')
    umask = os.umask(0)
    try:
        with ufs.user_allow_other(), ufs.Mount(user=ufs.TEST_USER, opts='allow_other') as m:
            os.mkdir(f'{m.mnt}/root')
            check_eq(make_setid(f'{m.mnt}/root'), ('0o755', '0o775'),
                     'set-id bits root asked for on a user daemon')
            check_eq(os.stat(f'{m.src}/root/suid').st_uid, ids()[0], 'owner of what root made')
            ufs.as_user(os.mkdir, f'{m.mnt}/own')
            ufs.as_user(os.mkdir, f'{m.ref}/own')
            check_eq(ufs.as_user(make_setid, f'{m.mnt}/own'),
                     ufs.as_user(make_setid, f'{m.ref}/own'),
                     'set-id bits the daemon\'s own user asked for (mount, native)')
            check('allow_other without root' in m.log_text(), 'no warning at start-up')
    finally:
        os.umask(umask)
