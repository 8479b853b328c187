# SPDX-License-Identifier: GPL-2.0-or-later
"""File locks between processes: fcntl POSIX locks and flock.

Each case runs twice: with the kernel keeping the locks itself (the default,
posix_locks=off,flock_locks=off) and with posix_locks=on,flock_locks=on, where
the daemon takes them on the backing file system.  Both must behave like the
reference directory.
"""

import errno
import fcntl
import os
import signal
import subprocess
import threading
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, opened

E = errno
DAEMON = 'posix_locks=on,flock_locks=on'
WR, RD, UN = fcntl.F_WRLCK, fcntl.F_RDLCK, fcntl.F_UNLCK


def lock_case(fn):
    """Register fn(m) once per locking mode."""
    case(name=fn.__name__)(fn)
    case(name=f'{fn.__name__}[{DAEMON}]', opts=DAEMON)(fn)
    return fn


def on_both(m, name, fn):
    """fn(path) on a fresh file through the mount and in the reference dir."""
    w = m.work(name)
    w.setup(lambda d: ufs.write_file(f'{d}/f', bytes(200)))
    got = ufs.outcome(fn, f'{w.mnt}/f')
    want = ufs.outcome(fn, f'{w.ref}/f')
    return got, want


def holder(chan, path, ltype, start, length):
    """Child: lock [start, start+length) of path, report, then obey commands."""
    fd = os.open(path, os.O_RDWR)
    extra = os.open(path, os.O_RDONLY)
    sx.lock(fd, fcntl.F_SETLK, ltype, start, length)
    chan.send(('locked', os.getpid()))
    while True:
        # Its next command may come after minutes of the parent's work (the
        # interrupted waits run 24 s, longer on a loaded machine); the
        # case's own timeout bounds the wait.
        cmd, arg = chan.recv(timeout=600)
        if cmd == 'unlock-after':
            time.sleep(arg)
            before = time.monotonic()
            sx.lock(fd, fcntl.F_SETLK, UN, 0, 0)
            chan.send(('unlocked', before))
        elif cmd == 'close-other':
            os.close(extra)
            chan.send(('closed', None))
        elif cmd == 'exit':
            return 'bye'


def getlk(path, ltype, start, length):
    with opened(path, os.O_RDWR) as fd:
        return sx.lock(fd, fcntl.F_GETLK, ltype, start, length)


def getlk_steps(path):
    with ufs.Child(holder, path, WR, 10, 20) as a:
        _, pid = a.recv()
        found = getlk(path, WR, 0, 100)
        check_eq(found[4], pid, 'l_pid of the conflicting lock')
        outside = getlk(path, WR, 40, 10)
        a.send(('exit', None))
        a.join()
    with ufs.Child(holder, path, RD, 0, 0) as a:
        a.recv()
        shared = getlk(path, RD, 0, 50)
        blocked = getlk(path, WR, 0, 50)
        a.send(('exit', None))
        a.join()
    return found[:4], outside[:4], shared[:4], blocked[:4]


@lock_case
def getlk_reports_holder(m):
    got, want = on_both(m, 'getlk', getlk_steps)
    ufs.check_same(got, want, 'F_GETLK results')
    check_eq(got.value[0], (WR, os.SEEK_SET, 10, 20), 'F_GETLK (type, whence, start, len)')
    check_eq(got.value[1][0], UN, 'F_GETLK on a free range')
    check_eq(got.value[2][0], UN, 'F_GETLK of a read lock against a read lock')
    check_eq(got.value[3][:1], (RD,), 'F_GETLK of a write lock against a read lock')


def setlk_steps(path):
    with ufs.Child(holder, path, WR, 0, 100) as a, opened(path, os.O_RDWR) as fd:
        a.recv()
        out = [str(ufs.outcome(sx.lock, fd, fcntl.F_SETLK, WR, 50, 10)),
               str(ufs.outcome(sx.lock, fd, fcntl.F_SETLK, RD, 99, 1)),
               str(ufs.outcome(sx.lock, fd, fcntl.F_SETLK, WR, 100, 10)),
               str(ufs.outcome(sx.lock, fd, fcntl.F_SETLK, UN, 100, 10))]
        a.send(('exit', None))
        a.join()
    return out


