# SPDX-License-Identifier: GPL-2.0-or-later
"""Every option the daemon accepts takes effect or is refused with one line
(issue 27 item 4).

The keys come from `uringfs --print-config` and the mount-option words from
the daemon's own parser (daemon/mount.c: its word lists and the words
parse_one() compares), both read at run time: a key or word with no entry in
KEYS or WORDS below fails `table_complete`, so no option can come in without
a probe.  Each entry names a scenario (one mount shared by the entries that
do not disturb each other), the option text, and a probe that checks what it
changed through the mount: behaviour (EROFS, EACCES, ELOOP, atime, xattrs,
what a second user sees, the daemon's descriptors and threads), the kernel's
view (/proc/self/mountinfo, the INIT flags the daemon logged), and, where
behaviour is impractical in a fast test, the control file's state.  A
REFUSED entry must make the daemon exit non-zero with one error line naming
the option.  Probes that compare with the defaults use the `base` mount.
"""

import collections
import errno
import os
import random
import re
import signal
import subprocess
import time
import types

import ufs
from ufs import case, check, check_eq, cpu_list, thread_cpus

MOUNT_C = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(ufs.__file__)),
                                        '..', '..', 'daemon', 'mount.c'))

# struct fuse_init_out flags (include/uapi/linux/fuse.h)
ASYNC_READ, POSIX_LOCKS, EXPORT_SUPPORT, FLOCK_LOCKS = 1 << 0, 1 << 1, 1 << 4, 1 << 10
DO_READDIRPLUS, WRITEBACK_CACHE, PARALLEL_DIROPS = 1 << 13, 1 << 16, 1 << 18
POSIX_ACL, CACHE_SYMLINKS, KILLPRIV_V2, REQUEST_TIMEOUT = 1 << 20, 1 << 23, 1 << 28, 1 << 42
ALLOW_IDMAP = 1 << 40

OLD = 3 * 86400    # an atime this old moves on the next access under relatime

Probe = collections.namedtuple('Probe', 'scenario opt check')
REFUSED = 'refused'     # scenario of an option that must be refused with one line


# ---------------------------------------------------------------------------
# What the daemon accepts, read from the daemon itself

def config_keys():
    """Every key `uringfs --print-config` prints."""
    r = subprocess.run([ufs.config().daemon, '--config', empty_conf(), '--print-config'],
                       capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 0, f'--print-config exit status ({r.stderr.strip()})')
    keys = re.findall(r'^(\w+) = ', r.stdout, re.M)
    check(len(keys) > 20, f'--print-config printed {len(keys)} keys: {r.stdout!r}')
    return keys


def mount_words():
    """Every mount-option word daemon/mount.c's parser accepts or refuses by name
    (its word lists and the words parse_one() compares); 'x-' for its prefix."""
    with open(MOUNT_C) as f:
        text = f.read()
    words = set()
    for body in re.findall(r'static const char \*const \w+\[\] = \{(.*?)\};', text, re.S):
        words.update(re.findall(r'"([^"]+)"', body))
    words.update(re.findall(r'\bstrcmp\(opt, "([^"]+)"\)', text))
    words.update(re.findall(r'\bstrncmp\(opt, "([^"]+)"', text))
    check(len(words) > 30, f'found only {sorted(words)} in {MOUNT_C}')
    return words


def empty_conf():
    path = os.path.join(ufs.run_dir(), 'empty.conf')
    if not os.path.exists(path):
        open(path, 'w').close()
    return path


# ---------------------------------------------------------------------------
# A scenario's mount and what its probes look at

class Ctx:
    def __init__(self, m, base):
        self.m, self.base = m, base
        self.stats_name = ufs.CONTROL

    def stats(self):
        text = ufs.read_file(f'{self.m.mnt}/{self.stats_name}').decode()
        return {k: (int(v) if v.lstrip('-').isdigit() else v) for k, _, v in
                (line.partition(' ') for line in text.splitlines())}

    def init(self):
        """(max_write, flags) of the INIT reply the daemon logged."""
        found = re.findall(r'FUSE \d+\.\d+, max_write=(\d+), flags=0x([0-9a-f]+)',
                           self.m.log_text())
        check(found, 'no INIT line in the daemon log' + self.m.log_tail())
        return int(found[-1][0]), int(found[-1][1], 16)

    def entry(self):
        return ufs.mount_entry(self.m.mnt)

    def p(self, name):
        return f'{self.m.mnt}/{name}'

    def src(self, name):
        return f'{self.m.src}/{name}'

    def daemon_fds(self, under):
        found = []
        for fd in os.listdir(f'/proc/{self.m.pid}/fd'):
            try:
                target = os.readlink(f'/proc/{self.m.pid}/fd/{fd}')
            except FileNotFoundError:
                continue
            if target.startswith(self.src(under)):
                try:    # closed since: a FORGET (another suite's drop_caches)
                    with open(f'/proc/{self.m.pid}/fdinfo/{fd}') as f:
                        flags = int(re.search(r'^flags:\s+(\d+)', f.read(), re.M).group(1), 8)
                except FileNotFoundError:
                    continue
                found.append((target, flags))
        return found

    def fds_for_many(self):
        """The daemon's descriptors under many/ with its 64 names looked up
        and held (O_PATH) while they are counted: another suite's
        drop_caches would have the kernel forget them, and the daemon close
        their descriptors."""
        with ufs.pinned(f'{self.p("many")}/{n}' for n in os.listdir(self.p('many'))):
            return len(self.daemon_fds('many/'))


