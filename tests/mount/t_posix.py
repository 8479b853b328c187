# SPDX-License-Identifier: GPL-2.0-or-later
"""POSIX conformance on a `default_permissions,allow_other` mount.

Every case runs the same steps through the mount and on a plain reference
directory, once as root and once as the ordinary test user (ufs-test, with or
without the supplementary group ufs-grp), and requires the same result for
every step: the reference directory is the oracle.  Where the rule is simple
enough the results are also checked against what POSIX says, so that a
reference that went wrong the same way cannot hide it.

Owners used: root, the test user, and OTHER (a uid/gid nobody runs as).
"""

import errno
import os
import stat
import shutil
import subprocess
import zlib

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, opened

E = errno
OPTS = 'default_permissions,allow_other'
OTHER = 12345
WHO = ('root', 'user')


def posix_case(fn=None, **kwargs):
    """A case on the module's default_permissions,allow_other mount; needs root and the user."""
    return case(fn, root=True, user=True, opts=OPTS, **kwargs)


def uid():
    return ufs.test_user().pw_uid


def ugid():
    return ufs.test_user().pw_gid


def ggid():
    return ufs.test_group().gr_gid


def step(label, fn, *args, **kwargs):
    """(label, outcome text) of one call: the value's repr or the errno name."""
    return label, str(ufs.outcome(fn, *args, **kwargs))


def run_steps(w, steps, who, groups=None, what=None):
    """steps(dir) -> [(label, text)] through the mount and on the reference,
    as root (in this process) or as the test user (forked, with `groups`
    as the supplementary groups).  Every step must agree; returns a dict."""
    what = f'{what or steps.__name__} as {who}'
    if who == 'root':
        got, want = steps(w.mnt), steps(w.ref)
    else:
        got = ufs.as_user(steps, w.mnt, groups=groups, timeout=60)
        want = ufs.as_user(steps, w.ref, groups=groups, timeout=60)
    check_eq([label for label, _ in got], [label for label, _ in want], f'{what}: step labels')
    diffs = [f'{label}: mount {a} / reference {b}'
             for (label, a), (_, b) in zip(got, want) if a != b]
    check(not diffs, f'{what}: {len(diffs)} of {len(got)} steps differ:\n  '
          + '\n  '.join(diffs[:20]))
    return dict(got)


def expect(results, wanted, what):
    """results[label] must equal wanted[label] for every label in wanted."""
    bad = [f'{label}: got {results.get(label)}, POSIX says {want}'
           for label, want in wanted.items() if results.get(label) != want]
    check(not bad, f'{what}:\n  ' + '\n  '.join(bad))


def M(mode):
    """How mode_of()'s result shows in a step's outcome text."""
    return repr(oct(mode))


def mode_of(path, follow=True):
    st = os.stat(path) if follow else os.lstat(path)
    return oct(stat.S_IMODE(st.st_mode))


def owner_of(path, follow=True):
    st = os.stat(path) if follow else os.lstat(path)
    return st.st_uid, st.st_gid


def same_as_backing(w, names, follow=False, fields=ufs.STAT_FIELDS):
    """Each name through the mount must stat like the backing file."""
    for name in names:
        ufs.check_same_stat(f'{w.mnt}/{name}', f'{w.src}/{name}', follow=follow,
                            fields=fields)


def make(path, data=b'', mode=0o644, owner=None):
    ufs.write_file(path, data)
    if owner:
        os.chown(path, *owner)
    os.chmod(path, mode)


def make_dir(path, mode=0o755, owner=None):
    os.mkdir(path)
    if owner:
        os.chown(path, *owner)
    os.chmod(path, mode)


def create(path, mode=0o644):
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))


def has_acls(path):
    """Does the file system of path keep POSIX ACLs?"""
    try:
        os.getxattr(path, 'system.posix_acl_access')
    except OSError as e:
        if e.errno == E.ENODATA:
            return True
        if e.errno in (E.EOPNOTSUPP, E.ENOTSUP):
            return False
        raise
    return True


def setfacl(*args):
    subprocess.run(['setfacl', *args], check=True, capture_output=True)


