# SPDX-License-Identifier: GPL-2.0-or-later
"""inode_limit: with long entry and attribute timeouts the kernel keeps every
inode it looked up, and with it the daemon's record of it; past the bound the
daemon has the kernel let go of the unused ones (FUSE_NOTIFY_PRUNE, or replies
without timeouts where the kernel has no PRUNE), while open files and a cwd
inside the mount keep working."""

import os
import time

import ufs
from ufs import case, check, check_eq

LIMIT = 200
DIRS = 4
PER_DIR = 750           # 3000 files: fifteen times the bound
LONG = 'entry_timeout=86400,attr_timeout=86400'
WAIT = 30               # seconds: loose, for a loaded CI box and the ASan daemon


def make_tree(src):
    for d in range(DIRS):
        os.mkdir(f'{src}/d{d}')
        for i in range(PER_DIR):
            ufs.write_file(f'{src}/d{d}/f{i}', f'{d}/{i}'.encode())


def all_files(mnt):
    return [f'{mnt}/d{d}/f{i}' for d in range(DIRS) for i in range(PER_DIR)]


def wait_stats(m, cond, what):
    """The control file's entries, once cond(entries) holds (or the last ones)."""
    deadline = time.monotonic() + WAIT
    while True:
        st = m.stats()
        if cond(st) or time.monotonic() > deadline:
            check(cond(st), f'{what}: the daemon holds {st["inodes"]} inodes after '
                  f'{WAIT} s; stats {dict((k, v) for k, v in st.items() if "inode" in k)}')
            return st
        time.sleep(0.1)


@case(mount=False)
def prune_keeps_the_store_bounded():
    """3000 files stat'ed with day-long timeouts and inode_limit=200: the
    daemon's inode count comes back under 200 (PRUNE notifications, their
    FORGETs counted); an open file and the cwd keep working, and every name
    is found again.  The PRUNEs are awaited with every file held (O_PATH):
    another suite's drop_caches would otherwise have the kernel forget them
    first, and the count might never stay over the bound long enough."""
    ufs.require_daemon()
    with ufs.Mount(opts=f'inode_limit={LIMIT},{LONG}') as m:
        make_tree(m.src)
        if int(m.stats().get('protocol', '7.0').split('.')[1]) < 45:
            raise ufs.Skip(f'the kernel speaks FUSE {m.stats().get("protocol")}: '
                           'no FUSE_NOTIFY_PRUNE before 7.45')
        check_eq(m.stats().get('inode_prune'), 'notify', 'inode_prune')
        check_eq(m.stats().get('inode_limit'), LIMIT, 'inode_limit')
        fd = os.open(f'{m.mnt}/d0/f1', os.O_RDONLY)
        old = os.getcwd()
        try:
            os.chdir(f'{m.mnt}/d1')
            with ufs.pinned(all_files(m.mnt)):
                wait_stats(m, lambda st: st['inode_prune_notifications'] > 0 and
                           st['inode_prune_nodeids'] > 0, 'PRUNE notifications sent')
            st = wait_stats(m, lambda st: st['inodes'] <= LIMIT, 'back under the bound')
            check(st['inode_prune_forgets'] > 0, 'FORGETs followed the PRUNEs')
            # What the kernel could not let go of still works.
            check_eq(os.pread(fd, 16, 0), b'0/1', 'reading a file kept open')
            check_eq(os.fstat(fd).st_size, 3, 'its size')
            check_eq(len(os.listdir('.')), PER_DIR, 'listing the cwd')
            check_eq(ufs.read_file('f7'), b'1/7', 'a name relative to the cwd')
            # Every name is found again (a new LOOKUP for the pruned ones).
            for d in range(DIRS):
                check_eq(ufs.read_file(f'{m.mnt}/d{d}/f{PER_DIR - 1}'),
                         f'{d}/{PER_DIR - 1}'.encode(), f'd{d}: a pruned name again')
        finally:
            os.chdir(old)
            os.close(fd)


@case(mount=False)
def without_prune_replies_carry_no_timeouts():
    """As a kernel without FUSE_NOTIFY_PRUNE (UFS_DEBUG_NO_PRUNE): past the
    bound the replies carry no entry or attribute timeout, so a name the
    kernel would otherwise cache for a day is asked for at every stat (6.18
    keeps such expired entries until memory pressure: the fallback slows the
    growth, it does not shrink the store; docs/kernels.md).  The files are
    held open (O_PATH), not stat'ed: another suite's drop_caches would take
    the daemon back under the bound, and its replies would carry timeouts
    again."""
    ufs.require_daemon()
    with ufs.Mount(opts=f'inode_limit={LIMIT},{LONG}', env={'UFS_DEBUG_NO_PRUNE': '1'}) as m:
        make_tree(m.src)
        st = m.stats()
        check_eq((st.get('inode_prune'), st.get('inode_prune_short_timeouts')),
                 ('timeouts', 0), 'inode_prune under the bound')
        with ufs.pinned(all_files(m.mnt)):
            st = m.stats()
            check_eq(st['inode_prune_short_timeouts'], 1, 'short timeouts over the bound')
            check_eq(st['inode_prune_notifications'], 0, 'no PRUNE sent')
            name = f'{m.mnt}/d{DIRS - 1}/f{PER_DIR - 1}'
            before = st['op_lookup'] + st['op_getattr']
            for _ in range(50):
                os.lstat(name)
            st = m.stats()
            asked = st['op_lookup'] + st['op_getattr'] - before
            check(asked >= 50, f'50 stats of a name looked up past the bound: {asked} requests')


@case(mount=False)
def unbounded_the_kernel_keeps_them_all():
    """The control: with the same timeouts under the default bound (100000)
    the daemon keeps its record of every inode looked up and prunes nothing;
    so the first case passes because of the bound.  (A build before
    inode_limit passes this too: it keeps them all.)  Each file is held open
    (O_PATH): the suites run side by side and another one's drop_caches
    would otherwise have the kernel forget unused inodes here too."""
    ufs.require_daemon()
    with ufs.Mount(opts=LONG) as m:
        make_tree(m.src)
        with ufs.pinned(all_files(m.mnt)):
            n = m.stats()['inodes']
            check(n >= DIRS * (PER_DIR + 1), f'the daemon holds {n} inodes, not all of them')
            time.sleep(1)
            st = m.stats()
            check_eq((st.get('inode_prune_notifications', 0), st.get('inode_prune_nodeids', 0)),
                     (0, 0), 'nothing pruned under the default bound')
