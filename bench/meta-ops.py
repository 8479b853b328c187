#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Metadata operations, single-threaded: requests per call and µs per call.

    bench/meta-ops.py [-n CALLS] [-r ROUNDS] [-c CONFIGS]

CONFIGS is a comma list of native (the tmpfs itself), dev (/dev/fuse,
default settings), uring (io_uring, default settings), alt (io_uring with
UFS_BENCH_ALT_OPTS added: one setting beside another) and base (the build
in UFS_BASE_DAEMON over io_uring, its defaults: the build from before a
change); default native,dev,uring and base when UFS_BASE_DAEMON is set.
"getxattr, missing name" is the floor: one round trip that nothing
caches.
Each operation runs CALLS times per round on fresh names; µs/op is the
median of ROUNDS rounds, requests per call come from the daemon's opcode
counters (minus what reading the counters costs).  Root only (tmpfs,
enable_uring).  Not a test: numbers only.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMON = os.environ.get('UFS_DAEMON', os.path.join(TOP, 'daemon', 'uringfs'))
CONTROL = '.uringfs'
BLOCK = b'x' * 4096


def op_create(d, i):
    fd = os.open(f'{d}/c{i}', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, BLOCK)
    os.close(fd)


def op_stat(d, i):
    os.stat(f'{d}/s{i}')


def op_getxattr(d, i):
    try:
        os.getxattr(f'{d}/s{i}', 'user.absent')
    except OSError:
        pass


def op_open_read(d, i):
    fd = os.open(f'{d}/c{i}', os.O_RDONLY)
    os.read(fd, 4096)
    os.close(fd)


def op_rename(d, i):
    os.rename(f'{d}/c{i}', f'{d}/r{i}')


def op_unlink(d, i):
    os.unlink(f'{d}/r{i}')


# (name, function, set-up run outside the mount: the names a cold stat finds)
OPS = [
    ('create+4K write+close', op_create, None),
    ('cold stat', op_stat, 'stat'),
    ('getxattr, missing name', op_getxattr, None),
    ('open-read-close', op_open_read, None),
    ('rename', op_rename, None),
    ('unlink', op_unlink, None),
]


def opcodes(mnt):
    counts = {}
    with open(f'{mnt}/{CONTROL}') as f:
        for line in f:
            name, _, value = line.strip().partition(' ')
            if name.startswith('op_') and value.isdigit():
                counts[name] = int(value)
    return counts


def requests(before, after, control):
    """Requests between two counter reads, less one read's own."""
    return sum(after[k] - before[k] for k in after) - control


class Config:
    def __init__(self, name, base, daemon=None, opts=None):
        self.name, self.daemon, self.opts = name, daemon, opts
        self.src = f'{base}/{name}-src'
        self.dir = f'{base}/{name}-mnt' if daemon else self.src
        os.makedirs(self.src)
        if daemon:
            os.makedirs(self.dir)
            subprocess.run([daemon, '-o', opts, self.src, self.dir], check=True,
                           stderr=subprocess.DEVNULL)
            # What reading the counters costs in requests, measured once.
            a = opcodes(self.dir)
            b = opcodes(self.dir)
            self.control = sum(b[k] - a[k] for k in b)

    def stop(self):
        if self.daemon:
            subprocess.run(['fusermount3', '-u', self.dir], check=True)


def run(cfg, calls, rounds, results):
    for r in range(rounds):
        work = f'{cfg.dir}/round{r}'
        os.mkdir(work)
        for name, fn, setup in OPS:
            if setup == 'stat':
                src = f'{cfg.src}/round{r}'
                for i in range(calls):
                    open(f'{src}/s{i}', 'w').close()
            before = opcodes(cfg.dir) if cfg.daemon else None
            t0 = time.perf_counter_ns()
            for i in range(calls):
                fn(work, i)
            dt = time.perf_counter_ns() - t0
            entry = results.setdefault((cfg.name, name), {'us': [], 'req': []})
            entry['us'].append(dt / calls / 1000)
            if cfg.daemon:
                # RELEASE and FORGET come after the call returns: let them land.
                time.sleep(0.2)
                entry['req'].append(requests(before, opcodes(cfg.dir), cfg.control) / calls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('-n', type=int, default=2000, help='calls per operation and round')
    ap.add_argument('-r', type=int, default=3, help='rounds')
    base_daemon = os.environ.get('UFS_BASE_DAEMON')
    ap.add_argument('-c', default='native,dev,uring' + (',base' if base_daemon else ''))
    args = ap.parse_args()
    wanted = args.c.split(',')
    with open('/sys/module/fuse/parameters/enable_uring', 'w') as f:
        f.write('Y')
    tmp = tempfile.mkdtemp(prefix='ufs-meta.')
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=2g', 'tmpfs', tmp], check=True)
    results = {}
    print(os.uname().release, file=sys.stderr)
    try:
        for name in wanted:
            if name == 'native':
                cfg = Config(name, tmp)
            elif name in ('dev', 'uring'):
                cfg = Config(name, tmp, DAEMON, 'io_uring=off' if name == 'dev' else 'io_uring=on')
            elif name == 'alt':
                alt = os.environ.get('UFS_BENCH_ALT_OPTS')
                if not alt:
                    sys.exit('alt needs UFS_BENCH_ALT_OPTS')
                cfg = Config(name, tmp, DAEMON, f'io_uring=on,{alt}')
            elif name == 'base':
                if not base_daemon:
                    sys.exit('base needs UFS_BASE_DAEMON')
                cfg = Config(name, tmp, base_daemon, 'io_uring=on')
            else:
                sys.exit(f'unknown config {name}')
            try:
                run(cfg, args.n, args.r, results)
            finally:
                cfg.stop()
    finally:
        subprocess.run(['umount', '-l', tmp])
        os.rmdir(tmp)

    print(f'\n{args.n} calls per operation, median of {args.r} rounds; '
          'requests per call in brackets\n')
    print('| operation | ' + ' | '.join(f'{w} µs/op' for w in wanted) + ' |')
    print('|---|' + '---|' * len(wanted))
    for op, _, _ in OPS:
        cells = []
        for w in wanted:
            e = results[(w, op)]
            cell = f'{statistics.median(e["us"]):.1f}'
            if e['req']:
                cell += f' [{statistics.median(e["req"]):.2f}]'
            cells.append(cell)
        print(f'| {op} | ' + ' | '.join(cells) + ' |')
    if 'base' in wanted and 'uring' in wanted:
        print()
        for op, _, _ in OPS:
            a = statistics.median(results[('uring', op)]['us'])
            b = statistics.median(results[('base', op)]['us'])
            print(f'uring / base, {op}: {a / b:.2f}x')


if __name__ == '__main__':
    main()