def getfacl(path):
    """The ACL of path as getfacl prints it, without the file name comment."""
    r = subprocess.run(['getfacl', '-cp', path], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else f'getfacl failed ({r.returncode})'


# --- permission checks ------------------------------------------------------

# Owner, group and other bits alone and in the combinations where the class
# order matters (an owner without a bit that the group or others have).
PERM_MODES = (0o000, 0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001,
              0o700, 0o070, 0o007, 0o077, 0o707, 0o770, 0o500, 0o300, 0o666, 0o777)
RELATIONS = ('owner', 'group', 'other')
SCRIPT = b'#!/bin/sh\nexit 3\n'


def relation_ids(rel):
    return {'owner': (uid(), OTHER), 'group': (OTHER, ggid()), 'other': (OTHER, OTHER)}[rel]


def make_perm_tree(d):
    for rel in RELATIONS:
        for mode in PERM_MODES:
            make(f'{d}/f-{rel}-{mode:03o}', SCRIPT, mode, relation_ids(rel))
            make_dir(f'{d}/d-{rel}-{mode:03o}', 0o755)
            make(f'{d}/d-{rel}-{mode:03o}/f', b'inside', 0o644, relation_ids(rel))
            os.chown(f'{d}/d-{rel}-{mode:03o}', *relation_ids(rel))
            os.chmod(f'{d}/d-{rel}-{mode:03o}', mode)


def run_program(path):
    return subprocess.run([path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


def open_close(path, flags):
    os.close(os.open(path, flags))


def create_remove(path):
    create(path)
    os.unlink(path)


def perm_steps(d):
    out = []
    for rel in RELATIONS:
        for mode in PERM_MODES:
            f, dd = f'{d}/f-{rel}-{mode:03o}', f'{d}/d-{rel}-{mode:03o}'
            out += [step(f'{rel} {mode:03o} file read', open_close, f, os.O_RDONLY),
                    step(f'{rel} {mode:03o} file write', open_close, f, os.O_WRONLY),
                    step(f'{rel} {mode:03o} file exec', run_program, f),
                    step(f'{rel} {mode:03o} dir list', lambda p: sorted(os.listdir(p)), dd),
                    step(f'{rel} {mode:03o} dir search', lambda p: os.stat(p).st_size, f'{dd}/f'),
                    step(f'{rel} {mode:03o} dir create', create_remove, f'{dd}/new')]
    return out


def perm_model(who):
    """What POSIX (plus Linux's capabilities for root) says for perm_steps."""
    want = {}
    for rel in RELATIONS:
        for mode in PERM_MODES:
            if who == 'root':
                bits = 0o7
                exec_ok = bool(mode & 0o111)
            else:
                bits = mode >> {'owner': 6, 'group': 3, 'other': 0}[rel] & 7
                exec_ok = bits & 1
            ok = {'read': bits & 4, 'write': bits & 2}
            for op, allowed in ok.items():
                want[f'{rel} {mode:03o} file {op}'] = 'None' if allowed else 'EACCES'
            if not exec_ok:
                want[f'{rel} {mode:03o} file exec'] = 'EACCES'
            elif bits & 4:
                want[f'{rel} {mode:03o} file exec'] = '3'
            want[f'{rel} {mode:03o} dir list'] = "['f']" if bits & 4 else 'EACCES'
            want[f'{rel} {mode:03o} dir search'] = '6' if bits & 1 else 'EACCES'
            want[f'{rel} {mode:03o} dir create'] = 'None' if bits & 3 == 3 else 'EACCES'
    return want


@posix_case
def permissions(m):
    """read/write/exec on files and list/search/create on dirs, for the owner,
    a group member and another user, over 20 modes; and as root."""
    w = m.work('permissions')
    w.setup(make_perm_tree)
    for who in WHO:
        got = run_steps(w, perm_steps, who, groups=[ggid()])
        expect(got, perm_model(who), f'permissions as {who}')
    same_as_backing(w, [f'f-{rel}-{mode:03o}' for rel in RELATIONS for mode in PERM_MODES])


def make_acl_tree(d):
    user = ufs.TEST_USER
    make(f'{d}/denied', b'secret', 0o644)
    setfacl('-m', f'u:{user}:---', f'{d}/denied')
    make(f'{d}/granted', b'shared', 0o600)
    setfacl('-m', f'u:{user}:rw-', f'{d}/granted')
    make(f'{d}/masked', b'masked', 0o600)
    setfacl('-m', f'u:{user}:rw-,m::r--', f'{d}/masked')
    make(f'{d}/by-group', b'group', 0o600)
    setfacl('-m', f'g:{ufs.TEST_GROUP}:r--', f'{d}/by-group')
    make_dir(f'{d}/dir-denied', 0o777)
    setfacl('-m', f'u:{user}:r-x', f'{d}/dir-denied')
    make_dir(f'{d}/dir-granted', 0o755)
    setfacl('-m', f'u:{user}:rwx', f'{d}/dir-granted')
    setfacl('-d', '-m', f'u:{user}:rw-,g::r--,o::---', f'{d}/dir-granted')


def acl_steps(d):
    return [step('read denied', ufs.read_file, f'{d}/denied'),
            step('write denied', open_close, f'{d}/denied', os.O_WRONLY),
            step('read granted', ufs.read_file, f'{d}/granted'),
            step('write granted', open_close, f'{d}/granted', os.O_WRONLY),
            step('read masked', ufs.read_file, f'{d}/masked'),
            step('write masked', open_close, f'{d}/masked', os.O_WRONLY),
            step('read by-group', ufs.read_file, f'{d}/by-group'),
            step('create in dir-denied', create, f'{d}/dir-denied/new'),
            step('create in dir-granted', create, f'{d}/dir-granted/new', 0o666),
            step('mode of the new file', mode_of, f'{d}/dir-granted/new'),
            step('acl of the new file', getfacl, f'{d}/dir-granted/new')]


@posix_case
def acls_enforced(m):
    """POSIX ACLs of the backing files decide access through the mount as
    they do natively: named-user and group entries, the mask, directories,
    and default ACLs inherited by new files (FUSE_POSIX_ACL, the default)."""
    w = m.work('acls_enforced')
    if not has_acls(w.src):
        raise ufs.Skip('the backing file system keeps no POSIX ACLs')
    w.setup(make_acl_tree)
    got = run_steps(w, acl_steps, 'user', groups=[ggid()])
    expect(got, {'read denied': 'EACCES', 'write denied': 'EACCES', 'read granted': "b'shared'",
                 'write granted': 'None', 'read masked': "b'masked'", 'write masked': 'EACCES',
                 'read by-group': "b'group'", 'create in dir-denied': 'EACCES',
                 'create in dir-granted': 'None', 'mode of the new file': M(0o660)},
           'POSIX ACL rules as the test user')
    check_eq(getfacl(f'{w.mnt}/granted'), getfacl(f'{w.src}/granted'), 'getfacl through the mount')
    # An ACL set through the mount applies at once.
    setfacl('-m', f'u:{ufs.TEST_USER}:---', f'{w.mnt}/granted')
    check_eq(ufs.outcome(ufs.as_user, ufs.read_file, f'{w.mnt}/granted').err, E.EACCES,
             'read after the ACL was set through the mount')
    check_eq(getfacl(f'{w.src}/granted'), getfacl(f'{w.mnt}/granted'), 'the ACL reached the backing file')


@case(mount=False, root=True, user=True)
def acl_less_source():
    """A source on a file system without POSIX ACLs (ramfs) works with the
    default settings, which enforce ACLs; and ACLs of a file system mounted
    below it are enforced all the same."""
    ufs.require_daemon('only the daemon negotiates ACLs')
    base = ufs.scratch_dir('ramfs')
    subprocess.run(['mount', '-t', 'ramfs', 'ufs-ramfs', base], check=True)
    try:
        os.chmod(base, 0o755)
        for d in ('src', 'ref'):
            os.mkdir(f'{base}/{d}')
            make(f'{base}/{d}/pub', b'hello', 0o644)
            make_dir(f'{base}/{d}/mine', 0o755, (uid(), ugid()))
            make(f'{base}/{d}/mine/f', b'x', 0o640, (uid(), ugid()))
            os.mkdir(f'{base}/{d}/sub')
            subprocess.run(['mount', '-t', 'tmpfs', 'ufs-tmpfs', f'{base}/{d}/sub'], check=True)
            os.chmod(f'{base}/{d}/sub', 0o755)
            make(f'{base}/{d}/sub/denied', b'secret', 0o644)
            setfacl('-m', f'u:{ufs.TEST_USER}:---', f'{base}/{d}/sub/denied')
        with ufs.Mount(opts=OPTS, source=f'{base}/src') as m:
            def steps(d):
                return [step('read pub', ufs.read_file, f'{d}/pub'),
                        step('list', lambda p: sorted(os.listdir(p)), d),
                        step('read mine/f', ufs.read_file, f'{d}/mine/f'),
                        step('list mine', lambda p: sorted(os.listdir(p)), f'{d}/mine'),
                        step('read sub/denied', ufs.read_file, f'{d}/sub/denied')]
            for who in WHO:
                want = steps(f'{base}/ref') if who == 'root' else \
                    ufs.as_user(steps, f'{base}/ref')
                got = steps(m.mnt) if who == 'root' else ufs.as_user(steps, m.mnt)
                check_eq(got, want, f'{who} on an ACL-less source (mount, native)')
            check_eq(dict(ufs.as_user(steps, m.mnt))['read sub/denied'], 'EACCES',
                     'the submount\'s ACL denies the user')
    finally:
        for d in ('src', 'ref'):
            subprocess.run(['umount', '-l', f'{base}/{d}/sub'], capture_output=True)
        subprocess.run(['umount', '-l', base], capture_output=True)


CAPLESS_STEPS = r'''
import json, os, stat, sys
d = sys.argv[1]
out = {}
out['list trusted'] = sorted(n for n in os.listxattr(f'{d}/xf') if n.startswith('trusted.'))
fd = os.open(f'{d}/sg-write', os.O_WRONLY)
os.write(fd, b'written')
os.close(fd)
fd = os.open(f'{d}/sg-falloc', os.O_WRONLY)
os.posix_fallocate(fd, 0, 8192)
os.close(fd)
for name in ('sg-write', 'sg-falloc'):
    out[name] = oct(stat.S_IMODE(os.stat(f'{d}/{name}').st_mode))
print(json.dumps(out))
'''


def make_capless_tree(d):
    make(f'{d}/xf', b'x')
    os.setxattr(f'{d}/xf', 'trusted.t', b'1')
    for name in ('sg-write', 'sg-falloc'):
        make(f'{d}/{name}', b'0123456789', 0o2666, (OTHER, ggid()))


def capless_steps(d):
    """The steps as root without CAP_SYS_ADMIN and CAP_FSETID (capsh)."""
    r = subprocess.run(['capsh', '--drop=cap_sys_admin,cap_fsetid', '--', '-c',
                        f'exec python3 -c "$0" {d}', CAPLESS_STEPS],
                       capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 0, f'the steps under capsh: {r.stderr.strip()}')
    return r.stdout


@posix_case
def root_without_capabilities(m):
    """Root without CAP_SYS_ADMIN does not see trusted.* names, and without
    CAP_FSETID loses a setgid bit it is not in the group of on a write or
    fallocate, as locally: the daemon asks the caller's capabilities, not
    its uid."""
    ufs.require_daemon('capabilities are the daemon\'s to ask')
    if not shutil.which('capsh'):
        raise ufs.Skip('capsh is missing (Debian package libcap2-bin)')
    w = m.work('root_without_capabilities')
    w.setup(make_capless_tree)
    got, want = capless_steps(w.mnt), capless_steps(w.ref)
    check_eq(got, want, 'as capability-less root (mount, native)')


def chroot_note():
    """Why a user namespace may be refused here: the kernel refuses one to a
    chrooted process (kernel/user_namespace.c, create_user_ns)."""
    try:
        a, b = os.stat('/'), os.stat('/proc/1/root/.')
    except OSError as e:     # in a chroot, /proc/1/root may not be ours to follow
        return (f' (the kernel refuses one to a chrooted process; whether this one is, '
                f'/proc/1/root does not say: {e.strerror})')
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
        return ' (this process is chrooted, and the kernel refuses a chrooted process one)'
    return ''


def userns_chown(d):
    """As the test user, root in a user namespace of its own (ufs-grp not
    mapped there): chown its setgid file of group ufs-grp to itself.  The
    exit status, the error and the file's mode after."""
    r = subprocess.run(['setpriv', f'--reuid={uid()}', f'--regid={ugid()}', '--clear-groups',
                        'unshare', '--user', '--map-root-user', 'chown', '0', f'{d}/sg'],
                       capture_output=True, text=True, timeout=30)
    if 'unshare failed' in r.stderr:
        raise ufs.Skip(f'the test user may not make a user namespace here: {r.stderr.strip()}'
                       f'{chroot_note()}')
    return r.returncode, r.stderr.strip().replace(d, 'D'), oct(stat.S_IMODE(os.stat(f'{d}/sg').st_mode))


@posix_case
def userns_root_capabilities(m):
    """A user namespace's root holds CAP_FSETID there, not over files of a
    group its namespace does not map: its chown of a setgid file of such a
    group clears the bit, as locally (the daemon asks where the caller's
    capabilities hold, caller.c)."""
    ufs.require_daemon('capabilities are the daemon\'s to ask')
    if not shutil.which('setpriv') or not shutil.which('unshare'):
        raise ufs.Skip('setpriv or unshare is missing (Debian package util-linux)')
    w = m.work('userns_root_capabilities')
    w.setup(lambda d: make(f'{d}/sg', b'x', 0o2664, (uid(), ggid())))
    got, want = userns_chown(w.mnt), userns_chown(w.ref)
    check_eq(want, (0, '', '0o664'), 'natively, the chown as the namespace\'s root')
    check_eq(got, want, 'through the mount, the chown as the namespace\'s root')

def make_group_only_tree(d):
    """Directories the test user may change only through its supplementary
    group ufs-grp: by the directory's group, and by a group ACL entry."""
    make_dir(f'{d}/by-owner-group', 0o770, (0, ggid()))
    make_dir(f'{d}/by-acl', 0o750, (0, 0))
    setfacl('-m', f'g:{ufs.TEST_GROUP}:rwx', f'{d}/by-acl')
    for sub in ('by-owner-group', 'by-acl'):
        make(f'{d}/{sub}/old', b'old', 0o664, (0, ggid()))
        make(f'{d}/{sub}/victim', b'victim', 0o644, (0, 0))
        make(f'{d}/{sub}/swap', b'swap', 0o644, (0, 0))
        make_dir(f'{d}/{sub}/emptydir', 0o755, (0, 0))


def group_only_steps(d):
    out = []
    for sub in ('by-owner-group', 'by-acl'):
        p = f'{d}/{sub}'
        out += [step(f'{sub}: create', create, f'{p}/new'),
                step(f'{sub}: owner of new', owner_of, f'{p}/new'),
                step(f'{sub}: mkdir', os.mkdir, f'{p}/newdir'),
                step(f'{sub}: mkfifo', os.mkfifo, f'{p}/fifo'),
                step(f'{sub}: symlink', os.symlink, 'new', f'{p}/sym'),
                step(f'{sub}: link', os.link, f'{p}/new', f'{p}/hard'),
                step(f'{sub}: link of a group-writable file', os.link, f'{p}/old', f'{p}/old2'),
                step(f'{sub}: write old', ufs.write_file, f'{p}/old', b'new data'),
                step(f'{sub}: rename', os.rename, f'{p}/hard', f'{p}/renamed'),
                step(f'{sub}: rename over', os.rename, f'{p}/renamed', f'{p}/victim'),
                step(f'{sub}: noreplace', sx.renameat2, f'{p}/sym', f'{p}/new',
                     sx.RENAME_NOREPLACE),
                step(f'{sub}: exchange', sx.renameat2, f'{p}/sym', f'{p}/swap',
                     sx.RENAME_EXCHANGE),
                step(f'{sub}: whiteout', sx.renameat2, f'{p}/fifo', f'{p}/fifo2',
                     sx.RENAME_WHITEOUT),
                step(f'{sub}: owner of the whiteout', owner_of, f'{p}/fifo', False),
                step(f'{sub}: unlink', os.unlink, f'{p}/old2'),
                step(f'{sub}: rmdir', os.rmdir, f'{p}/emptydir'),
                step(f'{sub}: chmod own', os.chmod, f'{p}/new', 0o600),
                step(f'{sub}: user xattr on own', os.setxattr, f'{p}/new', 'user.k', b'v')]
    out += [step('rename across', os.rename, f'{d}/by-acl/new', f'{d}/by-owner-group/moved'),
            step('listing by-owner-group', lambda p: sorted(os.listdir(p)),
                 f'{d}/by-owner-group'),
            step('listing by-acl', lambda p: sorted(os.listdir(p)), f'{d}/by-acl')]
    return out


@posix_case
def supplementary_group_access(m):
    """Every name operation by a user whose write access to the directory
    comes only from a supplementary group (the directory's group, or a group
    ACL entry) works as natively; new inodes get the user's identity."""
    w = m.work('supplementary_group_access')
    if not has_acls(w.src):
        raise ufs.Skip('the backing file system keeps no POSIX ACLs')
    w.setup(make_group_only_tree)
    got = run_steps(w, group_only_steps, 'user', groups=[ggid()])
    owner = repr((uid(), ugid()))
    for sub in ('by-owner-group', 'by-acl'):
        expect(got, {f'{sub}: {op}': 'None' for op in (
            'create', 'mkdir', 'mkfifo', 'symlink', 'link', 'link of a group-writable file',
            'write old', 'rename', 'rename over', 'exchange', 'whiteout', 'unlink', 'rmdir',
            'chmod own', 'user xattr on own')} | {f'{sub}: owner of new': owner,
                                                   f'{sub}: noreplace': 'EEXIST'},
               f'{sub} as a member of {ufs.TEST_GROUP} only')
    expect(got, {'rename across': 'None'}, 'rename across')


def make_group_denied(d):
    # The user is in the group, the group has no bits, others have all:
    # the group class applies and access is refused.
    make(f'{d}/f', b'x', 0o707, (OTHER, ggid()))
    make_dir(f'{d}/dir', 0o707, (OTHER, ggid()))


def group_steps(d):
    return [step('read', open_close, f'{d}/f', os.O_RDONLY),
            step('write', open_close, f'{d}/f', os.O_WRONLY),
            step('list', os.listdir, f'{d}/dir')]


@posix_case
def permissions_group_class(m):
    """The first matching class decides: a group member gets the group's
    (empty) bits even though others may do everything; a non-member gets
    the others' bits."""
    w = m.work('permissions_group_class')
    w.setup(make_group_denied)
    got = run_steps(w, group_steps, 'user', groups=[ggid()], what='as a group member')
    expect(got, {'read': 'EACCES', 'write': 'EACCES', 'list': 'EACCES'}, 'group member')
    got = run_steps(w, group_steps, 'user', groups=[], what='as a non-member')
    expect(got, {'read': 'None', 'write': 'None', 'list': '[]'}, 'non-member')


# --- chmod ------------------------------------------------------------------

def make_chmod_tree(d):
    make_dir(f'{d}/pub', 0o777)
    make(f'{d}/pub/mine', b'm', 0o644, (uid(), ugid()))
    make(f'{d}/pub/mine-grp', b'm', 0o644, (uid(), ggid()))
    make(f'{d}/pub/mine-other-grp', b'm', 0o644, (uid(), OTHER))
    make(f'{d}/pub/other', b'o', 0o666, (OTHER, OTHER))
    make(f'{d}/pub/grpfile', b'g', 0o666, (OTHER, ggid()))
    make_dir(f'{d}/pub/mydir', 0o755, (uid(), ugid()))


def chmod_steps(d):
    p = f'{d}/pub'
    out = []
    for name, mode in (('mine', 0o600), ('mine', 0o4755), ('mine', 0o2755), ('mine', 0o1644),
                       ('mine', 0o7777), ('mine-grp', 0o2750), ('mine-other-grp', 0o2755),
                       ('mine-other-grp', 0o6777), ('other', 0o600), ('grpfile', 0o777),
                       ('mydir', 0o1777), ('mydir', 0o2700), ('mydir', 0o755)):
        out.append(step(f'chmod {name} {mode:o}', os.chmod, f'{p}/{name}', mode))
        out.append(step(f'mode of {name}', mode_of, f'{p}/{name}'))
    with opened(f'{p}/other', os.O_RDWR) as fd:
        out.append(step('fchmod other (opened rw)', os.fchmod, fd, 0o644))
    with opened(f'{p}/mine', os.O_RDONLY) as fd:
        out.append(step('fchmod mine (opened ro)', os.fchmod, fd, 0o640))
    out.append(step('mode of mine', mode_of, f'{p}/mine'))
    out.append(step('mode of other', mode_of, f'{p}/other'))
    return out


@posix_case
def chmod_rules(m):
    """Only the owner (or root) may chmod; a non-member's setgid bit is
    silently dropped; sticky and set-id bits on the owner's own files stay."""
    for who in WHO:
        w = m.work(f'chmod_rules_{who}')
        w.setup(make_chmod_tree)
        got = run_steps(w, chmod_steps, who, groups=[ggid()])
        if who == 'user':
            expect(got, {'chmod other 600': 'EPERM', 'chmod grpfile 777': 'EPERM',
                         'fchmod other (opened rw)': 'EPERM', 'chmod mine 4755': 'None',
                         'mode of mine': M(0o640),
                         # not in the file's group: S_ISGID is cleared, not refused
                         'chmod mine-other-grp 2755': 'None',
                         'mode of mine-other-grp': M(0o4777)}, 'chmod as the user')
        else:
            expect(got, {'chmod other 600': 'None', 'mode of other': M(0o644),
                         'mode of mine-other-grp': M(0o6777)}, 'chmod as root')
        same_as_backing(w, [f'pub/{n}' for n in ('mine', 'mine-grp', 'mine-other-grp', 'other',
                                                  'grpfile', 'mydir')])


# --- chown and chgrp --------------------------------------------------------

def make_chown_tree(d):
    make_dir(f'{d}/pub', 0o777)
    for name, mode in (('mine', 0o644), ('mine2', 0o644), ('suid', 0o6755), ('sgid-nox', 0o2745),
                       ('suid-noexec', 0o4644)):
        make(f'{d}/pub/{name}', b'x', mode, (uid(), ugid()))
    make(f'{d}/pub/other', b'o', 0o666, (OTHER, OTHER))
    make(f'{d}/pub/other-in-grp', b'o', 0o666, (OTHER, ggid()))
    make_dir(f'{d}/pub/mydir', 0o2755, (uid(), ugid()))
    os.symlink('mine', f'{d}/pub/link')
    os.chown(f'{d}/pub/link', uid(), ugid(), follow_symlinks=False)


def chown_steps(d):
    p = f'{d}/pub'
    u, g, grp = os.getuid(), os.getgid(), ufs.test_group().gr_gid
    out = [step('chown mine to OTHER', os.chown, f'{p}/mine', OTHER, -1),
           step('chown mine to self', os.chown, f'{p}/mine', u, -1),
           step('chown mine to self, -1 group', os.chown, f'{p}/mine', -1, -1),
           step('chgrp mine to ufs-grp', os.chown, f'{p}/mine', -1, grp),
           step('owner of mine', owner_of, f'{p}/mine'),
           step('chgrp mine to OTHER', os.chown, f'{p}/mine', -1, OTHER),
           step('chgrp mine back to primary', os.chown, f'{p}/mine', -1, g),
           step('chown mine2 to self and ufs-grp', os.chown, f'{p}/mine2', u, grp),
           step('owner of mine2', owner_of, f'{p}/mine2'),
           step('chgrp other to ufs-grp', os.chown, f'{p}/other', -1, grp),
           step('chgrp other-in-grp to ufs-grp', os.chown, f'{p}/other-in-grp', -1, grp),
           step('chown other to self', os.chown, f'{p}/other', u, -1),
           step('chown other -1 -1', os.chown, f'{p}/other', -1, -1),
           step('owner of other', owner_of, f'{p}/other'),
           step('lchown link', os.chown, f'{p}/link', -1, grp, follow_symlinks=False),
           step('owner of link', owner_of, f'{p}/link', False),
           step('owner of link target', owner_of, f'{p}/mine')]
    # chgrp of set-id files: setuid always goes, setgid only with group exec.
    for name in ('suid', 'sgid-nox', 'suid-noexec', 'mydir'):
        out.append(step(f'chgrp {name}', os.chown, f'{p}/{name}', -1, grp))
        out.append(step(f'mode of {name}', mode_of, f'{p}/{name}'))
    out.append(step('chown suid-noexec to OTHER (root)', os.chown, f'{p}/suid-noexec', OTHER, -1))
    out.append(step('mode of suid-noexec', mode_of, f'{p}/suid-noexec'))
    return out


@posix_case
def chown_rules(m):
    """Only root changes the owner; the owner may change the group to one of
    its groups; chown/chgrp clears setuid always and setgid when group
    executable, on files but not on directories."""
    for who in WHO:
        w = m.work(f'chown_rules_{who}')
        w.setup(make_chown_tree)
        got = run_steps(w, chown_steps, who, groups=[ggid()])
        if who == 'user':
            expect(got, {'chown mine to OTHER': 'EPERM', 'chown mine to self': 'None',
                         'chgrp mine to ufs-grp': 'None', 'chgrp mine to OTHER': 'EPERM',
                         'owner of mine2': repr((uid(), ggid())),
                         'chgrp other to ufs-grp': 'EPERM', 'chown other to self': 'EPERM',
                         'owner of other': repr((OTHER, OTHER)),
                         'owner of link': repr((uid(), ggid())),
                         'mode of suid': M(0o755), 'mode of sgid-nox': M(0o2745),
                         'mode of suid-noexec': M(0o644), 'mode of mydir': M(0o2755),
                         'chown suid-noexec to OTHER (root)': 'EPERM'}, 'chown as the user')
        else:
            expect(got, {'chown mine to OTHER': 'None', 'chown other to self': 'None',
                         'owner of other': repr((0, ggid())), 'mode of suid': M(0o755),
                         'mode of mydir': M(0o2755)}, 'chown as root')
        same_as_backing(w, [f'pub/{n}' for n in ('mine', 'mine2', 'suid', 'sgid-nox',
                                                  'suid-noexec', 'other', 'link', 'mydir')])


# --- sticky directories -----------------------------------------------------

def make_sticky_tree(d):
    make_dir(f'{d}/tmp', 0o1777)
    make(f'{d}/tmp/other', b'o', 0o666, (OTHER, OTHER))
    make(f'{d}/tmp/other2', b'o', 0o666, (OTHER, OTHER))
    make(f'{d}/tmp/mine', b'm', 0o644, (uid(), ugid()))
    make(f'{d}/tmp/mine2', b'm', 0o644, (uid(), ugid()))
    make_dir(f'{d}/tmp/otherdir', 0o777, (OTHER, OTHER))
    make_dir(f'{d}/tmp/mydir', 0o755, (uid(), ugid()))
    make_dir(f'{d}/utmp', 0o1777, (uid(), ugid()))    # sticky, owned by the user
    make(f'{d}/utmp/other', b'o', 0o644, (OTHER, OTHER))
    make_dir(f'{d}/pub', 0o777)


def sticky_steps(d):
    t = f'{d}/tmp'
    return [step('write other (0666)', ufs.write_file, f'{t}/other', b'changed'),
            step('unlink other', os.unlink, f'{t}/other'),
            step('rename other', os.rename, f'{t}/other', f'{t}/taken'),
            step('rename other out', os.rename, f'{t}/other', f'{d}/pub/taken'),
            step('rename mine onto other', os.rename, f'{t}/mine', f'{t}/other2'),
            step('exchange mine and other', sx.renameat2, f'{t}/mine2', f'{t}/other',
                 sx.RENAME_EXCHANGE),
            step('rmdir otherdir', os.rmdir, f'{t}/otherdir'),
            step('rename otherdir', os.rename, f'{t}/otherdir', f'{t}/od2'),
            step('create in otherdir', create, f'{t}/otherdir/new'),
            step('rename mydir', os.rename, f'{t}/mydir', f'{t}/mydir2'),
            step('rename mine', os.rename, f'{t}/mine', f'{t}/mine-renamed'),
            step('unlink mine2', os.unlink, f'{t}/mine2'),
            step('unlink other in own sticky dir', os.unlink, f'{d}/utmp/other'),
            step('listing', lambda: sorted(os.listdir(t)))]


@posix_case
def sticky_dirs(m):
    """In a sticky directory only the file's owner, the directory's owner and
    root may unlink or rename an entry (or be replaced by a rename)."""
    for who in WHO:
        w = m.work(f'sticky_dirs_{who}')
        w.setup(make_sticky_tree)
        got = run_steps(w, sticky_steps, who, groups=[])
        if who == 'user':
            expect(got, {'write other (0666)': 'None', 'unlink other': 'EPERM',
                         'rename other': 'EPERM', 'rename other out': 'EPERM',
                         'rename mine onto other': 'EPERM', 'exchange mine and other': 'EPERM',
                         'rmdir otherdir': 'EPERM', 'rename otherdir': 'EPERM',
                         'create in otherdir': 'None', 'rename mydir': 'None',
                         'rename mine': 'None', 'unlink mine2': 'None',
                         'unlink other in own sticky dir': 'None'}, 'sticky dir as the user')
        else:
            check_eq(got['unlink other'], 'None', 'root unlinks in a sticky dir')
        w.same_tree()


# --- setgid directories -----------------------------------------------------

def make_setgid_tree(d):
    make_dir(f'{d}/sg', 0o2777, (0, ggid()))


def setgid_steps(d):
    s = f'{d}/sg'
    return [step('create file', create, f'{s}/file', 0o644),
            step('owner of file', owner_of, f'{s}/file'),
            step('create 02755', create, f'{s}/file-sgid', 0o2755),
            step('mode of file-sgid', mode_of, f'{s}/file-sgid'),
            step('mkdir 0755', os.mkdir, f'{s}/sub', 0o755),
            step('owner of sub', owner_of, f'{s}/sub'),
            step('mode of sub', mode_of, f'{s}/sub'),
            step('mkdir nested', os.mkdir, f'{s}/sub/deeper', 0o700),
            step('owner of deeper', owner_of, f'{s}/sub/deeper'),
            step('mode of deeper', mode_of, f'{s}/sub/deeper'),
            step('create in nested', create, f'{s}/sub/deeper/f'),
            step('owner of nested file', owner_of, f'{s}/sub/deeper/f'),
            step('symlink', os.symlink, 'file', f'{s}/link'),
            step('owner of link', owner_of, f'{s}/link', False),
            step('mkfifo', os.mkfifo, f'{s}/fifo', 0o644),
            step('owner of fifo', owner_of, f'{s}/fifo', False),
            step('create outside', create, f'{d}/pub/moved'),
            step('rename into sg', os.rename, f'{d}/pub/moved', f'{s}/moved'),
            step('owner of moved', owner_of, f'{s}/moved'),
            step('mkdir outside', os.mkdir, f'{d}/pub/mdir'),
            step('rename dir into sg', os.rename, f'{d}/pub/mdir', f'{s}/mdir'),
            step('mode of mdir', mode_of, f'{s}/mdir')]


@posix_case
def setgid_dirs(m):
    """A setgid directory gives new entries its group and new subdirectories
    its setgid bit; a non-member cannot create a setgid file; entries moved in
    keep their group."""
    for who, groups in (('root', None), ('user', []), ('user', [ggid()])):
        w = m.work(f'setgid_dirs_{who}')
        w.setup(make_setgid_tree)
        w.setup(lambda d: make_dir(f'{d}/pub', 0o777))
        got = run_steps(w, setgid_steps, who, groups=groups,
                        what=f'setgid dir (groups {groups})')
        me = (uid(), ggid()) if who == 'user' else (0, ggid())
        want = {'owner of file': repr(me), 'owner of sub': repr(me),
                'mode of sub': M(0o2755), 'mode of deeper': M(0o2700),
                'owner of nested file': repr(me), 'owner of link': repr(me),
                'owner of fifo': repr(me),
                'mode of file-sgid': M(0o2755 if who == 'root' or groups else 0o755),
                'owner of moved': repr((me[0], ugid() if who == 'user' else 0)),
                'mode of mdir': M(0o755)}
        expect(got, want, f'setgid dir as {who} (groups {groups})')
        w.same_tree()


# --- set-id bits dropped by writes ------------------------------------------

KILL_MODES = (0o6777, 0o6767, 0o4777, 0o2777, 0o2767, 0o0777)


def kill_writes():
    """(name, fn(path)) for every way to modify a file's data."""
    def write(p):
        with opened(p, os.O_WRONLY) as fd:
            os.write(fd, b'written')

    def pwrite(p):
        with opened(p, os.O_RDWR) as fd:
            os.pwrite(fd, b'later', 100)

    def ftrunc(p):
        with opened(p, os.O_WRONLY) as fd:
            os.ftruncate(fd, 3)

    def otrunc(p):
        os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))

    def falloc(p):
        with opened(p, os.O_WRONLY) as fd:
            sx.fallocate(fd, 0, 0, 8192)

    def falloc_keep(p):
        with opened(p, os.O_WRONLY) as fd:
            sx.fallocate(fd, sx.FALLOC_FL_KEEP_SIZE, 0, 8192)

    def punch(p):
        with opened(p, os.O_WRONLY) as fd:
            sx.fallocate(fd, sx.FALLOC_FL_PUNCH_HOLE | sx.FALLOC_FL_KEEP_SIZE, 0, 4)

    def append(p):
        with opened(p, os.O_WRONLY | os.O_APPEND) as fd:
            os.write(fd, b'appended')

    def copy_into(p):
        with opened(p, os.O_RDWR) as fd:
            os.copy_file_range(fd, fd, 4, 0, 20)

    return [('write', write), ('pwrite', pwrite), ('ftruncate', ftrunc),
            ('truncate', lambda p: os.truncate(p, 1)), ('O_TRUNC', otrunc),
            ('fallocate', falloc), ('fallocate KEEP_SIZE', falloc_keep),
            ('PUNCH_HOLE', punch), ('append', append), ('copy_file_range', copy_into)]


# Whose files the writer changes: another user's in the writer's group, the
# writer's own, and a stranger's in a group the writer is not in.
KILL_OWNERS = ('other', 'mine', 'stranger')


def kill_ids(owner):
    return {'other': (OTHER, ggid()), 'mine': (uid(), ugid()), 'stranger': (OTHER, OTHER)}[owner]


def make_kill_tree(d):
    for owner in KILL_OWNERS:
        for how, _ in kill_writes():
            for mode in KILL_MODES:
                make(f'{d}/{owner}-{how}-{mode:o}', b'0123456789', mode, kill_ids(owner))


def cached_mode_of(path):
    """The mode as the kernel has it cached: statx asking for STATX_MODE
    only does not refetch attributes that a write left valid."""
    return oct(stat.S_IMODE(sx.statx(path, sx.STATX_MODE)['mode']))


def kill_steps(d):
    out = []
    for owner in KILL_OWNERS:
        for how, fn in kill_writes():
            for mode in KILL_MODES:
                path = f'{d}/{owner}-{how}-{mode:o}'
                out.append(step(f'{how} {owner} {mode:o}', fn, path))
                out.append(step(f'cached mode after {how} {owner} {mode:o}', cached_mode_of,
                                path))
                out.append(step(f'mode after {how} {owner} {mode:o}', mode_of, path))
    return out


def kill_model(who):
    want = {}
    for owner in KILL_OWNERS:
        for how, _ in kill_writes():
            for mode in KILL_MODES:
                after = mode
                if who == 'user':
                    # No CAP_FSETID (setattr_should_drop_suidgid): suid always,
                    # sgid if the group may execute or the writer is not in it.
                    after &= ~0o4000
                    if mode & 0o010 or owner == 'stranger':
                        after &= ~0o2000
                want[f'cached mode after {how} {owner} {mode:o}'] = M(after)
                want[f'mode after {how} {owner} {mode:o}'] = M(after)
    return want


@posix_case
def suid_killed_by_write(m):
    """Writing, truncating or allocating as a user without CAP_FSETID clears
    setuid, and setgid when the group may execute or the writer is not in
    the file's group; root's writes keep them.  The kernel's cached mode
    shows it at once."""
    for who in WHO:
        w = m.work(f'suid_killed_{who}')
        w.setup(make_kill_tree)
        got = run_steps(w, kill_steps, who, groups=[ggid()])
        expect(got, kill_model(who), f'modes after writes as {who}')
        same_as_backing(w, sorted(os.listdir(w.src)))


def make_chown_kill_tree(d):
    for mode in KILL_MODES:
        make(f'{d}/f{mode:o}', b'x', mode, (OTHER, OTHER))
        make_dir(f'{d}/d{mode:o}', mode, (OTHER, OTHER))


def chown_kill_steps(d):
    out = []
    for mode in KILL_MODES:
        for kind in 'fd':
            path = f'{d}/{kind}{mode:o}'
            out.append(step(f'chown {kind}{mode:o}', os.chown, path, uid(), -1))
            out.append(step(f'mode of {kind}{mode:o}', mode_of, path))
    return out


@posix_case
def suid_killed_by_chown(m):
    """chown by root clears setuid (and setgid with group exec) on files,
    never on directories."""
    w = m.work('suid_killed_by_chown')
    w.setup(make_chown_kill_tree)
    got = run_steps(w, chown_kill_steps, 'root')
    want = {}
    for mode in KILL_MODES:
        after = mode & ~0o4000
        if mode & 0o010:
            after &= ~0o2000
        want[f'mode of f{mode:o}'] = M(after)
        want[f'mode of d{mode:o}'] = M(mode)
    expect(got, want, 'modes after chown')
    same_as_backing(w, sorted(os.listdir(w.src)))


# --- utimes -----------------------------------------------------------------

def make_utime_tree(d):
    make_dir(f'{d}/pub', 0o777)
    make(f'{d}/pub/mine', b'm', 0o444, (uid(), ugid()))
    make(f'{d}/pub/other-rw', b'o', 0o666, (OTHER, OTHER))
    make(f'{d}/pub/other-ro', b'o', 0o644, (OTHER, OTHER))
    for name in ('mine', 'other-rw', 'other-ro'):
        os.utime(f'{d}/pub/{name}', ns=(10**18, 10**18))


def times_of(path):
    st = os.stat(path)
    return st.st_atime_ns, st.st_mtime_ns


def utime_steps(d):
    p = f'{d}/pub'
    explicit = (1234567890123456789, 1111111111222222222)
    out = []
    for name in ('mine', 'other-rw', 'other-ro'):
        path = f'{p}/{name}'
        out += [step(f'{name}: now', os.utime, path),
                step(f'{name}: explicit', os.utime, path, ns=explicit),
                step(f'{name}: NOW/NOW', sx.utimensat, path, sx.UTIME_NOW, sx.UTIME_NOW),
                step(f'{name}: NOW/OMIT', sx.utimensat, path, sx.UTIME_NOW, sx.UTIME_OMIT),
                step(f'{name}: OMIT/OMIT', sx.utimensat, path, sx.UTIME_OMIT, sx.UTIME_OMIT),
                step(f'{name}: OMIT/explicit', sx.utimensat, path, sx.UTIME_OMIT, explicit[1]),
                step(f'{name}: explicit again', os.utime, path, ns=explicit)]
        got = ufs.outcome(times_of, path)
        # Explicit times are comparable; NOW depends on the moment.
        out.append((f'{name}: times', str(got) if got.err or got.value[1] == explicit[1]
                    else 'not the explicit times'))
    with opened(f'{p}/other-rw', os.O_WRONLY) as fd:
        out += [step('futimens other-rw now', os.utime, fd),
                step('futimens other-rw explicit', os.utime, fd, ns=explicit)]
    return out


@posix_case
def utimes_rules(m):
    """Setting times to now needs ownership or write access; explicit times
    need ownership (or root)."""
    for who in WHO:
        w = m.work(f'utimes_{who}')
        w.setup(make_utime_tree)
        got = run_steps(w, utime_steps, who, groups=[])
        if who == 'user':
            expect(got, {'mine: now': 'None', 'mine: explicit': 'None',
                         'other-rw: now': 'None', 'other-rw: NOW/NOW': 'None',
                         'other-rw: NOW/OMIT': 'EPERM', 'other-rw: explicit': 'EPERM',
                         'other-rw: OMIT/explicit': 'EPERM', 'other-ro: now': 'EACCES',
                         'other-ro: explicit': 'EPERM', 'other-ro: NOW/NOW': 'EACCES',
                         'futimens other-rw now': 'None',
                         'futimens other-rw explicit': 'EPERM'}, 'utimes as the user')
        else:
            expect(got, {'other-ro: explicit': 'None', 'other-ro: now': 'None'},
                   'utimes as root')
        same_as_backing(w, ['pub/mine', 'pub/other-rw', 'pub/other-ro'],
                        fields=ufs.STAT_FIELDS + ('st_atime_ns',))


# --- link counts ------------------------------------------------------------

def nlinks(d, *names):
    return tuple(ufs.outcome(lambda p: os.lstat(p).st_nlink, f'{d}/{n}').value for n in names)


def nlink_steps(d):
    d = f'{d}/pub'
    out = []

    def note(label, fn, *args):
        out.append(step(label, fn, *args))
        out.append((f'{label}: nlinks',
                    repr(nlinks(d, '.', 'f', 'g', 'a', 'a/h', 'b', 'a/s1', 'b/s1', 'a/s1/t'))))
    note('create f', create, f'{d}/f')
    note('link g', os.link, f'{d}/f', f'{d}/g')
    note('mkdir a', os.mkdir, f'{d}/a')
    note('link a/h', os.link, f'{d}/f', f'{d}/a/h')
    note('mkdir b', os.mkdir, f'{d}/b')
    note('mkdir a/s1', os.mkdir, f'{d}/a/s1')
    note('mkdir a/s2', os.mkdir, f'{d}/a/s2')
    note('mkdir a/s1/t', os.mkdir, f'{d}/a/s1/t')
    note('rename a/s1 to b/s1', os.rename, f'{d}/a/s1', f'{d}/b/s1')
    note('rename b/s1 over empty a/s2', os.rename, f'{d}/b/s1', f'{d}/a/s2')
    note('rename a/s2 back to a/s1', os.rename, f'{d}/a/s2', f'{d}/a/s1')
    note('exchange a/s1 and g', sx.renameat2, f'{d}/a/s1', f'{d}/g', sx.RENAME_EXCHANGE)
    note('exchange back', sx.renameat2, f'{d}/a/s1', f'{d}/g', sx.RENAME_EXCHANGE)
    note('unlink g', os.unlink, f'{d}/g')
    note('rename f over a/h', os.rename, f'{d}/f', f'{d}/a/h')
    note('rmdir a/s1/t', os.rmdir, f'{d}/a/s1/t')
    note('rmdir a/s1', os.rmdir, f'{d}/a/s1')
    note('unlink f', os.unlink, f'{d}/f')
    with opened(f'{d}/a/h', os.O_RDONLY) as fd:
        note('unlink a/h (open)', os.unlink, f'{d}/a/h')
        out.append(step('fstat nlink of the open unlinked file', lambda: os.fstat(fd).st_nlink))
    with opened(f'{d}/b', os.O_RDONLY | os.O_DIRECTORY) as fd:
        note('rmdir b (open)', os.rmdir, f'{d}/b')
        out.append(step('fstat nlink of the removed dir', lambda: os.fstat(fd).st_nlink))
    return out


@posix_case
def link_counts(m):
    """st_nlink of files (hard links) and directories (2 + subdirectories,
    changed by mkdir, rmdir and renames between directories); 0 once the
    last name is gone."""
    for who in WHO:
        w = m.work(f'link_counts_{who}')
        w.setup(lambda d: make_dir(f'{d}/pub', 0o777))
        got = run_steps(w, nlink_steps, who)
        expect(got, {'link g: nlinks': repr((2, 2, 2, None, None, None, None, None, None)),
                     'mkdir a/s1/t: nlinks': repr((4, 3, 3, 4, 3, 2, 3, None, 2)),
                     'rename a/s1 to b/s1: nlinks': repr((4, 3, 3, 3, 3, 3, None, 3, None)),
                     'fstat nlink of the open unlinked file': '0',
                     'fstat nlink of the removed dir': '0'}, f'link counts as {who}')
        same_as_backing(w, ['pub', 'pub/a'])
        w.same_tree()


# --- rename corner cases ----------------------------------------------------

def make_rename_tree(d):
    make_dir(f'{d}/pub', 0o777)


def rename_steps(d):
    d = f'{d}/pub'
    create(f'{d}/f')
    ufs.write_file(f'{d}/f', b'file f')
    os.link(f'{d}/f', f'{d}/hard')
    os.makedirs(f'{d}/full/sub/deep')
    os.mkdir(f'{d}/empty')
    os.mkdir(f'{d}/src')
    os.mkdir(f'{d}/dst')
    ufs.write_file(f'{d}/src/moved', b'moving')
    os.mkdir(f'{d}/src/movedir')
    os.symlink('f', f'{d}/sym')

    def ls(*names):
        return [(n, tuple(sorted(os.listdir(f'{d}/{n}')))) for n in names]
    out = [step('onto itself', os.rename, f'{d}/f', f'{d}/f'),
           step('dir onto itself', os.rename, f'{d}/empty', f'{d}/empty'),
           step('hard link onto its twin', os.rename, f'{d}/f', f'{d}/hard'),
           step('both names remain', ls, '.'),
           step('nlink after twin rename', lambda: os.stat(f'{d}/f').st_nlink),
           step('dir over non-empty dir', os.rename, f'{d}/empty', f'{d}/full'),
           step('dir over file', os.rename, f'{d}/empty', f'{d}/f'),
           step('file over dir', os.rename, f'{d}/f', f'{d}/empty'),
           step('file over non-empty dir', os.rename, f'{d}/f', f'{d}/full'),
           step('dir into own subdir', os.rename, f'{d}/full', f'{d}/full/sub/x'),
           step('dir into itself', os.rename, f'{d}/full', f'{d}/full/x'),
           step('dir over own ancestor', os.rename, f'{d}/full/sub', f'{d}/full'),
           step('dir over own subdir', os.rename, f'{d}/full', f'{d}/full/sub'),
           step('trailing slash on a file', os.rename, f'{d}/f', f'{d}/g/'),
           step('source with trailing slash', os.rename, f'{d}/f/', f'{d}/g'),
           step('dot', os.rename, f'{d}/full/.', f'{d}/x'),
           step('dot-dot', os.rename, f'{d}/full/..', f'{d}/x'),
           step('onto dot', os.rename, f'{d}/empty', f'{d}/full/.'),
           step('missing source', os.rename, f'{d}/missing', f'{d}/x'),
           step('into a missing dir', os.rename, f'{d}/f', f'{d}/missing/x'),
           step('through a file', os.rename, f'{d}/f', f'{d}/hard/x'),
           step('NOREPLACE onto a file', sx.renameat2, f'{d}/src/moved', f'{d}/f',
                sx.RENAME_NOREPLACE),
           step('file across dirs', os.rename, f'{d}/src/moved', f'{d}/dst/moved'),
           step('dir across dirs', os.rename, f'{d}/src/movedir', f'{d}/dst/movedir'),
           step('nlinks after dir move',
                lambda: (os.stat(f'{d}/src').st_nlink, os.stat(f'{d}/dst').st_nlink)),
           step('dotdot of the moved dir',
                lambda: os.stat(f'{d}/dst/movedir/..').st_ino == os.stat(f'{d}/dst').st_ino),
           step('dir over empty dir', os.rename, f'{d}/dst/movedir', f'{d}/empty'),
           step('symlink over file', os.rename, f'{d}/sym', f'{d}/dst/moved'),
           step('what the symlink became', os.readlink, f'{d}/dst/moved'),
           step('exchange file and dir', sx.renameat2, f'{d}/hard', f'{d}/empty',
                sx.RENAME_EXCHANGE),
           step('exchange with a missing name', sx.renameat2, f'{d}/f', f'{d}/nothing',
                sx.RENAME_EXCHANGE),
           step('content after all', ufs.read_file, f'{d}/f'),
           step('listings', ls, '.', 'src', 'dst', 'full', 'full/sub')]
    return out


@posix_case
def rename_corners(m):
    """rename(2) onto itself, onto another link of the same inode (a no-op
    that keeps both names), dir over non-empty dir, dir/file mismatches,
    into its own subdirectory, '.', '..', trailing slashes, across dirs."""
    for who in WHO:
        w = m.work(f'rename_corners_{who}')
        w.setup(make_rename_tree)
        got = run_steps(w, rename_steps, who)
        expect(got, {'onto itself': 'None', 'hard link onto its twin': 'None',
                     'nlink after twin rename': '2',
                     'dir over non-empty dir': 'ENOTEMPTY', 'dir over file': 'ENOTDIR',
                     'file over dir': 'EISDIR', 'dir into own subdir': 'EINVAL',
                     'dir into itself': 'EINVAL', 'missing source': 'ENOENT',
                     'NOREPLACE onto a file': 'EEXIST', 'file across dirs': 'None',
                     'dir across dirs': 'None', 'dotdot of the moved dir': 'True',
                     'nlinks after dir move': '(2, 3)', 'dir over empty dir': 'None',
                     'symlink over file': 'None', 'what the symlink became': "'f'"},
               f'rename as {who}')
        check("'hard'" in got['both names remain'] and "'f'" in got['both names remain'],
              f'rename onto a twin link removed a name: {got["both names remain"]}')
        w.same_tree()


# --- name and path length ---------------------------------------------------

def names_steps(d):
    d = f'{d}/pub'
    n255, n256 = 'n' * 255, 'n' * 256
    out = []
    for label, name in (('255', n255), ('256', n256)):
        p = f'{d}/{name}'
        out += [step(f'{label}: create', create, p),
                step(f'{label}: stat', lambda q: os.stat(q).st_size, p),
                step(f'{label}: lstat', lambda q: os.lstat(q).st_nlink, p),
                step(f'{label}: open', open_close, p, os.O_RDONLY),
                step(f'{label}: link', os.link, p, f'{p[:-1]}L'),
                step(f'{label}: link onto', os.link, f'{d}/short', p),
                step(f'{label}: rename to', os.rename, f'{d}/short2', p),
                step(f'{label}: mkdir', os.mkdir, f'{p[:-1]}D'),
                step(f'{label}: symlink', os.symlink, 'short', f'{p[:-1]}S'),
                step(f'{label}: mkfifo', os.mkfifo, f'{p[:-1]}F'),
                step(f'{label}: setxattr', os.setxattr, p, 'user.x', b'1'),
                step(f'{label}: unlink', os.unlink, p)]
        if not os.path.exists(f'{d}/short2'):
            create(f'{d}/short2')
    create(f'{d}/target')
    for n in (4095, 4096):
        target = ('x/' * n)[:n - 1] + 'y'
        out.append(step(f'symlink target of {n} bytes', os.symlink, target, f'{d}/t{n}'))
        out.append(step(f'readlink {n}', lambda q: len(os.readlink(q)), f'{d}/t{n}'))
    out.append(step('listing', lambda: sorted(len(n) for n in os.listdir(d))))
    return out


def long_path_steps(d):
    """Nested 255-byte names: a 4095-byte relative path works, 4096 does not;
    deeper still is fine through directory descriptors."""
    out = []
    comp = 'c' * 255
    with opened(f'{d}/pub', os.O_RDONLY | os.O_DIRECTORY) as top:
        fd = os.dup(top)
        try:
            for depth in range(20):
                os.mkdir(comp, dir_fd=fd)
                new = os.open(comp, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = new
            out.append(step('create at depth 20', create, f'/proc/self/fd/{fd}/leaf'))
            os.close(fd)
        except BaseException:
            os.close(fd)
            raise
        rel16 = '/'.join([comp] * 16)  # 16 * 255 + 15 = 4095 bytes
        out += [step('4095-byte path', lambda: stat.S_ISDIR(os.stat(rel16, dir_fd=top).st_mode)),
                step('4096-byte path', os.stat, rel16 + '/', dir_fd=top),
                step('4097-byte path', os.stat, rel16 + '/x', dir_fd=top),
                step('mkdir 4097', os.mkdir, rel16 + '/x', dir_fd=top)]
        with opened(rel16, os.O_RDONLY | os.O_DIRECTORY, dir_fd=top) as deep:
            out.append(step('leaf via a shorter path', lambda: os.stat(
                '/'.join([comp] * 4) + '/leaf', dir_fd=deep).st_size))
    return out


@posix_case
def name_too_long(m):
    """255-byte names work everywhere, 256 bytes give ENAMETOOLONG; paths
    stop at 4095 bytes but directories nest deeper than that."""
    for who in WHO:
        w = m.work(f'name_too_long_{who}')
        w.setup(lambda d: (make_dir(f'{d}/pub', 0o777),
                           make(f'{d}/pub/short', b'', 0o666), make(f'{d}/pub/short2', b'', 0o666)))
        got = run_steps(w, names_steps, who)
        want = {f'256: {op}': 'ENAMETOOLONG' for op in
                ('create', 'stat', 'lstat', 'open', 'link', 'link onto', 'rename to', 'mkdir',
                 'symlink', 'mkfifo', 'setxattr', 'unlink')}
        want.update({f'255: {op}': 'None' for op in ('create', 'open', 'link', 'rename to', 'mkdir',
                                                      'symlink', 'mkfifo', 'setxattr', 'unlink')})
        want['255: link onto'] = 'EEXIST'
        want.update({'symlink target of 4095 bytes': 'None', 'readlink 4095': '4095',
                     'symlink target of 4096 bytes': 'ENAMETOOLONG'})
        expect(got, want, f'name lengths as {who}')
        w.same_tree()
    w = m.work('long_path')
    w.setup(lambda d: make_dir(f'{d}/pub', 0o777))
    got = run_steps(w, long_path_steps, 'user')
    expect(got, {'create at depth 20': 'None', '4095-byte path': 'True',
                 '4096-byte path': 'ENAMETOOLONG', '4097-byte path': 'ENAMETOOLONG',
                 'mkdir 4097': 'ENAMETOOLONG', 'leaf via a shorter path': '0'}, 'long paths')


# --- O_CREAT|O_EXCL race ----------------------------------------------------

EXCL_NAMES = 150
EXCL_RACERS = 6


def excl_racer(chan, d, me):
    chan.send('ready')
    chan.recv(timeout=30)   # start together
    won = []
    for i in range(EXCL_NAMES):
        try:
            fd = os.open(f'{d}/n{i}', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        try:
            os.write(fd, f'{me}'.encode())
        finally:
            os.close(fd)
        won.append(i)
    return won


def excl_race(d):
    """Every racer tries every name, in the same order; half as the user."""
    racers = [ufs.Child(excl_racer, d, i, user=ufs.TEST_USER if i % 2 else None)
              for i in range(EXCL_RACERS)]
    try:
        for r in racers:
            r.recv()
        for r in racers:
            r.send('go')
        return [r.join(timeout=60) for r in racers]
    finally:
        for r in racers:
            r.kill()


@posix_case
def create_excl_race(m):
    """Many processes race O_CREAT|O_EXCL on the same names: exactly one
    wins each name, and the file holds the winner's mark."""
    w = m.work('create_excl_race')
    os.chmod(w.src, 0o777)
    for attempt in range(3):
        d = f'{w.mnt}/r{attempt}'
        os.mkdir(d, 0o777)
        os.chmod(d, 0o777)
        wins = excl_race(d)
        winners = {}
        for racer, won in enumerate(wins):
            for i in won:
                check(i not in winners, f'n{i} created by racers {winners.get(i)} and {racer}')
                winners[i] = racer
        check_eq(sorted(winners), list(range(EXCL_NAMES)), 'names somebody created')
        for i, racer in winners.items():
            check_eq(ufs.read_file(f'{d}/n{i}'), str(racer).encode(), f'content of n{i}')
            check_eq(os.stat(f'{d}/n{i}').st_uid, uid() if racer % 2 else 0, f'owner of n{i}')
        check_eq(len(os.listdir(f'{w.src}/r{attempt}')), EXCL_NAMES, 'backing entries')
        contested = sum(1 for won in wins if 0 < len(won) < EXCL_NAMES)
        ufs.diag(f'attempt {attempt}: wins per racer {[len(x) for x in wins]}, '
                 f'{contested} racers won some but not all')


# --- truncate of open files -------------------------------------------------

def reader(chan, path):
    """Child: hold path open; answer (size, data) for each offset it is sent."""
    with opened(path, os.O_RDONLY) as fd:
        chan.send('open')
        while True:
            msg = chan.recv(timeout=30)
            if msg is None:
                return 'done'
            off, n = msg
            chan.send((os.fstat(fd).st_size, os.pread(fd, n, off)))


def truncate_open_steps(d):
    path = f'{d}/pub/f'
    data = ufs.pattern(100000, seed=7)
    ufs.write_file(path, data)
    os.chmod(path, 0o666)
    out = []
    with ufs.Child(reader, path) as r, opened(path, os.O_RDONLY) as mine:
        r.recv()

        def look(label, off, n):
            r.send((off, n))
            size, got = r.recv()
            local = os.pread(mine, n, off)
            out.append((label, repr((size, len(got), zlib.crc32(got),
                                     os.fstat(mine).st_size, local == got))))
        look('before', 0, 200000)
        out.append(step('truncate to 10000', os.truncate, path, 10000))
        look('after shrinking', 0, 200000)
        look('read past the end', 50000, 100)
        with opened(path, os.O_WRONLY) as wfd:
            out.append(step('ftruncate to 300000', os.ftruncate, wfd, 300000))
            look('after growing', 0, 400000)
            look('the grown tail', 150000, 100)
            out.append(step('O_TRUNC open', open_close, path, os.O_WRONLY | os.O_TRUNC))
            look('after O_TRUNC', 0, 100)
            out.append(step('write after truncation', os.pwrite, wfd, b'abc', 5))
            look('after write at 5', 0, 100)
        r.send(None)
        r.join()
    return out


@posix_case
def truncate_open_files(m):
    """A file truncated (down and up, by path, by descriptor, by O_TRUNC)
    while other processes hold it open: they see the new size and zeros."""
    for who in WHO:
        w = m.work(f'truncate_open_{who}')
        w.setup(lambda d: make_dir(f'{d}/pub', 0o777))
        got = run_steps(w, truncate_open_steps, who)
        zeros100 = zlib.crc32(bytes(100))
        expect(got, {'after shrinking': repr((10000, 10000, zlib.crc32(
                         ufs.pattern(100000, seed=7)[:10000]), 10000, True)),
                     'read past the end': repr((10000, 0, 0, 10000, True)),
                     'the grown tail': repr((300000, 100, zeros100, 300000, True)),
                     'after O_TRUNC': repr((0, 0, 0, 0, True)),
                     'after write at 5': repr((8, 8, zlib.crc32(bytes(5) + b'abc'), 8, True))},
               f'truncate of open files as {who}')
        same_as_backing(w, ['pub/f'])


# --- unlinked open files ----------------------------------------------------

def holder(chan, path):
    """Child: open path, wait, then read it all after the parent unlinked it."""
    with opened(path, os.O_RDONLY) as fd:
        chan.send('open')
        chan.recv(timeout=30)
        st = os.fstat(fd)
        return st.st_nlink, st.st_size, os.pread(fd, 1 << 20, 0)


def unlinked_steps(d):
    d = f'{d}/pub'
    path = f'{d}/f'
    data = ufs.pattern(70000, seed=3)
    out = []
    with opened(path, os.O_RDWR | os.O_CREAT, 0o644) as fd:
        os.write(fd, data)
        with ufs.Child(holder, path) as other, opened(path, os.O_RDONLY) as ro:
            other.recv()
            out.append(step('unlink', os.unlink, path))
            out.append(step('stat of the name', os.stat, path))
            out.append(step('fstat nlink', lambda: os.fstat(fd).st_nlink))
            out.append(step('read back', lambda: os.pread(ro, 100000, 0) == data))
            out.append(step('write more', os.pwrite, fd, b'tail', 70000))
            out.append(step('other fd sees it', lambda: os.pread(ro, 10, 69998)))
            out.append(step('fchmod', os.fchmod, fd, 0o600))
            out.append(step('fsetxattr', os.setxattr, fd, 'user.k', b'v'))
            out.append(step('fgetxattr', os.getxattr, fd, 'user.k'))
            out.append(step('recreate the name', ufs.write_file, path, b'new file'))
            out.append(step('new file is another inode',
                            lambda: os.stat(path).st_ino != os.fstat(fd).st_ino))
            out.append(step('old data unaffected', lambda: os.pread(ro, 4, 70000)))
            out.append(step('listing', lambda: sorted(os.listdir(d))))
            other.send('read')
            got = other.join()
            out.append(('other process', repr((got[0], got[1], got[2] == data + b'tail'))))
        out.append(step('ftruncate after unlink', os.ftruncate, fd, 10))
        out.append(step('fstat size', lambda: os.fstat(fd).st_size))
        out.append(step('fstat mode', lambda: oct(stat.S_IMODE(os.fstat(fd).st_mode))))
    out.append(step('after the last close', lambda: (sorted(os.listdir(d)), ufs.read_file(path))))
    return out


@posix_case
def unlinked_open_files(m):
    """An unlinked file keeps its data for every process holding it open:
    nlink 0, reads and writes, metadata changes, a new file under the old
    name is another inode, and nothing is left behind after the last close."""
    for who in WHO:
        w = m.work(f'unlinked_{who}')
        w.setup(lambda d: make_dir(f'{d}/pub', 0o777))
        got = run_steps(w, unlinked_steps, who)
        expect(got, {'unlink': 'None', 'stat of the name': 'ENOENT', 'fstat nlink': '0',
                     'read back': 'True', 'other fd sees it': repr(data_at(69998)),
                     'new file is another inode': 'True', 'old data unaffected': "b'tail'",
                     'listing': "['f']", 'other process': repr((0, 70004, True)),
                     'fstat size': '10', 'fstat mode': M(0o600),
                     'after the last close': repr((['f'], b'new file'))},
               f'unlinked open files as {who}')
        check_eq(sorted(os.listdir(f'{w.src}/pub')), ['f'], 'backing dir (hidden files?)')


def data_at(off):
    return (ufs.pattern(70000, seed=3) + b'tail')[off:off + 10]