@lock_case
def setlk_conflict(m):
    got, want = on_both(m, 'setlk', setlk_steps)
    ufs.check_same(got, want, 'F_SETLK results')
    check(got.value[0] in ('EAGAIN', 'EACCES'), f'F_SETLK on a locked range: {got.value[0]}')


def setlkw_steps(path):
    with ufs.Child(holder, path, WR, 0, 0) as a, opened(path, os.O_RDWR) as fd:
        a.recv()
        start = time.monotonic()
        a.send(('unlock-after', 0.5))
        sx.lock(fd, fcntl.F_SETLKW, WR, 0, 0)
        got_it = time.monotonic()
        _, released = a.recv()
        owner = getlk_from_child(path)
        a.send(('exit', None))
        a.join()
    return got_it - start, got_it >= released, owner == os.getpid()


def getlk_from_child(path):
    """The pid that F_GETLK in another process reports for a write lock on all of path."""
    with ufs.Child(lambda _c: getlk(path, WR, 0, 0)[4]) as c:
        return c.join()


@lock_case
def setlkw_waits(m):
    got, want = on_both(m, 'setlkw', setlkw_steps)
    check(got.err is None, f'F_SETLKW through the mount failed: {got}')
    waited, after_release, owned = got.value
    check(waited >= 0.4, f'F_SETLKW returned after {waited:.2f} s, before the holder released')
    check(after_release, 'F_SETLKW returned before the holder released its lock')
    check(owned, 'after F_SETLKW another process does not see our lock')
    ufs.check_same(got.value[1:], want.value[1:], 'F_SETLKW results')


def close_steps(path):
    with ufs.Child(holder, path, WR, 0, 0) as a:
        _, pid = a.recv()
        before = getlk(path, WR, 0, 0)
        check_eq(before[4], pid, 'lock holder before closing')
        a.send(('close-other', None))
        a.recv()
        after = getlk(path, WR, 0, 0)
        a.send(('exit', None))
        a.join()
    return before[0], after[0]


@lock_case
def close_releases(m):
    got, want = on_both(m, 'close', close_steps)
    ufs.check_same(got, want, 'lock type before/after closing another fd')
    check_eq(got.value, (WR, UN), 'lock before and after closing another fd of the file')


def ofd_close_steps(path):
    """An OFD lock goes with the last close of its open file: another open
    then takes the same lock, and again after a second round."""
    out = []
    for _ in range(2):
        fd = os.open(path, os.O_RDWR)
        sx.lock(fd, fcntl.F_OFD_SETLK, WR, 0, 10)
        os.close(fd)
        fd = os.open(path, os.O_RDWR)
        try:
            o = ufs.outcome(sx.lock, fd, fcntl.F_OFD_SETLK, WR, 0, 10)
            out.append(ufs.errname(o.err) if o.err else 'locked')
        finally:
            os.close(fd)
    return out


@lock_case
def ofd_lock_released_at_close(m):
    """Issue 24 (a sibling of the descriptor budget): with posix_locks=on an
    OFD lock's owner, its open file, kept its description in the daemon, and
    the lock on the backing file, until the inode was released."""
    got, want = on_both(m, 'ofd-close', ofd_close_steps)
    ufs.check_same(got, want, 'OFD locks after the last close of their file')
    check_eq(got.value, ['locked', 'locked'], 'a new open takes the lock after the close')


def flock_open_flags():
    """How the flock cases open their files: read-only, except on NFS, which
    emulates flock(2) with byte-range locks, whose exclusive lock needs a
    descriptor open for writing (flock(2), NOTES): EBADF natively."""
    return os.O_RDWR if ufs.backing_is_nfs() else os.O_RDONLY


def try_flock(path, op):
    with opened(path, flock_open_flags()) as fd:
        fcntl.flock(fd, op)


