# SPDX-License-Identifier: GPL-2.0-or-later
"""Slow requests named (slow_request_ms) and `uringfs --stats --in-flight`.

A request is made to hang in the daemon without a shim: a read lease held on
the backing file beside the mount (fcntl F_SETLEASE) makes the daemon's open
for writing wait until the holder gives it up (the daemon parks that open on
a wait thread, fs_open.c).  A blocking POSIX lock wait is the other long
wait: listed in flight, never called slow."""

import os
import re
import subprocess
import sys
import time

import ufs
from ufs import case, check, check_eq

# Holds a read lease on argv[1] until a line arrives on stdin.  The lease
# break's SIGIO is ignored: the kernel then waits lease-break-time (45 s by
# default) before breaking it by force, far longer than a case takes.
LEASE_HOLDER = r'''
import fcntl, os, signal, sys
signal.signal(signal.SIGIO, signal.SIG_IGN)
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
print('leased', flush=True)
sys.stdin.readline()
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
os.close(fd)
'''

# Opens argv[1] for writing (blocks behind the lease), says so, exits.
OPENER = r'''
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.close(fd)
print('opened', flush=True)
'''

# Takes a write lock on all of argv[1] (blocking: F_SETLKW), says so, holds
# it until a line arrives on stdin.
LOCKER = r'''
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
print('locked', flush=True)
sys.stdin.readline()
'''


def in_flight(m):
    """`uringfs --stats MNT --in-flight`: its lines (exit status checked)."""
    got = subprocess.run([m.daemon, '--stats', m.mnt, '--in-flight'], capture_output=True,
                         text=True, timeout=30)
    check_eq((got.returncode, got.stderr), (0, ''), '--stats --in-flight exit status and stderr')
    return got.stdout.splitlines()


def of_pid(lines, pid):
    return [line for line in lines if f' pid={pid} ' in f' {line} ']


def until(what, fn, timeout=30.0):
    """fn()'s first true value, polled until timeout (generous: CI is loaded)."""
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f'{what}: not within {timeout:.0f} s')
        time.sleep(0.1)


