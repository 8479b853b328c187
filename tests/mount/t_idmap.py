# SPDX-License-Identifier: GPL-2.0-or-later
"""Idmapped mounts of a uringfs mount (FUSE_ALLOW_IDMAP, Linux 6.12).

A container runtime binds a directory into a user namespace with
mount_setattr(MOUNT_ATTR_IDMAP): files owned on disk by 0-65535 show as
100000-165535, and what a caller creates is stored mapped back.  Each case
does the same through an idmapped bind of the uringfs mount (A) and
through the same idmapped bind of the backing directory itself (B), and
compares: ownership, creation as a mapped and an unmapped caller, chown,
permission checks, ACLs.  With the kernel's FUSE_ALLOW_IDMAP the daemon
gets no caller ids but in creating requests: the descriptor budget is
still each caller's own.
"""

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import time

import ufs
import ufs_sys
from ufs import case, check, check_eq

MAP = '0 100000 65536\n'        # on disk k shows as 100000 + k
BASE = 100000


def host(k):
    return BASE + k


@contextlib.contextmanager
def idmapped(src, label):
    """An idmapped bind of src (MAP), unmounted after."""
    dst = ufs.scratch_dir(label)
    try:
        ufs_sys.idmapped_bind(src, dst, MAP)
    except OSError as e:
        if e.errno in (errno.ENOSYS, errno.EPERM) and 'unshare' in str(e):
            raise ufs.Skip(f'no idmapped mounts here: {e}') from None
        raise
    try:
        yield dst
    finally:
        subprocess.run(['umount', dst], check=False)


def require_idmap(m):
    st = m.stats()
    if st.get('idmap') != 'on':
        reason = st.get('idmap_reason')
        if 'kernel' in str(reason):
            raise ufs.Skip(f'idmapped FUSE mounts need Linux 6.12: {reason}')
        check_eq(st.get('idmap'), 'on', f'idmap negotiated ({reason})')


def make_tree(src):
    """On-disk owners inside the map (5, 7:8, 0) and one outside (70000)."""
    os.mkdir(f'{src}/d', 0o775)
    os.chmod(f'{src}/d', 0o775)
    ufs.write_file(f'{src}/d/f', b'five', 0o640)
    ufs.write_file(f'{src}/g', b'seven', 0o600)
    ufs.write_file(f'{src}/far', b'far', 0o644)
    os.mkdir(f'{src}/shared')
    os.chmod(f'{src}/shared', 0o1777)
    os.chown(f'{src}/d', 5, 5)
    os.chown(f'{src}/d/f', 5, 5)
    os.chown(f'{src}/g', 7, 8)
    os.chown(f'{src}/far', 70000, 70000)


@contextlib.contextmanager
def both(opts=None):
    """(m, A, B): a mount of a fresh tree, its idmapped bind, and the
    backing directory's idmapped bind."""
    ufs.require_daemon()
    with ufs.Mount(opts=ufs.join_opts('allow_other,idmap=on', opts)) as m:
        make_tree(m.src)
        require_idmap(m)
        with idmapped(m.mnt, 'idmap-a') as a, idmapped(m.src, 'idmap-b') as b:
            yield m, a, b


def ids(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def as_host(fn, *args, uid, groups=None):
    return ufs.as_user(fn, *args, user=uid, groups=groups if groups is not None else [uid])


@case(mount=False)
def owners_match_the_backing_idmapped():
    """Every entry's owner, group and mode through A are B's: mapped for
    ids in the map, the overflow id (65534) for one outside it."""
    with both() as (m, a, b):
        for name in ('.', 'd', 'd/f', 'g', 'far', 'shared'):
            check_eq(ids(f'{a}/{name}'), ids(f'{b}/{name}'), f'{name} through A and B')
        check_eq(ids(f'{a}/d/f')[:2], (host(5), host(5)), 'd/f shows mapped')
        check_eq(ids(f'{a}/far')[:2], (65534, 65534), 'an id outside the map')
        check_eq(os.stat(f'{m.mnt}/d/f').st_uid, 5, 'the mount itself is not mapped')


def make_all(base, tag):
    out = {}
    for kind, fn in (('file', lambda p: os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))),
                     ('dir', lambda p: os.mkdir(p, 0o755)),
                     ('link', lambda p: os.symlink('target', p)),
                     ('fifo', lambda p: os.mkfifo(p, 0o644))):
        out[kind] = ufs.outcome(fn, f'{base}/{tag}-{kind}').err
    return out


@case(mount=False)
def creating_stores_the_mapped_owner():
    """A mapped caller (host 100005) creates a file, a directory, a symlink
    and a FIFO through A and through B: stored as 5:5 on disk in both;
    root, outside the map, gets B's answer (EOVERFLOW) through A."""
    with both() as (m, a, b):
        for tag, root in (('a', a), ('b', b)):
            got = as_host(make_all, f'{root}/d', tag, uid=host(5))
            check_eq(got, {k: None for k in got}, f'creating through {tag.upper()}')
        for kind in ('file', 'dir', 'link', 'fifo'):
            check_eq(ids(f'{m.src}/d/a-{kind}')[:2], ids(f'{m.src}/d/b-{kind}')[:2],
                     f'{kind}: on-disk owner through A and B')
            check_eq(ids(f'{m.src}/d/a-{kind}')[:2], (5, 5), f'{kind}: stored mapped back')
        check_eq(make_all(f'{a}/shared', 'ra'), make_all(f'{b}/shared', 'rb'),
                 'root (unmapped) creating through A and B')