def flock_steps(path):
    out = []
    flags = flock_open_flags()
    with opened(path, flags) as fd1, opened(path, flags) as fd2:
        fcntl.flock(fd1, fcntl.LOCK_EX)
        out.append(str(ufs.outcome(fcntl.flock, fd2, fcntl.LOCK_EX | fcntl.LOCK_NB)))
        out.append(str(ufs.outcome(fcntl.flock, fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)))
        with ufs.Child(lambda _c: str(ufs.outcome(try_flock, path,
                                                  fcntl.LOCK_EX | fcntl.LOCK_NB))) as c:
            out.append(c.join())
        os.close(os.dup(fd1))  # closing a dup does not drop a flock
        out.append(str(ufs.outcome(fcntl.flock, fd2, fcntl.LOCK_EX | fcntl.LOCK_NB)))
    with opened(path, flags) as fd1, opened(path, flags) as fd2:
        out.append(str(ufs.outcome(fcntl.flock, fd1, fcntl.LOCK_SH | fcntl.LOCK_NB)))
        out.append(str(ufs.outcome(fcntl.flock, fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)))
        out.append(str(ufs.outcome(fcntl.flock, fd2, fcntl.LOCK_EX | fcntl.LOCK_NB)))
    return out


@lock_case
def flock_conflict(m):
    got, want = on_both(m, 'flock', flock_steps)
    ufs.check_same(got, want, 'flock results')
    check_eq(got.value, ['EAGAIN', 'EAGAIN', 'EAGAIN', 'EAGAIN', 'None', 'None', 'EAGAIN'],
             'flock results (EWOULDBLOCK is EAGAIN)')


def interrupted_setlkw(chan, path):
    """Child: F_SETLKW on a locked file, interrupted by SIGALRM (no SA_RESTART)."""
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.siginterrupt(signal.SIGALRM, True)
    with opened(path, os.O_RDWR) as fd:
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        err = ufs.outcome(sx.lock, fd, fcntl.F_SETLKW, WR, 0, 0).err
        elapsed = time.monotonic() - start
    t0 = time.monotonic()
    os.stat(path)
    return err, elapsed, time.monotonic() - t0


def eintr_steps(path):
    with ufs.Child(holder, path, WR, 0, 0) as a:
        _, pid = a.recv()
        with ufs.Child(interrupted_setlkw, path) as b:
            err, elapsed, stat_time = b.join(timeout=20)
        holder_after = getlk(path, WR, 0, 0)[4]
        a.send(('unlock-after', 0))
        a.recv()
        with opened(path, os.O_RDWR) as fd:
            sx.lock(fd, fcntl.F_SETLK, WR, 0, 0)
        a.send(('exit', None))
        a.join()
    check_eq(holder_after, pid, 'lock holder after the interrupted F_SETLKW')
    return ufs.errname(err) if err else None, elapsed, stat_time


@lock_case
def setlkw_eintr(m):
    got, want = on_both(m, 'eintr', eintr_steps)
    check(got.err is None, f'interrupted F_SETLKW through the mount: {got}')
    err, elapsed, stat_time = got.value
    check_eq(err, want.value[0], 'F_SETLKW interrupted by a signal')
    check_eq(err, 'EINTR', 'F_SETLKW interrupted by a signal')
    check(elapsed < 5, f'the interrupted F_SETLKW took {elapsed:.1f} s')
    check(stat_time < 1, f'stat after the interrupted lock took {stat_time:.1f} s')


def try_lock(chan, path):
    """Child: can another process take a write lock on path now?"""
    with opened(path, os.O_RDWR) as fd:
        err = ufs.outcome(sx.lock, fd, fcntl.F_SETLK, WR, 0, 0).err
    return ufs.errname(err) if err else None


def close_during_wait_steps(path):
    """One thread waits in F_SETLKW on fd1 while another thread of the same
    process closes fd2 of the same file (a FLUSH of the same lock owner).
    Linux drops the owner's locks but lets the wait go on: once the holder
    unlocks, the waiter holds the lock, and another process cannot take it."""
    with ufs.Child(holder, path, WR, 0, 0) as a:
        a.recv()
        fd1, fd2 = os.open(path, os.O_RDWR), os.open(path, os.O_RDONLY)
        try:
            waited = {}
            t = threading.Thread(
                target=lambda: waited.update(r=ufs.outcome(sx.lock, fd1, fcntl.F_SETLKW, WR, 0, 0)))
            t.start()
            time.sleep(0.3)                 # the wait has begun
            os.close(fd2)
            fd2 = -1
            a.send(('unlock-after', 0.2))
            a.recv()
            t.join(10)
            check(not t.is_alive(), 'F_SETLKW still waiting after the holder unlocked')
            with ufs.Child(try_lock, path) as c:
                other = c.join()
        finally:
            os.close(fd1)
            if fd2 >= 0:
                os.close(fd2)
        a.send(('exit', None))
        a.join()
    r = waited.get('r')
    return ('locked' if r and r.err is None else str(r)), other


