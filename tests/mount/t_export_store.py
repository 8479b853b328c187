# SPDX-License-Identifier: GPL-2.0-or-later
"""File handles that outlive the daemon: the export store (export_store=DIR).

fstests generic/477 encodes handles of files and directories, cycles the
mount and opens them again; generic/777 does the same with connectable
handles after directories were renamed.  With export_store the daemon keeps
what resolves a node id to its backing file in DIR, so a new daemon on the
same SOURCE (unmount and mount, a reboot) opens the same files by the old
handles, re-checked inside SOURCE exactly like a lookup.  A store that fails
its checks is refused and the mount works without it; node ids carry a
per-daemon generation, so an old handle never opens another file.
"""

import contextlib
import glob
import os
import pwd
import stat
import subprocess
import struct

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq

AT_HANDLE_CONNECTABLE = 0x002   # linux/fcntl.h, 6.13
HDR = 256       # store.c: STORE_HDR_SIZE
REC = 192       # sizeof(struct store_rec)


def store_dir():
    return os.path.join(ufs.scratch_dir('store'), 'export')


def mount(src=None, store=None, opts=None):
    ufs.require_daemon('needs the daemon\'s export store')
    o = ufs.join_opts('entry_timeout=0,attr_timeout=0', f'export_store={store}' if store else None)
    return ufs.Mount(opts=ufs.join_opts(o, opts), source=src)


def store_file(store):
    files = glob.glob(f'{store}/uringfs-*.export')
    check_eq(len(files), 1, f'store files in {store}: {files}')
    return files[0]


