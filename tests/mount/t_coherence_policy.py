# SPDX-License-Identifier: GPL-2.0-or-later
"""Coherence with SOURCE (issue 26), the policy around it: the defaults
cache long and stay coherent; the mount's own changes do not echo back as
invalidations; a flood of events past the fanotify queue serves nothing
stale; and the `cache=` setting (timeout and none as before, coherent
refused where fanotify cannot see the changes).

The per-change cases are in t_coherence.py (its helpers are used here).
Counting what reaches the daemon uses the control file's op_* counters:
reading the control file itself costs requests, so each count subtracts
what two reads in a row cost (noise()).
"""

import contextlib
import os
import shutil
import signal
import subprocess
import time

import ufs
from ufs import case, check, check_eq
from t_coherence import (LONG, attrs, bound, cache, eventually, held, releasing,
                         require_watchable, same)

# The requests that a cached name or attribute saves.
METADATA = ('op_lookup', 'op_getattr', 'op_statx')


def counts(m, names=METADATA):
    stats = m.stats()
    return {n: stats.get(n, 0) for n in names}


def requests_of(m, fn, names=METADATA):
    """The requests of `names` that fn() sent to the daemon, less what the
    two control-file reads around it cost (measured first, after one that
    renews the control file's own entry, which may have expired)."""
    counts(m, names)
    a = counts(m, names)
    b = counts(m, names)
    fn()
    c = counts(m, names)
    return {n: (c[n] - b[n]) - (b[n] - a[n]) for n in names}


def words(m, *parts):
    """Control-file entries whose names contain any of parts."""
    return {k: v for k, v in (m.stats() or {}).items() if any(p in k for p in parts)}


@case(mount=False)
def defaults_cache_long_and_coherent():
    """With pure defaults (cache=auto on a local file system, as root): a
    name looked up as missing, a name and its attributes are the kernel's
    alone, also past the old 1 s timeouts; and outside changes still show."""
    ufs.require_daemon('caching is the daemon\'s')
    require_watchable()
    with ufs.Mount() as m, held():
        w = m.work('defaults')
        ufs.write_file(f'{w.src}/f', b'x')
        # The watcher sees that create too, later: its invalidation of f and
        # the directory would cost a LOOKUP and a GETATTR in the count.
        settled_by_sentinel(m, 'defaults')

        def again():
            attrs(f'{w.mnt}/x')
            attrs(f'{w.mnt}/f')
            attrs(w.mnt)
        for wait, what in ((0, 'just looked up'),
                           (1.5, 'looked up 1.5 s before (the old timeouts were 1 s and 0)')):
            got = unchanged_by_others(lambda: cache(w.mnt, 'f', missing=['x']), wait,
                                      lambda: requests_of(m, again))
            check_eq(got, dict.fromkeys(METADATA, 0),
                     f'requests for a missing name, a name and a directory {what}')
        ufs.write_file(f'{w.src}/x', b'now here')
        os.chmod(f'{w.src}/f', 0o600)
        same('defaults: create of a name cached as missing', f'{w.mnt}/x', f'{w.src}/x')
        same('defaults: chmod', f'{w.mnt}/f', f'{w.src}/f')
        ufs.diag(f'coherence entries: {words(m, "coheren", "inval", "fanotify", "epoch")}')


def unchanged_by_others(prepare, wait, measure, tries=10):
    """prepare(), sleep wait, measure(); again while the measure was not
    zero and a drop_caches ran meanwhile.  Other suites on the machine drop
    the kernel's caches at any time: cache() holds the names it looked up,
    so they keep their entries and attributes, but a name cached as missing
    cannot be held, and one dropped costs a LOOKUP that is not the daemon's
    doing.  Skips if every try saw a drop."""
    def once():
        prepare()
        time.sleep(wait)
        return measure()
    got, clean = ufs.undisturbed(once, tries, good=lambda got: not any(got.values()))
    if not clean:
        raise ufs.Skip(f'drop_caches ran during each of {tries} tries (last: {got})')
    return got


def settled_by_sentinel(m, label):
    """Make an outside change in a directory of its own and wait until the
    mount shows it: the watcher has then handled every event before it."""
    s = m.work(f'{label}-sentinel')
    cache(s.mnt, missing=['sentinel'])
    ufs.write_file(f'{s.src}/sentinel', b'!')
    same(f'{label}: sentinel', f'{s.mnt}/sentinel', f'{s.src}/sentinel')