@lock_case
def close_during_setlkw(m):
    got, want = on_both(m, 'close_during_setlkw', close_during_wait_steps)
    ufs.check_same(got, want, 'F_SETLKW result, and another process trying the lock')
    check_eq(want.value, ('locked', 'EAGAIN'), 'the reference (Linux) behaviour')


def interrupted_wait(chan, path, after):
    """Child: F_SETLKW on a locked file with SIGALRM after `after` s."""
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.siginterrupt(signal.SIGALRM, True)
    with opened(path, os.O_RDWR) as fd:
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, after)
        err = ufs.outcome(sx.lock, fd, fcntl.F_SETLKW, WR, 0, 0).err
        return ufs.errname(err) if err else None, time.monotonic() - start


@case(mount=False, root=True, timeout=60)
def interrupt_races_setlkw():
    """An INTERRUPT handled while its SETLKW is still on its way to the wait
    (another worker read it first): the wait still ends with EINTR.  The
    daemon's debug pauses hold the SETLKW before it registers its wait (so
    the INTERRUPT, 0.1 s in, finds nothing), and the INTERRUPT between its
    two steps until after the wait registered: the two cross in the worst
    order."""
    ufs.require_debug_build()
    for pause in ('setlkw:300,interrupt:600', 'setlkw:300'):
        env = {'UFS_DEBUG_PAUSE': pause}
        with ufs.Mount(opts=f'{DAEMON},workers=2', env=env) as m:
            path = f'{m.mnt}/f'
            ufs.write_file(path, bytes(100))
            with ufs.Child(holder, path, WR, 0, 0) as a:
                a.recv()
                with ufs.Child(interrupted_wait, path, 0.1) as b:
                    err, took = b.join(timeout=20)
                a.send(('exit', None))
                a.join()
            check_eq(err, 'EINTR', f'{pause}: F_SETLKW interrupted while on its way')
            check(took < 3, f'{pause}: the interrupted F_SETLKW took {took:.1f} s')


F_SETLEASE = 1024       # fcntl.h: F_LINUX_SPECIFIC_BASE + 0


def lease_holder(chan, path, hold):
    """Child: a read lease on path (a backing file, as a local program would
    take it), given up `hold` seconds after it is asked to break."""
    signal.signal(signal.SIGIO, signal.SIG_IGN)   # the break notice
    with opened(path, os.O_RDONLY) as fd:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
        chan.send('leased')
        chan.recv()                                 # the writer is opening now
        time.sleep(hold)
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
    return 'released'


def timed_open(chan, path, flags):
    """Child (or chan None: in the caller): open path, saying so first."""
    if chan is not None:
        chan.send('opening')    # a loaded box may start a child late: the parent waits
    start = time.monotonic()
    got = ufs.outcome(lambda: os.close(os.open(path, flags)))
    return (ufs.errname(got.err) if got.err else None), time.monotonic() - start


