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
    """--stats prints the control file's `name value` lines: the same names.
    (Not the latency_* lines: one comes with each opcode's first request,
    and a RELEASE of the control file may still be on its way.)"""
    ufs.require_daemon()

    def fixed(names):
        return {name for name in names if not name.startswith('latency_')}

    with ufs.Mount() as m:
        got = stats_command(m)
        check_eq((got.returncode, got.stderr), (0, ''), '--stats exit status and stderr')
        names = {line.split(' ', 1)[0] for line in got.stdout.splitlines()}
        check_eq(fixed(names), fixed(m.stats()), 'the names --stats printed')


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


@case(mount=False)
def cache_policy_reported():
    """The cache policy, whether the watcher keeps the caches coherent (and why
    or why not) and the timeouts in effect are in the control file:
    cache=timeout keeps the short ones, a timeout set wins, cache=none
    caches nothing, and the default is coherent where it can be had."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        s = m.stats()
        check_eq(s['cache'], 'auto', 'the default policy')
        check(s['cache_coherence_reason'], 'a reason is given')
        if s['cache_coherence'] == 1:
            check_eq([s['cache_entry_timeout_ms'], s['cache_attr_timeout_ms'],
                      s['cache_negative_timeout_ms']], [86400000] * 3,
                     'coherent: a day for names, attributes and failed lookups')
        else:
            check_eq(s['cache_attr_timeout_ms'], 1000, 'not coherent: short timeouts')
    with ufs.Mount(opts='cache=timeout,attr_timeout=5') as m:
        s = m.stats()
        check_eq([s['cache'], s['cache_coherence'], s['cache_coherence_reason']],
                 ['timeout', 0, 'cache=timeout'], 'cache=timeout: not coherent, and why')
        check_eq([s['cache_entry_timeout_ms'], s['cache_attr_timeout_ms'],
                  s['cache_negative_timeout_ms']], [1000, 5000, 0],
                 'cache=timeout: 1 s, the attr_timeout set, no failed lookups')
        check_eq(s['coherence_events'], 0, 'no watcher, no events')
    with ufs.Mount(opts='cache=none') as m:
        s = m.stats()
        check_eq([s['cache_entry_timeout_ms'], s['cache_attr_timeout_ms'],
                  s['cache_negative_timeout_ms']], [0, 0, 0], 'cache=none: nothing cached')


@case(mount=False)
def cache_coherent_refused_where_unseen():
    """cache=coherent on a SOURCE whose changes fanotify cannot see (here a
    FUSE file system: another uringfs mount) stops the start with one line
    that says why; cache=auto serves it with the short timeouts."""
    ufs.require_daemon()
    with ufs.Mount(opts='cache=timeout') as inner:
        err = ufs.start_fails(['-o', 'cache=coherent', inner.mnt], 'cache=coherent on FUSE')
        check('cache=coherent' in err and 'FUSE' in err, f'the reason: {err!r}')
        with ufs.Mount(source=inner.mnt) as m:
            s = m.stats()
            check_eq(s['cache_coherence'], 0, 'cache=auto on FUSE: not coherent')
            check('FUSE' in s['cache_coherence_reason'], s['cache_coherence_reason'])