@case(opts=LONG)
@releasing
def own_changes_do_not_echo(m):
    """Changes made through the mount reach SOURCE as the daemon's own
    backing calls, which fanotify reports like anyone's: they must not come
    back as invalidations of what the kernel just cached from the replies.
    After names made, renamed and changed through the mount, and an outside
    change that shows the watcher has caught up, looking them up again sends
    no LOOKUP (an echoed INVAL_ENTRY would), nor GETATTR (INVAL_INODE)."""
    ufs.require_daemon('invalidations are the daemon\'s')
    require_watchable()
    w = m.work('echo')
    cache(w.mnt)
    ufs.write_file(f'{w.mnt}/a', b'through the mount')
    os.mkdir(f'{w.mnt}/d')
    os.symlink('a', f'{w.mnt}/s')
    ufs.write_file(f'{w.mnt}/c', b'renamed through the mount')
    os.rename(f'{w.mnt}/c', f'{w.mnt}/b')
    os.chmod(f'{w.mnt}/a', 0o600)
    os.setxattr(f'{w.mnt}/d', 'user.echo', b'x')
    names = [w.mnt] + [f'{w.mnt}/{n}' for n in ('a', 'b', 'd', 's')]
    before = words(m, 'inval', 'epoch')

    def look():
        for p in names:
            attrs(p)
    # Round one: the kernel dropped some attributes itself (a directory's
    # after a create in it, ctime after rename and setxattr): refetch them.
    with contextlib.ExitStack() as stack:
        # The pins' own opens counted too: an echo may have come already.
        first = requests_of(m, lambda: (stack.enter_context(ufs.pinned(names)), look()))
        settled_by_sentinel(m, 'echo')
        second = requests_of(m, look)
    check_eq(first['op_lookup'], 0, 'LOOKUPs of names the mount just made (an echoed '
             f'INVAL_ENTRY), first round: {first}')
    check_eq(second, dict.fromkeys(METADATA, 0), 'requests after the watcher caught up '
             f'(echoed invalidations); first round: {first}')
    after = words(m, 'inval', 'epoch')
    ufs.diag(f'invalidation counters before and after the mount\'s own changes: {before} '
             f'-> {after} (the sentinel accounts for one directory\'s)')


QUEUE_SYSCTL = '/proc/sys/fs/fanotify/max_queued_events'
GUEST_QUEUE = 1024


def queue_size():
    try:
        with open(QUEUE_SYSCTL) as f:
            return int(f.read())
    except OSError:
        return 16384


@contextlib.contextmanager
def small_queue_in_guest():
    """In the emulated guest (40-70 times slower) 18,000 creates take half a
    minute: there the daemon's group is made with a queue of 1024 (a group
    takes max_queued_events when it is made, fanotify_init). Never on the
    host, where other suites start daemons at the same time."""
    old = queue_size()
    if not os.environ.get('UFS_VM_GUEST'):
        yield old
        return
    with open(QUEUE_SYSCTL, 'w') as f:
        f.write(str(GUEST_QUEUE))
    try:
        yield GUEST_QUEUE
    finally:
        with open(QUEUE_SYSCTL, 'w') as f:
            f.write(str(old))


@case(mount=False, root=True, timeout=120)
def flood_past_the_queue():
    """More events than fanotify's queue holds, made while the daemon is
    stopped (SIGSTOP: nothing reads the queue), with real changes in SOURCE
    after the queue is full: their events are lost. After SIGCONT the
    daemon must learn of the overflow and drop everything the kernel caches:
    nothing stale is served, the overflow is counted and logged once."""
    ufs.require_daemon('the watcher is the daemon\'s')
    require_watchable()
    with small_queue_in_guest() as queue, ufs.Mount(opts=LONG) as m, held():
        w = m.work('flood')
        ufs.write_file(f'{w.src}/f', b'before the flood')
        ufs.write_file(f'{w.src}/g', b'unlinked in the flood')
        cache(w.mnt, 'f', 'g', missing=['new'])
        flood = f'{m.tmp}/flood'
        os.mkdir(flood)
        n = queue + 2048
        log_before = len(m.log_text())
        start = time.monotonic()
        os.kill(m.pid, signal.SIGSTOP)
        try:
            for i in range(n):
                os.mknod(f'{flood}/{i}')
            # The queue is full: these are lost.
            os.chmod(f'{w.src}/f', 0o600)
            ufs.write_file(f'{w.src}/new', b'after the flood')
            os.unlink(f'{w.src}/g')
        finally:
            os.kill(m.pid, signal.SIGCONT)
        ufs.diag(f'{n} files created beside SOURCE in {time.monotonic() - start:.2f} s '
                 'with the daemon stopped')
        limit = bound() * 5
        eventually('flood: a name cached as missing, created', lambda: attrs(f'{w.mnt}/new'),
                   lambda: attrs(f'{w.src}/new'), limit)
        eventually('flood: a name unlinked', lambda: attrs(f'{w.mnt}/g'),
                   lambda: attrs(f'{w.src}/g'), limit)
        eventually('flood: chmod', lambda: attrs(f'{w.mnt}/f'), lambda: attrs(f'{w.src}/f'),
                   limit)
        same('flood: the directory', w.mnt, w.src)
        shutil.rmtree(flood)
        overflows = words(m, 'overflow')
        ufs.diag(f'overflow counters: {overflows}')
        check(overflows and all(v > 0 for v in overflows.values()),
              f'the daemon counted no overflow: {overflows or "no counter named overflow"}')
        said = [line for line in m.log_text()[log_before:].splitlines()
                if 'overflow' in line.lower()]
        check_eq(len(said), 1, f'log lines on the overflow: {said}')