@case(mount=False, root=True, timeout=60)
def open_waits_for_lease():
    """An open for writing waits while a local program's lease on the backing
    file is broken, as it would locally, but on a helper thread: the mount's
    only worker goes on serving other requests meanwhile.  With O_NONBLOCK
    the open fails at once with EWOULDBLOCK, as locally."""
    ufs.require_daemon('the worker is the daemon\'s')
    with ufs.Mount(opts='workers=1,queue_depth=4') as m:
        ufs.write_file(f'{m.src}/leased', b'x')
        ufs.write_file(f'{m.src}/other', b'y')
        with ufs.Child(lease_holder, f'{m.src}/leased', 2.0) as h:
            h.recv()
            err, took = timed_open(None, f'{m.mnt}/leased', os.O_WRONLY | os.O_NONBLOCK)
            check_eq(err, 'EAGAIN', 'O_NONBLOCK open of a leased file')
            check(took < 1, f'the O_NONBLOCK open took {took:.1f} s')
            with ufs.Child(timed_open, f'{m.mnt}/leased', os.O_WRONLY) as w:
                w.recv()
                time.sleep(0.3)                     # the open waits now
                h.send('go')
                worst = 0.0
                deadline = time.monotonic() + 1.2
                while time.monotonic() < deadline:
                    t0 = time.monotonic()
                    check_eq(ufs.read_file(f'{m.mnt}/other'), b'y', 'another file meanwhile')
                    worst = max(worst, time.monotonic() - t0)
                err, took = w.join(timeout=30)
            check_eq(h.join(), 'released', 'the lease holder')
        check_eq(err, None, 'the open once the lease was given up')
        check(took >= 1.5, f'the open returned after {took:.1f} s, before the lease went')
        check(worst < 0.5, f'a read of another file took {worst:.2f} s while the open waited')


@case(mount=False, root=True, timeout=120)
def interrupted_waits_never_hang():
    """Thousands of F_SETLKW and flock waits on a held lock, each interrupted
    by signals (tests/mount/helpers/lock-interrupt.c): every one ends with
    EINTR within 2 s, on either transport.  Over io_uring the kernel sends no
    INTERRUPT for a caller signalled before its request reached a ring entry,
    and the daemon must notice the pending signal itself; a wake-up signal
    sent just before a wait sleeps must not be lost either."""
    ufs.require_daemon('the waits are the daemon\'s')
    tool = ufs.c_helper('helpers/lock-interrupt.c')
    with ufs.Mount(opts=DAEMON) as m:
        path = f'{m.mnt}/f'
        ufs.write_file(path, bytes(100))
        with ufs.Child(holder, path, WR, 0, 0) as a:
            a.recv()
            with opened(path, flock_open_flags()) as fd:
                fcntl.flock(fd, fcntl.LOCK_EX)   # the flock the other waits meet
                for kind in ('posix', 'flock'):
                    r = subprocess.run([tool, path, '12', kind], capture_output=True,
                                       text=True, timeout=60)
                    ufs.diag(f'{kind}: {r.stdout.strip()}')
                    check_eq((r.returncode, r.stderr.strip()), (0, ''),
                             f'{kind} waits interrupted by signals: {r.stdout.strip()}')
            a.send(('exit', None))
            a.join()


@case(mount=False, root=True, timeout=90)
def lease_wait_within_request_timeout():
    """With request_timeout, an open waiting for a lease that is not given up
    ends before the kernel would abort the whole mount for it: EWOULDBLOCK
    after request_timeout - 5 s, and the mount keeps serving."""
    ufs.require_daemon('the wait is the daemon\'s')
    with ufs.Mount(opts='request_timeout=15') as m:
        stats = m.stats() or {}
        ufs.write_file(f'{m.src}/leased', b'x')
        with ufs.Child(lease_holder, f'{m.src}/leased', 25.0) as h:
            h.recv()
            with ufs.Child(timed_open, f'{m.mnt}/leased', os.O_WRONLY) as w:
                w.recv()
                time.sleep(0.3)
                h.send('go')
                err, took = w.join(timeout=40)
            check_eq(ufs.read_file(f'{m.mnt}/leased'), b'x', 'a read while the lease is held')
            h.kill()
        ufs.diag(f'the open ended with {err} after {took:.1f} s (transport {stats.get("transport")})')
        check_eq(err, 'EAGAIN', 'the open behind a lease that stays')
        check(9 <= took <= 12, f'it ended after {took:.1f} s, expected about 10 s')
        check(m.alive(), 'the mount is gone')