def setup_source(src):
    """The same tree in every scenario's source, made before the mount."""
    ufs.write_file(f'{src}/f', ufs.pattern(16384))
    ufs.write_file(f'{src}/kc', ufs.pattern(16384, 1))
    ufs.write_file(f'{src}/exe', b'#!/bin/sh\nexit 0\n', mode=0o755)
    os.symlink('f', f'{src}/link')
    os.mkdir(f'{src}/d')
    for i in range(4):
        ufs.write_file(f'{src}/d/e{i}', b'e')
    os.mkdir(f'{src}/many')
    for i in range(64):
        ufs.write_file(f'{src}/many/n{i:02d}', b'n')
    ufs.write_file(f'{src}/old', b'old data')
    os.mkdir(f'{src}/olddir')
    ufs.write_file(f'{src}/olddir/x', b'x')
    ufs.write_file(f'{src}/x', b'x')
    os.setxattr(f'{src}/x', 'user.probe', b'v')
    now = time.time()
    for name in ('old', 'olddir'):
        os.utime(f'{src}/{name}', (now - OLD, now))


def backing_atime_moves(ctx, name, access):
    st = os.stat(ctx.src(name))
    os.utime(ctx.src(name), ns=(st.st_mtime_ns - OLD * 10**9, st.st_mtime_ns))
    before = os.stat(ctx.src(name)).st_atime
    access(ctx.p(name))
    return os.stat(ctx.src(name)).st_atime != before


def read_all(path):
    with open(path, 'rb') as f:
        return f.read()


def wait_serving(m):
    """Until the daemon says it serves: all its queues registered.  An unmount
    while REGISTERs are still in flight ends the daemon with status 1 (slow
    under ASan; see the report of issue 27 item 4)."""
    deadline = time.monotonic() + 30
    while ' serving ' not in m.log_text() and time.monotonic() < deadline:
        check(m.alive(), 'the daemon ended' + m.log_tail())
        time.sleep(0.05)
    check(' serving ' in m.log_text(), 'the daemon does not serve after 30 s' + m.log_tail())


def mounted(opts, label, variant_first=True):
    """A scenario's Mount: the variant's options first, so the scenario's win."""
    cfg = ufs.config()
    both = ufs.join_opts(cfg.opts if variant_first else None, opts)
    m = ufs.Mount(opts=both, variant=False)
    os.makedirs(m.src, exist_ok=True)
    setup_source(m.src)
    return m


_base = None


def base():
    """What the defaults (and the variant's options) give, probed once."""
    global _base
    if _base is not None:
        return _base
    with mounted('', 'base') as m:
        wait_serving(m)
        c = Ctx(m, None)
        b = {'init': c.init(), 'stats': c.stats(), 'entry': c.entry(), 'log': m.log_text()}
        b['exe_runs'] = subprocess.run([c.p('exe')]).returncode == 0
        b['link'] = read_all(c.p('link'))[:4]
        b['old_atime_moves'] = backing_atime_moves(c, 'old', read_all)
        b['xattr_ns'] = {ns: errno_of(os.setxattr, c.p('f'), f'{ns}.probe', b'1')
                         for ns in ('trusted', 'security')}
        b['xattr'] = os.getxattr(c.p('x'), 'user.probe')
        b['many_fds'] = c.fds_for_many()
        list_twice = readdir_second_listing(c)
        b['readdir_second'] = list_twice
        try:
            ufs.test_user()
            b['user_sees'] = errno_of(ufs.as_user, os.listdir, m.mnt) == 0
        except ufs.Skip:
            b['user_sees'] = None
        b['export_nodeids'] = forget_many(c)['export_nodeids']
    _base = b
    return b


def readdir_second_listing(c):
    """READDIR(PLUS) requests the second listing of d/ sent: measured again
    while another suite's drop_caches (which takes a cached listing's
    pages) ran between the two listings."""
    def once():
        os.listdir(c.p('d'))
        s = c.stats()
        os.listdir(c.p('d'))
        t = c.stats()
        return sum(t[k] - s[k] for k in ('op_readdir', 'op_readdirplus'))
    return ufs.undisturbed(once, good=lambda n: n == 0)[0]


# ---------------------------------------------------------------------------
# Probes

def flag(bit, on):
    def probe(c):
        got = c.init()[1] & bit
        had = c.base['init'][1] & bit
        check(bool(had) != on, f'the default already has flag {bit:#x} {"on" if on else "off"}: '
              'the probe cannot tell')
        check(bool(got) == on, f'INIT flag {bit:#x} is {"off" if on else "on"}')
    return probe


def stat_is(name, want):
    def probe(c):
        check_eq(c.stats().get(name), want, f'control file {name}')
        check(c.base['stats'].get(name) != want, f'the default {name} is {want} already')
    return probe


def in_opts(word, present=True, where='options'):
    def probe(c):
        got = getattr(c.entry(), where)
        check((word in got) == present, f'{word} {"missing from" if present else "in"} '
              f'mountinfo {where} {got}')
    return probe


def all_of(*probes):
    def probe(c):
        for p in probes:
            p(c)
    return probe


def errno_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def p_log_debug(c):
    # An ioctl the daemon does not pass on is logged at debug level.
    with ufs.opened(c.p('f')) as fd:
        os.isatty(fd)
    deadline = time.monotonic() + 10
    while ' debug: ' not in c.m.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    check(' debug: ' in c.m.log_text(), 'no debug line in the log' + c.m.log_tail())
    check(' debug: ' not in c.base['log'], 'the default log has debug lines')


