# SPDX-License-Identifier: GPL-2.0-or-later
"""`uringfs --stats MOUNTPOINT`, as text and as Prometheus's text format,
against a running mount; and its argument errors."""

import re
import subprocess

import ufs
from ufs import case, check, check_eq


def stats_command(m, *extra):
    return subprocess.run([m.daemon, '--stats', m.mnt, *extra], capture_output=True,
                          text=True, timeout=30)


def prometheus_parser():
    try:
        from prometheus_client import parser
    except ImportError as e:
        raise ufs.Skip(f'python3-prometheus-client is not installed ({e}); '
                       'scripts/install-deps installs it')
    return parser


@case(mount=False)
def stats_prints_the_control_file():
    """--stats prints the control file's `name value` lines: the same names."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        got = stats_command(m)
        check_eq((got.returncode, got.stderr), (0, ''), '--stats exit status and stderr')
        names = {line.split(' ', 1)[0] for line in got.stdout.splitlines()}
        check_eq(names, set(m.stats()), 'the names --stats printed')


@case(mount=False)
def stats_in_prometheus_format():
    """--format=prometheus parses with the reference parser; every sample has
    the mount point; the words are labels of uringfs_info; counters and gauges
    carry the control file's values."""
    ufs.require_daemon()
    parser = prometheus_parser()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'x')
        got = stats_command(m, '--format=prometheus')
        check_eq((got.returncode, got.stderr), (0, ''), 'exit status and stderr')
        plain = m.stats()
        families = {f.name: f for f in parser.text_string_to_metric_families(got.stdout)}
        samples = [s for f in families.values() for s in f.samples]
        check(samples, 'no samples')
        for s in samples:
            check_eq(s.labels.get('mountpoint'), m.mnt, f'{s.name}: the mountpoint label')
        info = families['uringfs_info'].samples[0].labels
        check_eq(info.get('transport'), plain['transport'], 'uringfs_info transport')
        check_eq(families['uringfs_workers'].type, 'gauge', 'workers type')
        check_eq(families['uringfs_workers'].samples[0].value, plain['workers'], 'workers')
        # The parser names a counter family without _total.
        check_eq(families['uringfs_errors'].type, 'counter', 'errors type')
        ops = {s.labels['op']: s.value for s in families['uringfs_requests'].samples}
        check(ops.get('create', 0) >= 1 or ops.get('mknod', 0) >= 1,
              f'requests by op: {ops}')
        workers = {s.labels['worker'] for s in families['uringfs_worker_errors'].samples}
        check_eq(workers, {str(i) for i in range(plain['workers'])}, 'worker labels')
        names = set(re.findall(r'^(uringfs_\w+?)(?:_total)?\{', got.stdout, re.M))
        check(not any(re.search(r'worker\d', n) for n in names), f'worker numbers in {names}')


@case(mount=False)
def format_errors():
    """A wrong --format, or --format without --stats: exit 1, one line naming it."""
    ufs.require_daemon()
    daemon = ufs.config().daemon
    for args, want in ((['--stats', '/', '--format=json'], '--format=json'),
                       (['--format=prometheus', '/a', '/b'], '--format')):
        got = subprocess.run([daemon, *args], capture_output=True, text=True, timeout=30)
        check_eq(got.returncode, 1, f'{args}: exit status')
        lines = got.stderr.strip().splitlines()
        check(len(lines) == 1 and want in lines[0], f'{args}: stderr {got.stderr!r}')
