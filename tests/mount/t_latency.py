# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-opcode latency histograms: the control file's latency_* lines, and
`uringfs --stats --format=prometheus`'s request_duration_seconds and
backing_duration_seconds histograms (counters.h, stats_latency.c)."""

import fcntl
import os
import re
import subprocess
import sys
import time

import ufs
from ufs import case, check, check_eq

FAMILIES = ('uringfs_request_duration_seconds', 'uringfs_backing_duration_seconds')
SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def prometheus(m):
    """{family: {op: {'buckets': [(le, value)...], 'sum': x, 'count': n}}},
    after checking each family's HELP and TYPE lines."""
    got = subprocess.run([m.daemon, '--stats', m.mnt, '--format=prometheus'],
                         capture_output=True, text=True, timeout=30)
    check_eq((got.returncode, got.stderr), (0, ''), '--stats --format=prometheus')
    hists = {}
    for line in got.stdout.splitlines():
        match = SAMPLE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        labels = dict(LABEL.findall(labels))
        for family in FAMILIES:
            if not name.startswith(family + '_'):
                continue
            check_eq(labels.get('mountpoint'), m.mnt, f'{line}: mountpoint')
            op = hists.setdefault(family, {}).setdefault(labels['op'], {'buckets': []})
            suffix = name[len(family) + 1:]
            if suffix == 'bucket':
                op['buckets'].append((labels['le'], float(value)))
            else:
                op[suffix] = float(value)
    for family in hists:
        check(f'# HELP {family} ' in got.stdout, f'{family}: no HELP line')
        check(f'# TYPE {family} histogram\n' in got.stdout, f'{family}: no TYPE line')
    return hists


def check_histogram(what, h):
    """Cumulative buckets in rising order of le, ending at +Inf = _count."""
    les = [le for le, _ in h['buckets']]
    check_eq(les[-1], '+Inf', f'{what}: the last bucket')
    bounds = [float(le) for le in les[:-1]]
    check(bounds == sorted(bounds) and len(set(bounds)) == len(bounds),
          f'{what}: bounds {les}')
    check(bounds[0] <= 10e-6 and bounds[-1] >= 1, f'{what}: bounds from µs to seconds {les}')
    values = [v for _, v in h['buckets']]
    check(values == sorted(values), f'{what}: buckets not cumulative {values}')
    check_eq(values[-1], h['count'], f'{what}: +Inf bucket and _count')


def count(hists, family, op):
    return hists.get(family, {}).get(op, {}).get('count', 0)


@case(mount=False)
def histograms_count_requests():
    """After N mkdir(2) calls (N MKDIR requests), both histograms' mkdir
    _count grew by at least N, _sum is positive, the buckets are cumulative
    and end at +Inf = _count; the control file's line has p50 and p99."""
    ufs.require_daemon()
    n = 20
    with ufs.Mount() as m:
        before = prometheus(m)
        for i in range(n):
            os.mkdir(f'{m.mnt}/d{i}')
        after = prometheus(m)
        for family in FAMILIES:
            grew = count(after, family, 'mkdir') - count(before, family, 'mkdir')
            check(grew >= n, f'{family}: mkdir count grew by {grew}, not {n}')
            h = after[family]['mkdir']
            check(h['sum'] > 0, f'{family}: mkdir _sum {h["sum"]}')
            for op, oh in after[family].items():
                check_histogram(f'{family} op={op}', oh)
        line = m.stats().get('latency_request_mkdir', '')
        check(re.search(r'\bp50_us=\d+ p99_us=\d+\b', str(line)),
              f'latency_request_mkdir line: {line!r}')


@case(mount=False)
def stats_prints_percentiles():
    """`uringfs --stats` prints p50 and p99 for each opcode seen."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'x')
        os.stat(f'{m.mnt}/f')
        got = subprocess.run([m.daemon, '--stats', m.mnt], capture_output=True, text=True,
                             timeout=30)
        check_eq(got.returncode, 0, '--stats exit status')
        lines = [line for line in got.stdout.splitlines()
                 if line.startswith('latency_request_')]
        check(lines, f'no latency_request_ lines in {got.stdout!r}')
        for line in lines:
            check(re.search(r' count=[1-9]\d* sum_ns=\d+ p50_us=\d+ p99_us=\d+ buckets=', line),
                  f'line {line!r}')


@case(mount=False)
def slow_backing_call_in_a_high_bucket():
    """A MKDIR whose backing mkdirat() takes 300 ms (a shim) lands above the
    64 ms bucket in both histograms."""
    ufs.require_daemon('the slow mkdirat() is injected into the daemon')
    env = ufs.preload_env('shim/slowmkdir.c')
    with ufs.Mount(env=env) as m:
        os.mkdir(f'{m.mnt}/slowmkdir-1')
        hists = prometheus(m)
        for family in FAMILIES:
            h = hists.get(family, {}).get('mkdir')
            check(h, f'{family}: no mkdir histogram')
            fast = dict(h['buckets'])['0.065536']
            check(h['count'] - fast >= 1, f'{family}: mkdir buckets {h["buckets"]}')
            check(h['sum'] >= 0.25, f'{family}: mkdir _sum {h["sum"]}')


@case(mount=False)
def answered_later_measured_to_the_reply():
    """A F_SETLKW that waits 0.5 s in the daemon for another process's lock: the daemon
    queues it to a wait thread, which answers it once the lock is free.
    The request histogram has it above 64 ms (measured to its reply); the
    backing one only the handler's time, well below the wait."""
    ufs.require_daemon()
    with ufs.Mount(opts='posix_locks=on') as m:
        path = f'{m.mnt}/locked'
        ufs.write_file(path, b'x')
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            waiter = subprocess.Popen(
                [sys.executable, '-c', 'import fcntl, os, sys\n'
                 'fd = os.open(sys.argv[1], os.O_RDWR)\n'
                 'print("waiting", flush=True)\n'
                 'fcntl.lockf(fd, fcntl.LOCK_EX)\n', path],
                stdout=subprocess.PIPE, text=True)
            check_eq(waiter.stdout.readline(), 'waiting\n', 'the waiter started')
            deadline = time.monotonic() + 30
            while m.stats()['op_setlkw'] < 1:
                check(time.monotonic() < deadline, 'no SETLKW reached the daemon in 30 s')
                time.sleep(0.02)
            time.sleep(0.5)     # the SETLKW waits in the daemon meanwhile
            fcntl.lockf(fd, fcntl.LOCK_UN)
            check_eq(waiter.wait(timeout=30), 0, 'the waiter got the lock')
        finally:
            os.close(fd)
        hists = prometheus(m)
        request = hists['uringfs_request_duration_seconds'].get('setlkw')
        backing = hists['uringfs_backing_duration_seconds'].get('setlkw')
        check(request and backing, f'setlkw histograms: {request}, {backing}')
        fast = dict(request['buckets'])['0.065536']
        check(request['count'] - fast >= 1, f'request setlkw buckets {request["buckets"]}')
        check(request['sum'] >= 0.3, f'request setlkw _sum {request["sum"]}')
        check(backing['sum'] < request['sum'] / 2,
              f'backing setlkw _sum {backing["sum"]}, request {request["sum"]}')