def p_stats_file(c):
    check(os.path.exists(c.p('ctl')), 'no control file ctl')
    check(not os.path.exists(c.p(ufs.CONTROL)), f'{ufs.CONTROL} still there')


def p_max_write(c):
    check_eq(c.init()[0], 65536, 'negotiated max_write')


def p_keep_cache(c):
    """Over the copy path, a reopen keeps the page cache: no READ the second time."""
    # Reading the control file is a READ too: count those alone first.
    s = c.stats()['op_read']
    own = c.stats()['op_read'] - s
    reads = []

    def read():
        s = c.stats()['op_read']
        read_all(c.p('kc'))
        reads.append(c.stats()['op_read'] - s - own)
        return reads[-1]
    # Again while another suite's drop_caches (which takes clean pages)
    # ran between a read and the next: the first then reads, the next not.
    _, clean = ufs.undisturbed(lambda: (read(), read())[1], good=lambda n: n == 0)
    check(reads[0] > 0, f'the first read sent no READ (not the copy path?): {reads}')
    check_eq(reads[-1], 0, f'READs of the second read after a reopen (keep_cache; reads '
             f'{reads}{"" if clean else ", drop_caches ran during each try"})')


def p_io_path_copy(c):
    s = c.stats()
    check_eq((s['io_path'], s['passthrough']), ('copy', 'off'), 'io_path, passthrough')
    read_all(c.p('f'))
    check(c.stats()['opens_copy'] > s['opens_copy'], 'an open did not take the copy path')


def p_cache_readdir_off(c):
    got = readdir_second_listing(c)
    check(c.base['readdir_second'] == 0, 'the default does not cache listings: cannot tell')
    check(got > 0, 'the second listing came from the kernel cache')


def p_fd_cache(c):
    got = c.fds_for_many()
    check(c.base['many_fds'] > 24, f'the default keeps {c.base["many_fds"]} descriptors '
          'for 64 names: cannot tell')
    check(got <= 16 + 4, f'fd_cache=16, but the daemon keeps {got} descriptors for 64 names')


def p_inode_handles_never(c):
    got = c.fds_for_many()
    check(got >= 64, f'inode_handles=never: {got} descriptors for 64 looked-up names')


def p_noexec(c):
    check(c.base['exe_runs'], 'the default does not run exe')
    check_eq(errno_of(subprocess.run, [c.p('exe')]), errno.EACCES, 'exec through the mount')


def p_exec(c):
    check_eq(subprocess.run([c.p('exe')]).returncode, 0, 'exec after noexec,exec')
    in_opts('noexec', False)(c)


def p_nosymfollow(c):
    check_eq(errno_of(read_all, c.p('link')), errno.ELOOP, 'following a symlink')
    in_opts('nosymfollow')(c)


def p_symfollow(c):
    check_eq(read_all(c.p('link'))[:4], c.base['link'], 'reading through a symlink')


def p_ro(c):
    check_eq(errno_of(ufs.write_file, c.p('new'), b'n'), errno.EROFS, 'create on ro')
    in_opts('ro')(c)


def p_rw(c):
    ufs.write_file(c.p('new-rw'), b'n')
    in_opts('rw')(c)


def p_noatime(c):
    check(c.base['old_atime_moves'], 'the default does not move an old atime: cannot tell')
    check(not backing_atime_moves(c, 'old', read_all), 'a read moved the atime')


def p_atime(c):
    check(backing_atime_moves(c, 'old', read_all), 'a read did not move an old atime')


def p_nodiratime(c):
    check(not backing_atime_moves(c, 'olddir', os.listdir), 'a listing moved the atime')
    check(backing_atime_moves(c, 'old', read_all), 'a file read did not move its atime')


def p_diratime(c):
    check(backing_atime_moves(c, 'olddir', os.listdir), 'a listing did not move an old atime')


def p_xattr_off(c):
    check_eq(c.base['xattr'], b'v', 'the default xattr')
    check_eq(errno_of(os.getxattr, c.p('x'), 'user.probe'), errno.EOPNOTSUPP, 'getxattr')


def xattr_denied(ns):
    def probe(c):
        check_eq(c.base['xattr_ns'][ns], 0, f'setxattr {ns}.probe by default')
        e = errno_of(os.setxattr, c.p('f'), f'{ns}.probe', b'1')
        check(e in (errno.EPERM, errno.EOPNOTSUPP, errno.EACCES),
              f'setxattr {ns}.probe: {ufs.errname(e) if e else "succeeded"}')
    return probe


def p_backing_direct_io(c):
    fd = os.open(c.p('f'), os.O_RDONLY | os.O_DIRECT)
    try:
        found = [fl for t, fl in c.daemon_fds('f') if t == c.src('f')]
        check(any(fl & os.O_DIRECT for fl in found),
              f'no O_DIRECT backing descriptor for f (flags {[oct(f) for f in found]})')
    finally:
        os.close(fd)


def p_allow_other(c):
    if c.base['user_sees'] is None:
        in_opts('allow_other', where='superopts')(c)
        return
    check(not c.base['user_sees'], 'another user sees the default mount')
    check(ufs.as_user(os.listdir, c.m.mnt) is not None, 'another user cannot list it')


def p_export_store(c):
    got = [n for n in os.listdir(c.store) if n.endswith('.export')]
    check(got, f'no export store file in {c.store}: {os.listdir(c.store)}')