@case(mount=False, root=True, timeout=120)
def stop_while_busy_writes_into_no_file():
    """SIGTERM with a process still in the mount: unmounting closes the
    connection's descriptor and its number goes to the next open, such as
    the daemon's own backing open for a client's open in the lazily
    unmounted mount. Notifications of changes beside the mount made after
    that must land nowhere, least of all in that file."""
    ufs.require_daemon('the watcher is the daemon\'s')
    require_watchable()
    m = ufs.Mount()
    m.start()
    fds = []
    try:
        w = m.work('stop')
        victim, other = f'{w.src}/victim', f'{w.src}/other'
        ufs.write_file(victim, b'A' * 64)
        ufs.write_file(other, b'B')
        os.stat(f'{w.mnt}/victim')
        os.stat(f'{w.mnt}/other')
        busy = os.open(w.mnt, os.O_RDONLY | os.O_DIRECTORY)
        fds.append(busy)
        m.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        for _ in range(3):
            fds.append(os.open('victim', os.O_RDWR, dir_fd=busy))
        for i in range(20):
            os.chmod(other, 0o600 if i % 2 else 0o644)
            os.chmod(victim, 0o600 if i % 2 else 0o644)
            time.sleep(0.02)
        time.sleep(0.3)
        check_eq(ufs.read_file(victim), b'A' * 64,
                 'the file a client opened after the SIGTERM' + m.log_tail())
    finally:
        for fd in fds:
            os.close(fd)
        m.ended('SIGTERM')


def cache_option_known():
    """The daemon must know `cache=` (issue 26): --print-config takes it."""
    r = subprocess.run([ufs.config().daemon, '--print-config', '-o', 'cache=timeout'],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and 'cache' in r.stdout,
          f'the daemon does not take cache=timeout: {r.stderr.strip()}')


@case(mount=False)
def cache_none_always_fresh():
    """cache=none: nothing cached, so an outside change shows at the very
    first look, with no wait."""
    ufs.require_daemon()
    cache_option_known()
    with ufs.Mount(opts='cache=none') as m, held():
        w = m.work('none')
        ufs.write_file(f'{w.src}/f', b'x')
        ufs.write_file(f'{w.src}/g', b'y')
        cache(w.mnt, 'f', 'g', missing=['x'])
        os.chmod(f'{w.src}/f', 0o600)
        os.unlink(f'{w.src}/g')
        ufs.write_file(f'{w.src}/x', b'z')
        for n in ('f', 'g', 'x'):
            check_eq(attrs(f'{w.mnt}/{n}'), attrs(f'{w.src}/{n}'), f'{n} at the first look')
        check_eq(attrs(w.mnt), attrs(w.src), 'the directory at the first look')


@case(mount=False)
def cache_timeout_as_before():
    """cache=timeout: today's timeouts (failed lookups not cached, names and
    attributes for 1 s), so an outside change shows within a second or so
    (staleness within the timeout is allowed, not required)."""
    ufs.require_daemon()
    cache_option_known()
    with ufs.Mount(opts='cache=timeout') as m, held():
        w = m.work('timeout')
        ufs.write_file(f'{w.src}/f', b'x')
        cache(w.mnt, 'f', missing=['x'])
        got = requests_of(m, lambda: attrs(f'{w.mnt}/x'), ('op_lookup',))
        check_eq(got, {'op_lookup': 1}, 'a missing name looked up again (negative_timeout 0)')
        os.chmod(f'{w.src}/f', 0o600)
        eventually('cache=timeout: chmod (within attr_timeout 1 s)',
                   lambda: attrs(f'{w.mnt}/f'), lambda: attrs(f'{w.src}/f'), 1 + bound())
        ufs.diag(f'coherence entries: {words(m, "coheren")}')