def spawn(script, *args):
    return subprocess.Popen([sys.executable, '-c', script, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def finish(p, what):
    """Let p go on (a line on its stdin) and wait for it to end well."""
    try:
        p.stdin.write('\n')
        p.stdin.flush()
    except BrokenPipeError:
        pass
    out, _ = p.communicate(timeout=60)
    check_eq(p.returncode, 0, f'{what}: exit status')
    return out


def leases_off():
    """Skip when the kernel refuses leases (fs.leases-enable = 0)."""
    try:
        with open('/proc/sys/fs/leases-enable') as f:
            if f.read().strip() == '0':
                raise ufs.Skip('fs.leases-enable is 0: the kernel grants no lease to hold '
                               'the open with')
    except FileNotFoundError:
        raise ufs.Skip('no /proc/sys/fs/leases-enable: a kernel without leases') from None


def slow_lines(m, opcode, pid):
    return [line for line in m.log_text().splitlines()
            if f'slow request: {opcode} ' in line and f' pid={pid} ' in line]


@case(mount=False, root=True)
def open_behind_a_lease_is_named_once_and_listed():
    """An OPEN stuck behind a lease for longer than slow_request_ms is logged
    once (opcode, node id, path, pid, uid, how long), --stats --in-flight
    lists it (waiting=lease) while it is stuck, and no longer once it is done;
    plain --stats and Prometheus's format carry no in-flight lines.  Its
    name has a newline, which the message writes as \\012: a name is anyone's
    to choose, and must not start a log line of its own (review 40)."""
    ufs.require_daemon('the daemon logs and lists its requests')
    with ufs.Mount(opts='slow_request_ms=200') as m:
        ufs.write_file(f'{m.src}/lea\nsed', b'data')
        holder = spawn(LEASE_HOLDER, f'{m.src}/lea\nsed')
        if holder.stdout.readline().strip() != 'leased':
            holder.communicate(timeout=60)
            leases_off()
            check(False, f'the lease holder could not take its lease ({holder.returncode})')
        opener = None
        try:
            opener = spawn(OPENER, f'{m.mnt}/lea\nsed')
            logged = until('the slow OPEN logged', lambda: slow_lines(m, 'OPEN', opener.pid))
            line = logged[0]
            check(re.search(r'nodeid=\d+ ', line), f'no node id in {line!r}')
            check(f'path={os.path.realpath(m.src)}/lea\\012sed ' in line,
                  f'no path {m.src}/lea\\012sed in {line!r}')
            check(' uid=0 ' in line and re.search(r'in flight for \d+ ms', line),
                  f'uid, how long: {line!r}')
            listed = of_pid(in_flight(m), opener.pid)
            check_eq(len(listed), 1, f'the stuck OPEN in the in-flight list {listed}')
            check(listed[0].startswith('OPEN unique=') and 'waiting=lease' in listed[0]
                  and re.search(r' nodeid=\d+ .* age_ms=\d+', listed[0]),
                  f'the in-flight line {listed[0]!r}')
            plain = subprocess.run([m.daemon, '--stats', m.mnt], capture_output=True,
                                   text=True, timeout=30).stdout
            check(not re.search(r'^inflight ', plain, re.M), 'in-flight lines in plain --stats')
            check(re.search(r'^inflight_requests [1-9]', plain, re.M),
                  'inflight_requests in plain --stats')
            prom = subprocess.run([m.daemon, '--stats', m.mnt, '--format=prometheus'],
                                  capture_output=True, text=True, timeout=30).stdout
            check('OPEN unique=' not in prom and 'uringfs_inflight_requests{' in prom,
                  'Prometheus format and the in-flight list')
            # Named once: more checks of the watch (every 50 ms here) add none.
            time.sleep(1.0)
            check_eq(len(slow_lines(m, 'OPEN', opener.pid)), 1, 'slow OPEN messages')
            check(opener.poll() is None, 'the opener was not stuck')
        finally:
            finish(holder, 'the lease holder')
            if opener:
                out = finish(opener, 'the opener')
        check_eq(out.strip(), 'opened', 'the opener')
        check_eq(of_pid(in_flight(m), opener.pid), [], 'the in-flight list once it was done')
        check(m.stats()['slow_requests'] >= 1, 'slow_requests')


@case(mount=False, root=True)
def lock_wait_is_listed_not_called_slow():
    """A blocking lock wait (posix_locks=on) waits by design: --in-flight lists
    it (waiting=lock), the log never calls it slow."""
    ufs.require_daemon('the daemon logs and lists its requests')
    with ufs.Mount(opts='slow_request_ms=100,posix_locks=on') as m:
        ufs.write_file(f'{m.mnt}/locked', b'data')
        first = spawn(LOCKER, f'{m.mnt}/locked')
        second = None
        try:
            check_eq(first.stdout.readline().strip(), 'locked', 'the first locker')
            second = spawn(LOCKER, f'{m.mnt}/locked')
            listed = until('the lock wait in the in-flight list',
                           lambda: of_pid(in_flight(m), second.pid))
            check(listed[0].startswith('SETLKW ') and 'waiting=lock' in listed[0],
                  f'the in-flight line {listed[0]!r}')
            # Well past the threshold and many checks of the watch.
            time.sleep(1.0)
            check(of_pid(in_flight(m), second.pid), 'the lock wait left the list')
            # Nor does it age the gauge an alert watches (operations.md).
            check(m.stats()['inflight_oldest_ms'] < 500,
                  f'inflight_oldest_ms counts the lock wait: {m.stats()["inflight_oldest_ms"]}')
            check_eq(slow_lines(m, 'SETLKW', second.pid), [], 'slow SETLKW messages')
        finally:
            finish(first, 'the first locker')
            if second:
                out = finish(second, 'the second locker')
        check_eq(out.strip(), 'locked', 'the second locker')
        check_eq(of_pid(in_flight(m), second.pid), [], 'the in-flight list once it was done')


@case(mount=False)
def in_flight_argument_errors():
    """--in-flight without --stats, or with --format=prometheus: exit 1, one line."""
    ufs.require_daemon()
    daemon = ufs.config().daemon
    for args in (['--in-flight', '/a', '/b'], ['--stats', '/', '--in-flight',
                                               '--format=prometheus']):
        got = subprocess.run([daemon, *args], capture_output=True, text=True, timeout=30)
        check_eq(got.returncode, 1, f'{args}: exit status')
        lines = got.stderr.strip().splitlines()
        check(len(lines) == 1 and '--in-flight' in lines[0], f'{args}: stderr {got.stderr!r}')