def forget_many(c):
    """Look up many/*, then drop_caches until the kernel has forgotten them
    (FORGET comes after the eviction, asynchronously); the stats then."""
    for n in os.listdir(c.p('many')):
        os.stat(f'{c.p("many")}/{n}')
    deadline = time.monotonic() + 15
    while True:
        ufs.drop_caches(2)
        st = c.stats()
        if st['inodes'] < 16 or time.monotonic() > deadline:
            check(st['inodes'] < 16, f'the kernel kept {st["inodes"]} inodes for 15 s')
            return st
        time.sleep(0.1)


def p_export_inodes(c):
    """export_inodes=0 keeps no node id for NFS handles once the kernel forgets
    an inode (t_export: its handle then gives ESTALE); the default keeps them."""
    check(c.base['export_nodeids'] > 0, 'the default kept no node id: cannot tell')
    check_eq(forget_many(c)['export_nodeids'], 0, 'export_nodeids with export_inodes=0')


def p_default_permissions_off(c):
    in_opts('default_permissions', False, 'superopts')(c)
    check('default_permissions' in c.base['entry'].superopts, 'default lacks it')


def p_fsname(c):
    check_eq(c.entry().source, 'probe-fsname', 'mount source')


def p_subtype_uringfs(c):
    check_eq(c.entry().fstype, ufs.FSTYPE, 'fstype')


def p_mount8_word(c):
    """Words for mount(8), fstab and systemd: the daemon takes them so an fstab
    line works; they change nothing it serves (mount(8) acts on them)."""
    check(c.m.alive(), 'the mount is gone')


def p_relatime(c):
    in_opts('relatime')(c)
    p_atime(c)


def p_workers(c):
    check_eq(c.stats()['workers'], 1, 'workers')
    check_eq(len(thread_cpus(c.m.pid, 'uringfs-ring')), 1, 'ring worker threads')


def p_cpus(c):
    found = thread_cpus(c.m.pid, 'uringfs-ring')
    check(found, 'no ring worker thread')
    check_eq(set(found.values()), {'0'}, 'ring worker CPUs with cpus=0')


def p_queue_depth(c):
    check(re.search(r'transport: .* depth=4\+', c.m.log_text()),
          'the transport line does not say depth=4' + c.m.log_tail())


def p_copy_file_range(c):
    s = c.stats()
    check_eq(s['cfr_mode'], 'sync', 'cfr_mode')
    with open(c.p('f'), 'rb') as f, open(c.p('cfr'), 'wb') as g:
        os.copy_file_range(f.fileno(), g.fileno(), 4096)
    check(c.stats()['cfr_sync'] > s['cfr_sync'], 'a copy did not take the sync path')


def p_pin_queues_off(c):
    allowed = os.sched_getaffinity(0)
    found = thread_cpus(c.m.pid, 'uringfs-ring')
    check_eq(len(found), 2, 'ring worker threads')
    for name, cpus in found.items():
        check_eq(cpu_list(cpus), allowed, f'{name} CPUs with pin_queues=off')


def p_io_uring_off(c):
    check_eq(c.stats()['transport'], 'dev', 'transport with io_uring=off')


def p_handover_off(c):
    stat_is('handover', 'off')(c)


def either(stat, want):
    """Takes effect where the kernel can (stat == want), else refused: REFUSED's
    check runs when the start fails (see run_refused)."""
    def probe(c):
        check_eq(c.stats().get(stat), want, stat)
    return probe


def p_context(c):
    check(any('context=' in o for o in c.entry().superopts), 'no context in the super options')


# ---------------------------------------------------------------------------
# The tables.  Scenarios: s1 flags and state, s2 cache and read-only, s3 other
# users and the backing, s4 words that undo an earlier word or name the
# default, ring* over io_uring, own:* a mount of their own, refused.