def crowd_waiter(path, go_r, done_w, cpu):
    """Forked: on cpu, F_SETLKW the whole of path, then report 'w' (got it) or
    the errno."""
    os.close(go_r)
    os.sched_setaffinity(0, {cpu})
    fd = os.open(path, os.O_RDWR)
    try:
        sx.lock(fd, fcntl.F_SETLKW, WR, 0, 0)
        msg = b'w'
    except OSError as e:
        msg = b'%d' % e.errno
    os.write(done_w, msg.ljust(4))
    os._exit(0)


def lock_crowd(path, n, during):
    """n crowd_waiters, spread over this process's CPUs, wait for a lock a
    holder keeps on path; during() runs once they all wait.  Returns what
    it returned and {outcome: count} once the holder let go."""
    with ufs.Child(holder, path, WR, 0, 0) as a:
        a.recv()
        done_r, done_w = os.pipe()
        pids = []
        cpus = sorted(os.sched_getaffinity(0))
        for _ in range(n):
            pid = os.fork()
            if not pid:
                crowd_waiter(path, done_r, done_w, cpus[len(pids) % len(cpus)])
            pids.append(pid)
        os.close(done_w)
        time.sleep(1)    # every wait reached the daemon
        got = during()
        a.send(('unlock-after', 0))
        a.recv()
        results = []
        with os.fdopen(done_r, 'rb') as f:
            while len(results) < n:
                msg = f.read(4)
                if not msg:
                    break
                results.append(msg.strip().decode())
        for pid in pids:
            os.waitpid(pid, 0)
        a.send(('exit', None))
        a.join()
    return got, {x: results.count(x) for x in set(results)}


@case(mount=False, root=True, timeout=180)
def crowd_of_lock_waits_never_starves():
    """120 processes (ufs.crowd_size) wait in F_SETLKW on a held lock while a probe times
    statx(AT_STATX_FORCE_SYNC), one GETATTR round trip (bench/cfr-seed.c
    with no copies) keeps within ufs.probe_limits, and with the default queue_depth
    every wait waits (none is refused with ENOLCK, which a wait beyond what
    a ring queue lets long waits hold would get: the waiters are spread over
    the CPUs, whose queues they use, as evenly as a crowd of many callers
    is); all get the lock in turn once it is free."""
    ufs.require_daemon('the waits are the daemon\'s')
    n = ufs.crowd_size()
    with ufs.Mount(opts=DAEMON) as m:
        limits = ufs.probe_limits(m.mnt)
        path = f'{m.mnt}/f'
        ufs.write_file(path, bytes(100))
        got, outcomes = lock_crowd(path, n, lambda: ufs.probe(m.mnt, 0, 2))
    ufs.diag(f'{n} lock waits: {ufs.probe_summary(got, limits)}; outcomes {outcomes}')
    ufs.check_probe(got, limits, f'{n} lock waits')
    if 'queue_depth=' in m.opts:
        # A variant's small queue_depth: waits beyond what a queue lets long
        # waits hold are refused, and only those.
        check(set(outcomes) <= {'w', str(E.ENOLCK)} and outcomes.get('w'),
              f'outcomes with {m.opts}: {outcomes}')
    else:
        check_eq(outcomes, {'w': n}, 'every wait got the lock once it was free')


@case(mount=False, root=True, timeout=120)
def dev_waits_are_bounded():
    """Over /dev/fuse a lock wait keeps a helper thread: no more wait at once
    than io_uring queues of queue_depth would let (workers x seven eighths),
    the next are refused with ENOLCK, and the daemon's threads stay bounded
    however many callers wait."""
    ufs.require_daemon('the waits are the daemon\'s')
    with ufs.Mount(opts=f'{DAEMON},io_uring=off,workers=1,queue_depth=8', variant=False) as m:
        path = f'{m.mnt}/f'
        ufs.write_file(path, bytes(100))
        before = len(os.listdir(f'/proc/{m.pid}/task'))
        during, outcomes = lock_crowd(path, 20, lambda: len(os.listdir(f'/proc/{m.pid}/task')))
    ufs.diag(f'daemon threads {before} -> {during} with 20 waits; outcomes {outcomes}')
    check_eq(outcomes, {'w': 7, str(E.ENOLCK): 13}, 'outcomes of 20 waits, 7 allowed')
    check(during <= before + 7, f'the daemon went from {before} to {during} threads')