@case(mount=False)
def chown_maps_back():
    """chown through A to host 100009 stores 9 (as through B); a chown to
    an id outside the map fails as it does through B."""
    with both() as (m, a, b):
        shutil.copy(f'{m.src}/g', f'{m.src}/g2')
        os.chown(f'{m.src}/g2', 7, 8)
        check_eq(ufs.outcome(os.chown, f'{a}/g', host(9), host(10)),
                 ufs.outcome(os.chown, f'{b}/g2', host(9), host(10)), 'chown to mapped ids')
        check_eq(ids(f'{m.src}/g')[:2], (9, 10), 'stored on disk')
        check_eq(ids(f'{m.src}/g2')[:2], (9, 10), 'the same through B')
        check_eq(ufs.outcome(os.chown, f'{a}/g', 7, 7),
                 ufs.outcome(os.chown, f'{b}/g2', 7, 7), 'chown to an unmapped id')
        check_eq(ids(f'{m.src}/g')[:2], (9, 10), 'unchanged after the refused chown')


def try_read(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except OSError as e:
        return errno.errorcode[e.errno]


@case(mount=False)
def permissions_follow_the_mapped_owner():
    """d/f is 0640, 5:5 on disk: its mapped owner and a mapped group member
    read it, another mapped user gets EACCES, through A as through B."""
    with both() as (m, a, b):
        for who, groups in ((host(5), [host(5)]), (host(6), [host(6), host(5)]),
                            (host(8), [host(8)])):
            got = [as_host(try_read, f'{r}/d/f', uid=who, groups=groups) for r in (a, b)]
            check_eq(got[0], got[1], f'host uid {who} groups {groups}: A and B')
        check_eq(as_host(try_read, f'{a}/d/f', uid=host(8)), 'EACCES', 'another user')
        check_eq(as_host(try_read, f'{a}/d/f', uid=host(5)), b'five', 'the mapped owner')


@case(mount=False)
def acl_entries_map_both_ways():
    """setfacl through A naming host 100009 stores uid 9 in the backing
    file's ACL, getfacl through A shows 100009, and user 100009 may read;
    all as through B."""
    if not shutil.which('setfacl'):
        raise ufs.Skip('setfacl is not installed (the acl package)')
    with both() as (m, a, b):
        shutil.copy(f'{m.src}/d/f', f'{m.src}/d/f2')
        os.chown(f'{m.src}/d/f2', 5, 5)
        os.chmod(f'{m.src}/d/f2', 0o640)
        for root, name in ((a, 'f'), (b, 'f2')):
            subprocess.run(['setfacl', '-m', f'u:{host(9)}:r', f'{root}/d/{name}'], check=True)

        def acl(path):
            return subprocess.run(['getfacl', '-n', '-p', '--omit-header', path], check=True,
                                  capture_output=True, text=True).stdout
        check_eq(acl(f'{m.src}/d/f'), acl(f'{m.src}/d/f2'), 'the stored ACLs')
        check(f'user:9:r--' in acl(f'{m.src}/d/f'), f'stored mapped back: {acl(m.src + "/d/f")}')
        check(f'user:{host(9)}:r--' in acl(f'{a}/d/f'), f'shown mapped: {acl(a + "/d/f")}')
        check_eq(as_host(try_read, f'{a}/d/f', uid=host(9)),
                 as_host(try_read, f'{b}/d/f2', uid=host(9)), 'the ACL grants the read')
        check_eq(as_host(try_read, f'{a}/d/f', uid=host(9)), b'five', 'read by the ACL entry')


@case(mount=False)
def idmap_off_refuses_the_idmapping():
    """idmap=off, the default: the kernel keeps SB_I_NOIDMAP and
    mount_setattr refuses (EINVAL); --stats names the setting."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        st = m.stats()
        check_eq((st.get('idmap'), st.get('idmap_reason')), ('off', 'idmap=off'), 'stats')
        dst = ufs.scratch_dir('idmap-off')
        got = ufs.outcome(ufs_sys.idmapped_bind, m.mnt, dst, MAP).err
        if got is None:
            subprocess.run(['umount', dst], check=False)
        check_eq(got, errno.EINVAL, 'an idmapped bind of the mount')


def hold_until_refused(chan, path, most):
    """Child: open path until refused (or most times), report, hold until told."""
    fds, err = [], None
    try:
        while len(fds) < most:
            fds.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        err = errno.errorcode[e.errno]
    chan.send((len(fds), err))
    chan.recv(timeout=60)
    for fd in fds:
        os.close(fd)
    return 0


def open_some(path, n):
    fds = []
    try:
        for _ in range(n):
            fds.append(os.open(path, os.O_RDONLY))
        return None
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        for fd in fds:
            os.close(fd)


@case(mount=False)
def shares_stay_per_caller():
    """With FUSE_ALLOW_IDMAP the kernel sends FUSE_INVALID_UIDGID in every
    OPEN: the daemon reads the caller's own uid, so one user's flood meets
    its own share (open_fds_per_user=8; io_path=copy: each open holds a
    descriptor) while another user still opens."""
    ufs.require_daemon()
    ufs.test_user()
    with ufs.Mount(opts='allow_other,idmap=on,open_fds_per_user=8,io_path=copy') as m:
        require_idmap(m)
        ufs.write_file(f'{m.src}/f', b'x', 0o644)
        with ufs.Child(hold_until_refused, f'{m.mnt}/f', 64, user=ufs.TEST_USER) as c:
            n, err = c.recv(timeout=60)
            check_eq(err, 'EMFILE', f'the flood ({n} opens) meets its share')
            check(n <= 8, f'{n} opens within a share of 8')
            check_eq(ufs.as_user(open_some, f'{m.mnt}/f', 3, user=65534, groups=[]), None,
                     'nobody opens during the flood')
            c.send('close')
            c.join(timeout=60)


def iowq(tool, path, count, mode):
    """tests/mount/helpers/iowq-drop.c as ufs-test: a process that used io_uring
    as root, then dropped, calling through the io-wq worker made as root
    (its own ids root's, the submitter's put over them)."""
    pw = ufs.test_user()
    r = subprocess.run([tool, str(pw.pw_uid), str(pw.pw_gid), path, str(count), mode],
                       capture_output=True, text=True, timeout=60)
    check_eq((r.returncode, r.stderr.strip()), (0, ''), f'iowq-drop {mode} {path}')
    return r.stdout


@case(mount=False, root=True, user=True)
def worker_made_as_root_is_not_root():
    """idmap=on: an io-wq worker made while its process was root shows root's
    ids as its own, though it acts for the ufs-test the process became.  Read
    through it, the control file shows none of the requests in flight (the
    reader is unknown, and an unknown reader is nobody), not root's view:
    not nobody's LOOKUP of a file held in flight (debug build, 3 s), which carries no
    ids either; a plain root read lists it."""
    ufs.require_debug_build()
    tool = ufs.c_helper('helpers/iowq-drop.c', '-luring')
    # /dev/fuse: its workers read requests side by side, so the held LOOKUP
    # holds one of them, not a ring queue the reads behind it would share.
    with ufs.Mount(opts='allow_other,idmap=on,io_uring=off', variant=False,
                   env={'UFS_DEBUG_PAUSE': 'lookup:3000'}) as m:
        require_idmap(m)
        ufs.write_file(f'{m.src}/present', b'x', 0o644)
        looker = subprocess.Popen(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                                   'stat', f'{m.mnt}/present'], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not any(f'pid={looker.pid} ' in ln for ln in root_inflight(m)):
                check(time.monotonic() < deadline, f'nobody\'s LOOKUP in flight: {root_inflight(m)}')
                time.sleep(0.05)
            text = iowq(tool, f'{m.mnt}/{ufs.CONTROL}', 1, 'read')
            listed = [ln for ln in text.splitlines() if ln.startswith('inflight ')]
            check_eq(listed, [], 'requests shown through the worker made as root')
            check('inflight_withheld ' in text, f'an ordinary reader\'s view: {text[-300:]}')
        finally:
            looker.wait(timeout=30)


def root_inflight(m):
    with open(f'{m.mnt}/{ufs.CONTROL}') as f:
        return [ln for ln in f.read().splitlines() if ln.startswith('inflight ')]


@case(mount=False, root=True, user=True)
def worker_made_as_root_meets_a_share():
    """idmap=on: opens through an io-wq worker made as root are not root's
    (never bounded) but its process's, ufs-test's: they meet a share of
    open_fds_per_user=8.  Held, they leave nobody's opens through its own
    worker alone (not one bucket for every such caller, review 48)."""
    ufs.require_daemon()
    tool = ufs.c_helper('helpers/iowq-drop.c', '-luring')
    pw = ufs.test_user()
    with ufs.Mount(opts='allow_other,idmap=on,open_fds_per_user=8,io_path=copy') as m:
        require_idmap(m)
        ufs.write_file(f'{m.src}/f', b'x', 0o644)
        holder = subprocess.Popen([tool, str(pw.pw_uid), str(pw.pw_gid), f'{m.mnt}/f', '64',
                                   'open'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            lines = [holder.stdout.readline(), holder.stdout.readline()]
            made, err = lines[1].split()[1], lines[1].split()[3]
            check(int(made) <= 8 and err == str(errno.EMFILE),
                  f'opens through the worker: {lines}; a share is 8')
            r = subprocess.run([tool, '65534', '65534', f'{m.mnt}/f', '2', 'open'],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=60)
            check('made 2 err 0' in r.stdout, f'nobody\'s opens through its worker: {r.stdout!r}')
        finally:
            holder.communicate('\n', timeout=60)