KEYS = {
    'log_level': Probe('s1', 'log_level=debug', p_log_debug),
    'stats_file': Probe('s1', 'stats_file=ctl', p_stats_file),
    'handover': Probe('s1', 'handover=off', p_handover_off),
    'workers': Probe('ring', 'workers=1', p_workers),
    'cpus': Probe('ring', 'cpus=0', p_cpus),
    'pin_queues': Probe('ring2', 'workers=2,pin_queues=off', p_pin_queues_off),
    'queue_depth': Probe('ring', 'queue_depth=4', p_queue_depth),
    'io_uring': Probe('s2', 'io_uring=off', p_io_uring_off),
    'zero_copy': Probe('own:zc', 'io_uring=on,zero_copy=on', either('zero_copy', 'on')),
    'bufpool_buffers': Probe('own:bp', 'io_uring=on,bufpool_buffers=256',
                             lambda c: check(re.search(r'transport: .* pool_buffers=256\b',
                                                       c.m.log_text()),
                                             'no pool_buffers=256 in the transport line')),
    'copy_file_range': Probe('ring', 'copy_file_range=sync', p_copy_file_range),
    'io_path': Probe('s1', 'io_path=copy', p_io_path_copy),
    'max_write': Probe('s1', 'max_write=64K', p_max_write),
    'cache': Probe('s2', 'cache=timeout', stat_is('cache', 'timeout')),
    'attr_timeout': Probe('s2', 'attr_timeout=7', stat_is('cache_attr_timeout_ms', 7000)),
    'entry_timeout': Probe('s2', 'entry_timeout=5', stat_is('cache_entry_timeout_ms', 5000)),
    'negative_timeout': Probe('s2', 'negative_timeout=3',
                              stat_is('cache_negative_timeout_ms', 3000)),
    'request_timeout': Probe('s2', 'request_timeout=30', flag(REQUEST_TIMEOUT, True)),
    'writeback_cache': Probe('s2', 'writeback_cache=on', flag(WRITEBACK_CACHE, True)),
    'keep_cache': Probe('s1', 'keep_cache=on', p_keep_cache),
    'allow_other': Probe('s3', 'allow_other=on', p_allow_other),
    'default_permissions': Probe('s2', 'default_permissions=off', p_default_permissions_off),
    'posix_acl': Probe('s1', 'posix_acl=off', flag(POSIX_ACL, False)),
    # t_idmap shows an idmapped bind working with it and refused without
    'idmap': Probe('s1', 'idmap=on', flag(ALLOW_IDMAP, True)),
    'posix_locks': Probe('s1', 'posix_locks=on', flag(POSIX_LOCKS, True)),
    'flock_locks': Probe('s1', 'flock_locks=on', flag(FLOCK_LOCKS, True)),
    'readdirplus': Probe('s1', 'readdirplus=off', flag(DO_READDIRPLUS, False)),
    'cache_readdir': Probe('s1', 'cache_readdir=off', p_cache_readdir_off),
    'killpriv_v2': Probe('s1', 'killpriv_v2=off', flag(KILLPRIV_V2, False)),
    'export_support': Probe('s1', 'export_support=off', flag(EXPORT_SUPPORT, False)),
    'export_inodes': Probe('s4', 'export_inodes=0', p_export_inodes),
    'inode_limit': Probe('s1', 'inode_limit=5000', stat_is('inode_limit', 5000)),
    # stats only here: t_slow shows a slow request named at the threshold
    'slow_request_ms': Probe('s1', 'slow_request_ms=1234', stat_is('slow_request_ms', 1234)),
    'export_store': Probe('s3', 'export_store=STORE', p_export_store),
    'cache_symlinks': Probe('s1', 'cache_symlinks=off', flag(CACHE_SYMLINKS, False)),
    'parallel_dirops': Probe('s1', 'parallel_dirops=off', flag(PARALLEL_DIROPS, False)),
    'async_read': Probe('s1', 'async_read=off', flag(ASYNC_READ, False)),
    'xattr': Probe('s2', 'xattr=off', p_xattr_off),
    'xattr_trusted': Probe('s3', 'xattr_trusted=deny', xattr_denied('trusted')),
    'xattr_security': Probe('s3', 'xattr_security=deny', xattr_denied('security')),
    'backing_direct_io': Probe('s1', 'backing_direct_io=on', p_backing_direct_io),
    'inode_handles': Probe('s2', 'inode_handles=never', p_inode_handles_never),
    'fd_cache': Probe('s1', 'fd_cache=16', p_fd_cache),
    'open_fds_per_user': Probe('s1', 'open_fds_per_user=100', stat_is('fds_share', 100)),
}

WORDS = {
    # passed to the kernel
    'ro': Probe('s2', 'ro', p_ro),
    'rw': Probe('s4', 'ro,rw', p_rw),
    'suid': Probe('s1', 'suid', in_opts('nosuid', False)),
    'nosuid': Probe('s4', 'suid,nosuid', in_opts('nosuid')),
    'dev': Probe('s1', 'dev', in_opts('nodev', False)),
    'nodev': Probe('s4', 'dev,nodev', in_opts('nodev')),
    'exec': Probe('s4', 'noexec,exec', p_exec),
    'noexec': Probe('s1', 'noexec', p_noexec),
    'sync': Probe('s1', 'sync', in_opts('sync', where='superopts')),
    'async': Probe('s4', 'sync,async', in_opts('sync', False, 'superopts')),
    'dirsync': Probe('s1', 'dirsync', in_opts('dirsync', where='superopts')),
    'atime': Probe('s4', 'noatime,atime', p_atime),
    'noatime': Probe('s2', 'noatime', all_of(in_opts('noatime'), p_noatime)),
    'auto_unmount': Probe('own:au', 'auto_unmount', None),     # run_auto_unmount
    'fsname': Probe('s1', 'fsname=probe-fsname', p_fsname),
    'subtype': Probe('s4', 'subtype=uringfs', p_subtype_uringfs),
    'max_read': Probe('s1', 'max_read=65536', in_opts('max_read=65536', where='superopts')),
    'context': Probe('own:ctx', 'context=system_u:object_r:tmp_t:s0', p_context),
    'fscontext': Probe('own:fsctx', 'fscontext=system_u:object_r:tmp_t:s0', p_context),
    'defcontext': Probe('own:defctx', 'defcontext=system_u:object_r:tmp_t:s0', p_context),
    'rootcontext': Probe('own:rootctx', 'rootcontext=system_u:object_r:tmp_t:s0', p_context),
    # kept by the daemon
    'nodiratime': Probe('s3', 'nodiratime', p_nodiratime),
    'diratime': Probe('s4', 'nodiratime,diratime', p_diratime),
    'nosymfollow': Probe('s1', 'nosymfollow', p_nosymfollow),
    'symfollow': Probe('s4', 'nosymfollow,symfollow', p_symfollow),
    'config': Probe('own:config', 'config=CONF', None),    # own_config
    'debug': Probe('s4', 'debug', p_log_debug),
    # the defaults, by name
    'relatime': Probe('s4', 'relatime', p_relatime),
    'nostrictatime': Probe('s4', 'nostrictatime', p_atime),
    'nolazytime': Probe('s4', 'nolazytime', in_opts('lazytime', False)),
    # refused
    'strictatime': Probe(REFUSED, 'strictatime', None),
    'norelatime': Probe(REFUSED, 'norelatime', None),
    'lazytime': Probe(REFUSED, 'lazytime', None),
    'blksize': Probe(REFUSED, 'blksize=4096', None),
    # FUSE's mountinfo options, which mount(8) passes back with a remount:
    # taken quietly there, unknown anywhere else
    'user_id': Probe(REFUSED, 'user_id=0', None),
    'group_id': Probe(REFUSED, 'group_id=0', None),
    'rootmode': Probe(REFUSED, 'rootmode=40000', None),
    # a remount starts no daemon: tests/mount/t_remount.py, tests/ops/remount.sh
    'remount': Probe('t_remount', 'remount', None),
    # (subtype=other is refused too: see refused_words)
    # mount(8), fstab and systemd words
    **{w: Probe('s4', w, p_mount8_word) for w in (
        'defaults', '_netdev', 'nofail', 'noauto', 'auto', 'user', 'users', 'nouser',
        'owner', 'group', 'nobootwait')},
    'x-': Probe('s4', 'x-probe.word=1', p_mount8_word),
    'comment': Probe('s4', 'comment=probe', p_mount8_word),
}