@contextlib.contextmanager
def made_and_held(mnt, names):
    """Create names (each holding its name) through the mount and keep them
    open while the block runs, so that each is noted in the store once, in
    this order: the store notes a file again when the kernel looks it up
    after forgetting it, as another suite's drop_caches has it do."""
    fds = []
    try:
        for n in names:
            fds.append(os.open(f'{mnt}/{n}', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            os.write(fds[-1], n.encode())
        yield
    finally:
        for fd in fds:
            os.close(fd)


def handle_nodeid(h):
    hi, lo = struct.unpack_from('<II', h[1], 0)
    return hi << 32 | lo


def opened_by_handle(m, h, flags=os.O_RDONLY):
    """(fd, None) or (None, errno name)."""
    with ufs.opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
        got = ufs.outcome(sx.open_by_handle_at, root, h, flags)
    return (got.value, None) if got.err is None else (None, ufs.errname(got.err))


def read_by_handle(m, h):
    fd, err = opened_by_handle(m, h)
    if err:
        return err
    try:
        return os.pread(fd, 4096, 0)
    finally:
        os.close(fd)


def dir_by_handle(m, h):
    """(listing, path the kernel reconnected it at) or the errno name."""
    fd, err = opened_by_handle(m, h, os.O_RDONLY | os.O_DIRECTORY)
    if err:
        return err
    try:
        return sorted(os.listdir(fd)), os.readlink(f'/proc/self/fd/{fd}')
    finally:
        os.close(fd)


@case(mount=False, root=True)
def handles_survive_remount():
    """generic/477: handles of files and directories open the same objects after
    drop_caches, and after unmount and a fresh daemon on the same store; a
    lookup by name gives the old node id back; a removed file is ESTALE."""
    store = store_dir()
    with mount(store=store) as m:
        src = m.src
        os.makedirs(f'{m.mnt}/d/e')
        for i in range(10):
            ufs.write_file(f'{m.mnt}/d/f{i}', f'file {i}'.encode())
        ufs.write_file(f'{m.mnt}/d/e/g', b'deep')
        ufs.write_file(f'{m.mnt}/gone', b'x')
        names = [f'd/f{i}' for i in range(10)] + ['d/e/g', 'gone']
        hs = {n: sx.name_to_handle_at(f'{m.mnt}/{n}') for n in names + ['d', 'd/e']}
        ufs.drop_caches(2)
        check_eq(read_by_handle(m, hs['d/f3']), b'file 3', 'd/f3 after drop_caches')
    check_eq(stat.S_IMODE(os.stat(store).st_mode), 0o700, 'the store directory\'s mode')
    check_eq(stat.S_IMODE(os.stat(store_file(store)).st_mode), 0o600, 'the store file\'s mode')
    os.unlink(f'{src}/gone')
    with mount(src=src, store=store) as m:
        for i in range(10):
            check_eq(read_by_handle(m, hs[f'd/f{i}']), f'file {i}'.encode(), f'd/f{i} by handle')
        check_eq(read_by_handle(m, hs['d/e/g']), b'deep', 'd/e/g by handle')
        check_eq(dir_by_handle(m, hs['d/e']), (['g'], f'{m.mnt}/d/e'), 'd/e by handle')
        check_eq(read_by_handle(m, hs['gone']), 'ESTALE', 'a file removed while unmounted')
        check_eq(sx.name_to_handle_at(f'{m.mnt}/d/f0')[:2], hs['d/f0'][:2],
                 'd/f0\'s handle by name after the restart')
        ufs.drop_caches(2)
        check_eq(read_by_handle(m, hs['d/f1']), b'file 1', 'd/f1 after drop_caches again')
    check('node ids of earlier daemons kept' in m.log_text(), 'the log says the store was read'
          + m.log_tail())


@case(mount=False, root=True)
def handles_survive_renames():
    """generic/777-like: directories renamed through the mount and behind its
    back (within SOURCE, while no daemon runs), a file moved to another
    directory through the mount: their old handles open them after a
    restart, directories reconnected under their new paths."""
    store = store_dir()
    with mount(store=store) as m:
        src = m.src
        os.makedirs(f'{m.mnt}/a/b')
        os.makedirs(f'{m.mnt}/c')
        ufs.write_file(f'{m.mnt}/a/b/f', b'in b')
        ufs.write_file(f'{m.mnt}/a/moved', b'moved')
        hs = {n: sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('a', 'a/b', 'a/b/f', 'a/moved')}
        # generic/777's connectable handle: the file's and its parent's node ids
        conn = ufs.outcome(sx.name_to_handle_at, f'{m.mnt}/a/b/f', AT_HANDLE_CONNECTABLE)
        os.rename(f'{m.mnt}/a', f'{m.mnt}/x')
        os.rename(f'{m.mnt}/x/moved', f'{m.mnt}/c/moved')
    os.rename(f'{src}/x/b', f'{src}/c/b')      # behind its back, inside SOURCE
    with mount(src=src, store=store) as m:
        check_eq(dir_by_handle(m, hs['a']), ([], f'{m.mnt}/x'), 'a, renamed x')
        check_eq(dir_by_handle(m, hs['a/b']), (['f'], f'{m.mnt}/c/b'), 'b, moved to c/b')
        check_eq(read_by_handle(m, hs['a/b/f']), b'in b', 'f, in the moved b')
        check_eq(read_by_handle(m, hs['a/moved']), b'moved', 'a file renamed to c/')
        ufs.diag(f'connectable handle: {conn.value[:2] if conn.err is None else ufs.errname(conn.err)}')
        if conn.err is None:    # Linux 6.13 and later
            check_eq(read_by_handle(m, conn.value), b'in b', 'f by its connectable handle')


@case(mount=False, root=True)
def old_handles_never_open_other_files():
    """Without a store a new daemon answers an old handle ESTALE: its node ids
    carry a generation of their own, so the number of an old file never
    names a new one."""
    with mount() as m:
        src = m.src
        for i in range(5):
            ufs.write_file(f'{m.mnt}/old{i}', b'old')
        hs = [sx.name_to_handle_at(f'{m.mnt}/old{i}') for i in range(5)]
    for i in range(5):
        os.unlink(f'{src}/old{i}')
        ufs.write_file(f'{src}/new{i}', b'new')
    with mount(src=src) as m:
        for i in range(5):
            os.stat(f'{m.mnt}/new{i}')
        got = [read_by_handle(m, h) for h in hs]
        check_eq(got, ['ESTALE'] * 5, 'old handles on a new daemon')
        check(all(handle_nodeid(sx.name_to_handle_at(f'{m.mnt}/new{i}')) >> 40 for i in range(5)),
              'node ids carry a generation')


@case(mount=False, root=True)
def a_tampered_store_is_refused():
    """A store whose header was changed is refused (one log line) and replaced:
    the mount works, old handles are ESTALE.  A record changed alone is
    ignored: its handle is ESTALE, the others still open."""
    store = store_dir()
    with mount(store=store) as m, made_and_held(m.mnt, ('a', 'b')):
        src = m.src
        ha, hb = (sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('a', 'b'))
    path = store_file(store)
    data = bytearray(open(path, 'rb').read())
    recs = [off for off in range(HDR, len(data) - REC + 1, REC)
            if struct.unpack_from('<Q', data, off + 8)[0] == handle_nodeid(ha)]
    check_eq(len(recs), 1, 'the record of a in the store')
    data[recs[0] + 48] ^= 0x40      # its inode number
    with open(path, 'r+b') as f:
        f.write(data)
    with mount(src=src, store=store) as m:
        check_eq(read_by_handle(m, ha), 'ESTALE', 'a, its record changed')
        check_eq(read_by_handle(m, hb), b'b', 'b, its record intact')
        check('1 records fail their checks' in m.log_text(), 'logged' + m.log_tail())
    data = bytearray(open(path, 'rb').read())
    data[40] ^= 1                   # the header's SOURCE identity
    with open(path, 'r+b') as f:
        f.write(data)
    with mount(src=src, store=store) as m:
        check_eq(read_by_handle(m, hb), 'ESTALE', 'b, the header changed')
        check_eq(ufs.read_file(f'{m.mnt}/b'), b'b', 'b by name')
        log = m.log_text()
        check('refused: ' in log and 'starting a new one' in log, 'logged' + m.log_tail())
    # Another SOURCE's store under this SOURCE's name: refused as well.
    other = store_dir()
    with mount(store=other) as o:
        ufs.write_file(f'{o.mnt}/b', b'other b')
    os.replace(store_file(other), path)
    with mount(src=src, store=store) as m:
        check('belongs to another SOURCE' in m.log_text(), 'logged' + m.log_tail())
        check_eq(ufs.read_file(f'{m.mnt}/b'), b'b', 'b by name')


@case(mount=False, root=True)
def moved_out_while_unmounted_is_stale():
    """A file and a directory moved out of SOURCE while no daemon runs are
    ESTALE by their old handles (the store is never trusted to point outside
    SOURCE); one moved back in opens again."""
    store = store_dir()
    with mount(store=store) as m:
        src, tmp = m.src, m.tmp
        os.makedirs(f'{m.mnt}/d')
        os.makedirs(f'{m.mnt}/e')
        ufs.write_file(f'{m.mnt}/d/secret', b'secret')
        ufs.write_file(f'{m.mnt}/e/f', b'f')
        hs = {n: sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('d', 'd/secret', 'e/f')}
    os.rename(f'{src}/d', f'{tmp}/d')
    os.rename(f'{src}/e/f', f'{tmp}/f')
    with mount(src=src, store=store) as m:
        for n in ('d', 'd/secret', 'e/f'):
            fd, err = opened_by_handle(m, hs[n], os.O_PATH)
            if fd is not None:
                os.close(fd)
            check(err in ('ESTALE', 'ENOENT'), f'{n} moved out: {err or "opened"}')
    os.rename(f'{tmp}/d', f'{src}/d')
    with mount(src=src, store=store) as m:
        check_eq(read_by_handle(m, hs['d/secret']), b'secret', 'd/secret moved back in')


@case(mount=False, root=True)
def the_store_is_bounded():
    """export_inodes=8 bounds the store file: of 30 files' handles at most
    the newest 8 open after a restart, the oldest are ESTALE."""
    store = store_dir()
    names = [f'f{i:02}' for i in range(30)]
    with mount(store=store, opts='export_inodes=8') as m, made_and_held(m.mnt, names):
        src = m.src
        hs = [sx.name_to_handle_at(f'{m.mnt}/{n}') for n in names]
    check(os.path.getsize(store_file(store)) <= HDR + 8 * REC,
          f'store size {os.path.getsize(store_file(store))}')
    with mount(src=src, store=store, opts='export_inodes=8') as m:
        got = [read_by_handle(m, h) for h in hs]
        check(all(g == 'ESTALE' for g in got[:20]), f'the oldest 20: {got[:20]}')
        check(sum(g == n.encode() for g, n in zip(got[20:], names[20:])) >= 6,
              f'the newest: {got[20:]}')


@case(mount=False, root=True)
def store_permissions():
    """The daemon makes DIR 0700 and the store 0600; a DIR others can write
    or another user owns stops the start with a message; a store that is a
    symbolic link is refused, not followed."""
    base = ufs.scratch_dir('store')
    src = ufs.scratch_dir('src')
    for mode, owner, what in ((0o777, 0, 'writable by others'),
                              (0o700, pwd.getpwnam(ufs.TEST_USER).pw_uid, 'another user\'s')):
        d = f'{base}/{mode:o}-{owner}'
        os.mkdir(d)
        os.chmod(d, mode)
        os.chown(d, owner, 0)
        err = ufs.start_fails(['-o', f'export_store={d}', src], f'a DIR {what}')
        check('export_store' in err, f'a DIR {what}: {err.strip()}')
    store = f'{base}/ok'
    with mount(src=src, store=store) as m:
        ufs.write_file(f'{m.mnt}/f', b'f')
        h = sx.name_to_handle_at(f'{m.mnt}/f')
    path = store_file(store)
    os.rename(path, f'{base}/elsewhere')
    os.symlink(f'{base}/elsewhere', path)
    with mount(src=src, store=store) as m:
        check('symbolic link' in m.log_text(), 'the symlink refused' + m.log_tail())
        check_eq(read_by_handle(m, h), 'ESTALE', 'f, its store a symlink')
    check(not os.path.islink(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600,
          'a new store in place of the symlink')
    check_eq(open(f'{base}/elsewhere', 'rb').read(4), b'UFSX', 'the symlink\'s target untouched')


@case(mount=False, root=True, timeout=120)
def the_store_survives_a_takeover():
    """A daemon that takes the mount over (--take-over, the predecessor's
    settings) keeps the store: handles of files made before and after the
    take-over open after an unmount and a fresh daemon."""
    store = store_dir()
    with mount(store=store) as m:
        src = m.src
        ufs.write_file(f'{m.mnt}/before', b'before')
        hb = sx.name_to_handle_at(f'{m.mnt}/before')
        empty = os.path.join(ufs.run_dir(), 'empty.conf')
        open(empty, 'a').close()
        old = m.proc
        with open(m.log, 'ab') as log:
            new = subprocess.Popen([m.daemon, '-f', '--config', empty, '--take-over', m.mnt],
                                   stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        check_eq(old.wait(timeout=60), 0, 'the old daemon exits 0' + m.log_tail())
        m.proc = new
        ufs.write_file(f'{m.mnt}/after', b'after')
        ha = sx.name_to_handle_at(f'{m.mnt}/after')
        check(handle_nodeid(ha) >> 40 != handle_nodeid(hb) >> 40,
              'the successor hands out node ids of a generation of its own')
        check_eq(read_by_handle(m, hb), b'before', 'before, by handle after the take-over')
        check('locked' not in m.log_text(), 'the successor got the store\'s lock' + m.log_tail())
    with mount(src=src, store=store) as m:
        check_eq(read_by_handle(m, hb), b'before', 'before, by handle after the remount')
        check_eq(read_by_handle(m, ha), b'after', 'after, by handle after the remount')


@case(mount=False, root=True)
def a_second_daemon_leaves_the_store_alone():
    """A second mount of the same SOURCE with the same DIR finds the store
    locked: it says so and runs without it, so it neither renames a new
    store over the one the first mount writes to nor takes its generation;
    handles the first mount gave out after the second started open after
    the first one's restart."""
    store = store_dir()
    with mount(store=store) as a:
        src = a.src
        ufs.write_file(f'{a.mnt}/early', b'early')
        he = sx.name_to_handle_at(f'{a.mnt}/early')
        with mount(src=src, store=store) as b:
            check('locked' in b.log_text() and 'export_store refused' in b.log_text(),
                  'the second daemon says why it keeps no store' + b.log_tail())
            os.stat(f'{b.mnt}/early')
            for i in range(5):
                ufs.write_file(f'{a.mnt}/late{i}', f'late {i}'.encode())
            hl = [sx.name_to_handle_at(f'{a.mnt}/late{i}') for i in range(5)]
            check(handle_nodeid(sx.name_to_handle_at(f'{b.mnt}/late0')) >> 40
                  != handle_nodeid(hl[0]) >> 40, 'the two daemons\' generations differ')
    with mount(src=src, store=store) as m:
        check_eq(read_by_handle(m, he), b'early', 'early, by handle after the restart')
        check_eq([read_by_handle(m, h) for h in hl], [f'late {i}'.encode() for i in range(5)],
                 'files the first mount made while the second ran, by handle after its restart')


@case(mount=False, root=True)
def a_parent_others_can_write_is_warned_about():
    """A DIR whose parent others may write to (no sticky bit) could be moved
    away and replaced by another user, which stops the start: the daemon
    warns; a safe parent gives no warning."""
    base = ufs.scratch_dir('store')
    os.chmod(base, 0o777)
    with mount(store=f'{base}/export') as m:
        check('another user could replace' in m.log_text(), 'the warning' + m.log_tail())
    os.chmod(base, 0o700)
    p, safe = base, True
    while p != '/':
        p = os.path.dirname(p)
        st = os.stat(p)
        safe &= st.st_uid in (0, os.geteuid()) and (not st.st_mode & 0o022
                                                    or bool(st.st_mode & stat.S_ISVTX))
    with mount(src=m.src, store=f'{base}/export') as m:
        check(not safe or 'another user could replace' not in m.log_text(),
              'no warning' + m.log_tail())