@case(mount=False, root=True)
def cache_coherent_refused_on_fuse():
    """cache=coherent where fanotify cannot see the changes: SOURCE on a
    FUSE mount (another uringfs here; its changes come from its own SOURCE,
    which a mark on the FUSE file system does not see). Start-up fails with
    one error line; on a local file system the same setting mounts; and
    cache=auto on the FUSE mount falls back and mounts."""
    ufs.require_daemon()
    cache_option_known()
    with ufs.Mount(opts='cache=coherent') as local:
        check(local.alive(), 'cache=coherent on a local file system')
    with ufs.Mount() as inner:
        empty = os.path.join(ufs.run_dir(), 'empty.conf')
        err = ufs.start_fails(['--config', empty, '-o', 'cache=coherent', inner.mnt],
                              'cache=coherent on a FUSE SOURCE')
        errors = [line for line in err.splitlines() if 'error' in line.lower()]
        check(len(errors) == 1, f'one error line, got: {err!r}')
        check(any(w in errors[0].lower() for w in ('cache', 'coheren', 'fanotify')),
              f'the error names the setting or the cause: {errors[0]!r}')
        with ufs.Mount(opts='cache=auto', source=inner.mnt) as outer:
            check_eq(attrs(f'{outer.mnt}/.'), attrs(inner.mnt), 'cache=auto on FUSE mounts')
            ufs.diag(f'cache=auto on FUSE: {words(outer, "coheren")}')



def copy_path_opts(*extra):
    """The long-cache options with extra, on the copy path unless the
    variant names one (the kernel's page cache then holds the contents)."""
    opts = ufs.join_opts(LONG, *extra)
    if 'io_path=' not in (ufs.config().opts or ''):
        opts = ufs.join_opts(opts, 'io_path=copy')
    return opts


def overwrite_and_append(path):
    with open(path, 'r+b') as f:
        f.seek(4096)
        f.write(b'B' * 4096)
        f.seek(0, os.SEEK_END)
        f.write(b'C' * 100)


@case(mount=False)
def outside_write_with_keep_cache():
    """Contents overwritten and appended beside the mount while the kernel
    keeps the mount's pages across opens (keep_cache, the copy path): a new
    open and a descriptor kept open both read SOURCE's bytes."""
    ufs.require_daemon('the page cache options are the daemon\'s')
    require_watchable()
    with ufs.Mount(opts=copy_path_opts('keep_cache=on')) as m, held():
        w = m.work('keep')
        ufs.write_file(f'{w.src}/f', b'A' * 8192)
        cache(w.mnt, 'f')
        with ufs.opened(f'{w.mnt}/f') as fd:
            os.pread(fd, 65536, 0)
            os.fstat(fd)
            overwrite_and_append(f'{w.src}/f')
            want = ufs.read_file(f'{w.src}/f')
            eventually('keep_cache: a new open', lambda: ufs.read_file(f'{w.mnt}/f'),
                       lambda: want)
            eventually('keep_cache: the kept descriptor', lambda: os.pread(fd, 65536, 0),
                       lambda: want)


@case(mount=False)
def outside_write_with_writeback_cache():
    """The same with the writeback cache, no descriptor open through the
    mount at the change: a new open reads SOURCE's bytes, the appended ones
    too. (With the writeback cache the kernel keeps its own size, mtime and
    ctime of a cached regular file and ignores the daemon's: an
    INVAL_INODE alone leaves the old size.)"""
    ufs.require_daemon('the page cache options are the daemon\'s')
    require_watchable()
    with ufs.Mount(opts=copy_path_opts('keep_cache=on', 'writeback_cache=on')) as m, held():
        w = m.work('writeback')
        ufs.write_file(f'{w.src}/f', b'A' * 8192)
        # Not held: a held file is an open one, whose size the kernel keeps.
        cache(w.mnt, 'f', hold=False)
        overwrite_and_append(f'{w.src}/f')
        want = ufs.read_file(f'{w.src}/f')
        eventually('writeback_cache: a new open', lambda: ufs.read_file(f'{w.mnt}/f'),
                   lambda: want)
        eventually('writeback_cache: the size', lambda: os.stat(f'{w.mnt}/f').st_size,
                   lambda: len(want))