EXTRA_REFUSED = ['subtype=other']


def entries(scenario):
    return [(n, p) for table in (KEYS, WORDS) for n, p in table.items()
            if p.scenario == scenario]


# ---------------------------------------------------------------------------
# Cases

@case(mount=False)
def table_complete():
    """Every key --print-config prints and every word daemon/mount.c takes has
    a probe here, and the tables name nothing the daemon has not."""
    ufs.require_daemon()
    keys, words = set(config_keys()), mount_words()
    missing = sorted(keys - set(KEYS)) + sorted(words - set(WORDS))
    check(not missing, f'options with no probe in {__file__}: {missing}')
    stale = sorted(set(KEYS) - keys) + sorted(set(WORDS) - words)
    check(not stale, f'probes for options the daemon does not have: {stale}')


def run_scenario(scenario, extra='', variant_first=True, setup=None):
    ufs.require_daemon()
    todo = entries(scenario)
    b = base()
    opts = ','.join(p.opt for _, p in todo)
    m = mounted(ufs.join_opts(opts, extra), scenario, variant_first)
    if setup:
        m.opts = setup(m)
    failures = []
    with m:
        wait_serving(m)
        c = Ctx(m, b)
        if 'stats_file=ctl' in m.opts:
            c.stats_name = 'ctl'
        c.store = getattr(m, 'store', None)
        for name, p in todo:
            try:
                p.check(c)
            except (AssertionError, OSError) as e:
                failures.append(f'{name} ({p.opt}): {e}')
    check(not failures, f'{len(failures)} of {len(todo)} options in {scenario} had no '
          'effect:\n  ' + '\n  '.join(failures))


@case(mount=False)
def scenario_s1():
    run_scenario('s1')


@case(mount=False)
def scenario_s2():
    run_scenario('s2')


@case(mount=False)
def scenario_s3():
    def setup(m):
        m.store = ufs.scratch_dir('store')
        return m.opts.replace('STORE', m.store)
    run_scenario('s3', setup=setup)


@case(mount=False)
def scenario_s4():
    run_scenario('s4')


def via_conf():
    conf = os.path.join(ufs.scratch_dir('conf'), 'via.conf')
    with open(conf, 'w') as f:
        f.write('[general]\nstats_file = viaconf\n')
    return conf


@case(mount=False)
def own_config():
    """config=FILE is read when no --config names a file (the harness's mounts
    always do: a daemon of its own here), and refused when one names another."""
    ufs.require_daemon()
    conf = via_conf()
    base_dir = ufs.scratch_dir('cfg')
    src, mnt = f'{base_dir}/src', f'{base_dir}/mnt'
    os.mkdir(src)
    os.mkdir(mnt)
    opts = ufs.join_opts(ufs.config().opts, f'config={conf}')
    with open(f'{base_dir}/log', 'wb') as log:
        proc = subprocess.Popen([ufs.config().daemon, '-f', '-o', opts, src, mnt],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + ufs.MOUNT_TIMEOUT
        while not ufs.mount_entry(mnt) and proc.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        check(ufs.mount_entry(mnt), f'no mount with -o {opts}: ' + read_all(f'{base_dir}/log')
              .decode(errors='replace'))
        while b' serving ' not in read_all(f'{base_dir}/log') and time.monotonic() < deadline + 30:
            time.sleep(0.05)
        check(os.path.exists(f'{mnt}/viaconf'), 'config=FILE: its stats_file is not there')
        subprocess.run(['fusermount3', '-u', mnt], check=True)
        check_eq(proc.wait(ufs.EXIT_TIMEOUT), 0, 'exit status')
    finally:
        if ufs.mount_entry(mnt):
            subprocess.run(['fusermount3', '-u', '-z', mnt])
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    one_line_refusal(f'config={conf}', '--config FILE -o config=OTHER')


def require_ring():
    try:
        with open('/sys/module/fuse/parameters/enable_uring') as f:
            if f.read().strip() != 'Y':
                raise ufs.Skip('enable_uring is N: these keys set up io_uring queues')
    except FileNotFoundError:
        raise ufs.Skip('no fuse enable_uring parameter: a kernel without FUSE over io_uring')


@case(mount=False)
def scenario_ring():
    require_ring()
    run_scenario('ring', 'io_uring=on', variant_first=False)


@case(mount=False)
def scenario_ring2():
    require_ring()
    if len(os.sched_getaffinity(0)) != 2:
        raise ufs.Skip(f'{len(os.sched_getaffinity(0))} usable CPUs: the probe needs 2')
    run_scenario('ring2', 'io_uring=on', variant_first=False)


def one_line_refusal(opt, what):
    """The daemon started with opt exits non-zero with one error line naming it."""
    stderr = ufs.start_fails(['--config', empty_conf(), '-o', opt, ufs.scratch_dir('rsrc')],
                             what)
    lines = [line for line in stderr.splitlines() if ' info: ' not in line]
    name = re.split(r'[=,]', opt.split(',')[-1])[0]
    check_eq(len(lines), 1, f'{what}: error lines ({stderr!r})')
    check(name in lines[0], f'{what}: the error does not name {name}: {lines[0]!r}')


@case(mount=False)
def refused_words():
    ufs.require_daemon()
    for opt in [p.opt for _, p in entries(REFUSED)] + EXTRA_REFUSED:
        one_line_refusal(opt, f'-o {opt}')


def run_own(name, probe):
    """A mount of its own: the option takes effect (probe) or it is refused."""
    p = (KEYS.get(name) or WORDS[name])
    ufs.require_daemon()
    if 'io_uring=on' in p.opt:
        require_ring()
    src = ufs.scratch_dir('own')
    setup_source(src)
    r = subprocess.run([ufs.config().daemon, '--config', empty_conf(), '--print-config',
                        '-o', p.opt], capture_output=True, text=True)
    check_eq(r.returncode, 0, f'{p.opt} parses ({r.stderr.strip()})')
    m = ufs.Mount(opts=p.opt, variant=False, source=src)
    try:
        m.start()
        # A refusal found in INIT comes after the mount: the control file never answers.
        refused = m.stats() is None
    except (ufs.HarnessError, OSError):
        refused = True
    if refused:
        m.abort()
        # Refused: the start-up failure is one line naming the option.
        one_line_refusal(p.opt, f'-o {p.opt}')
        return
    try:
        wait_serving(m)
        probe(Ctx(m, base()))
    except BaseException:
        m.abort()
        raise
    m.stop()


@case(mount=False)
def own_zero_copy():
    run_own('zero_copy', KEYS['zero_copy'].check)


@case(mount=False)
def own_bufpool_buffers():
    run_own('bufpool_buffers', KEYS['bufpool_buffers'].check)


@case(mount=False)
def own_selinux_contexts():
    for w in ('context', 'fscontext', 'defcontext', 'rootcontext'):
        run_own(w, WORDS[w].check)


def descendants(pid):
    """The processes below pid (the children of each of its threads, and theirs)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f'/proc/{parent}/task')
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f'/proc/{parent}/task/{task}/children') as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def naming(path):
    """The live processes (no zombies) whose arguments name path: a daemon
    for it, its mount's keeper, fusermount3 mounting or waiting to unmount."""
    want = os.fsencode(path)
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                if want in f.read().split(b'\0'):
                    with open(f'/proc/{pid}/stat') as f:
                        if f.read().rsplit(')', 1)[1].split()[0] != 'Z':
                            found.append(int(pid))
        except OSError:
            pass
    return found


def killed_auto_unmount_gone(m, what):
    """m's daemon is dead: within 20 s its helpers end and its mount goes,
    for good (a process in the middle of exec may show no arguments for a
    moment: five looks 50 ms apart must find neither)."""
    deadline = time.monotonic() + 20
    quiet = 0
    while quiet < 5 and time.monotonic() < deadline:
        quiet = 0 if naming(m.mnt) or ufs.mount_entry(m.mnt) else quiet + 1
        time.sleep(0.05)
    check(not naming(m.mnt), f'{what}: processes for the mount still run after 20 s')
    check(ufs.mount_entry(m.mnt) is None, f'{what}: the mount of the killed daemon stayed')


def auto_unmount_spawned():
    m = ufs.Mount(opts=ufs.join_opts(ufs.config().opts, 'auto_unmount'), variant=False)
    for d in (m.src, m.mnt):
        os.makedirs(d, exist_ok=True)
    m._spawn()
    return m


@case(mount=False)
def own_auto_unmount():
    """auto_unmount: a killed daemon's mount goes away by itself, whenever
    it is killed: at a random point of its first 300 ms (its start-up:
    mounting, INIT, the ring's registration) or once it serves."""
    ufs.require_daemon()
    for when in ('start-up', 'serving'):
        m = auto_unmount_spawned()
        try:
            if when == 'serving':
                m._wait_mounted()
                wait_serving(m)
            else:
                time.sleep(random.uniform(0, 0.3))
            m.proc.kill()
            m.proc.wait(10)
            killed_auto_unmount_gone(m, f'killed {when}')
        finally:
            m.abort()


@case(mount=False, user=True)
def own_auto_unmount_as_user():
    """auto_unmount: an ordinary user's killed daemon's mount (no
    allow_other) goes away by itself too: fusermount3 3.14, looking as
    root, cannot see that it is dead; the daemon's keeper can."""
    ufs.require_daemon()
    m = ufs.Mount(opts=ufs.join_opts(ufs.config().opts, 'auto_unmount'), user=ufs.TEST_USER,
                  variant=False)
    m.start()
    try:
        wait_serving(m)
        m.proc.kill()
        m.proc.wait(10)
        killed_auto_unmount_gone(m, 'a user daemon killed serving')
    finally:
        m.abort()


@case(mount=False)
def own_auto_unmount_killed_while_mounting():
    """auto_unmount: a daemon killed while fusermount3 mounts, before the
    /dev/fuse descriptor reached it, leaves no mount.  Its helpers (the
    fork that runs fusermount3, fusermount3 itself) are stopped the moment
    they show, the daemon is killed, and they go on: fusermount3 then mounts
    for a daemon that is gone (libfuse 3.14's fusermount3 exits without
    unmounting when it cannot hand the descriptor over).  At most 25 runs
    in 20 s, each stopping them at a random point of their first 3 ms."""
    ufs.require_daemon()
    deadline = time.monotonic() + 20
    runs = 0
    while time.monotonic() < deadline and runs < 25:
        runs += 1
        m = auto_unmount_spawned()
        try:
            delay = time.monotonic() + random.uniform(0, 0.003)
            helpers = []
            while m.proc.poll() is None and time.monotonic() < deadline:
                helpers = descendants(m.pid)
                if helpers and time.monotonic() >= delay:
                    break
            signal_all(helpers, signal.SIGSTOP)
            m.proc.kill()
            m.proc.wait(10)
            signal_all(helpers, signal.SIGCONT)
            killed_auto_unmount_gone(m, f'run {runs}')
        finally:
            m.abort()


@case(mount=False, user=True)
def nosymfollow_refused_for_a_user():
    """An ordinary user's daemon cannot set MOUNT_ATTR_NOSYMFOLLOW on its
    fusermount3 mount: nosymfollow is refused with one line, and no mount stays."""
    ufs.require_daemon()
    m = ufs.Mount(opts=ufs.join_opts(ufs.config().opts, 'nosymfollow'), user=ufs.TEST_USER,
                  variant=False)
    try:
        try:
            m.start()   # the mount may show for a moment: the refusal comes after it
        except ufs.HarnessError:
            pass
        rc = m.proc.wait(ufs.EXIT_TIMEOUT) if m.proc else None
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        m.abort()
    check(rc not in (None, 0), f'a user daemon with nosymfollow: exit status {rc}')
    lines = [line for line in m.log_text().splitlines()
             if line.startswith('uringfs: ') and ' info: ' not in line and ' warn: ' not in line]
    check_eq(len(lines), 1, f'error lines ({lines})')
    check('nosymfollow' in lines[0], f'the error does not name nosymfollow: {lines[0]!r}')
    check(ufs.mount_entry(m.mnt) is None, 'the mount stayed')


def keeper_of(mnt):
    """The pid of the uringfs-keeper whose command line names mnt, or None."""
    for pid in naming(mnt):
        try:
            with open(f'/proc/{pid}/comm') as f:
                if f.read().strip() == 'uringfs-keeper':
                    return pid
        except OSError:
            pass
    return None


@case(mount=False)
def own_auto_unmount_detached_leaves_the_caller():
    """auto_unmount without -f: the daemon's keeper neither holds the
    caller's output (a caller reading it to its end, out=$(uringfs ...),
    waited for the unmount, review 48) nor stays in its session (a kill of
    the caller's process group would take auto_unmount away)."""
    ufs.require_daemon()
    cfg = ufs.config()
    base = ufs.scratch_dir('au-detach')
    src, mnt = f'{base}/src', f'{base}/mnt'
    os.makedirs(src)
    os.makedirs(mnt)
    try:
        got = subprocess.run([cfg.daemon, '--config', '/dev/null', '-o',
                              ufs.join_opts(cfg.opts, 'auto_unmount'), src, mnt],
                             capture_output=True, text=True, timeout=60)
        check_eq((got.returncode, got.stdout, got.stderr), (0, '', ''),
                 'the detaching daemon returns at once, saying nothing')
        check(ufs.mount_entry(mnt) is not None, 'mounted')
        keeper = keeper_of(mnt)
        check(keeper is not None, f'a keeper runs for the mount: {naming(mnt)}')
        check(os.getsid(keeper) == keeper, 'the keeper leads a session of its own')
        for fd in (0, 1, 2):
            check_eq(os.readlink(f'/proc/{keeper}/fd/{fd}'), '/dev/null', f'the keeper\'s fd {fd}')
    finally:
        subprocess.run(['fusermount3', '-u', mnt], capture_output=True)
        killed_auto_unmount_gone(types.SimpleNamespace(mnt=mnt), 'after the unmount')


@case(mount=False)
def own_auto_unmount_keeper_killed_is_said():
    """auto_unmount: the keeper killed alone takes auto_unmount away (the
    mount is served, so fusermount3 leaves without unmounting): the daemon
    says so, once, and serves on (it went unsaid, review 48)."""
    ufs.require_daemon()
    m = ufs.Mount(opts=ufs.join_opts(ufs.config().opts, 'auto_unmount'), variant=False)
    m.start()
    try:
        wait_serving(m)
        keeper = keeper_of(m.mnt)
        check(keeper is not None, f'a keeper runs for the mount: {naming(m.mnt)}')
        os.kill(keeper, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while 'keeper (pid' not in m.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        check(f'the mount\'s keeper (pid {keeper}) ended' in m.log_text(),
              'the daemon says the keeper ended' + m.log_tail())
        ufs.write_file(f'{m.mnt}/after', b'served')
        check_eq(ufs.read_file(f'{m.src}/after'), b'served', 'the mount is served after')
        m.stop()
    finally:
        m.abort()
