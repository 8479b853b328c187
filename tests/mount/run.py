#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run the uringfs mount tests and print TAP.

usage: run.py [--variant NAME] [-k SUBSTRING] [--list] [MODULE...]

MODULE is a test module in this directory (t_ops or t_ops.py); default: all
t_*.py.  The exit status is 0 whatever the cases did (TAP carries that);
it is non-zero only when the harness itself breaks.
"""

import argparse
import contextlib
import glob
import importlib
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)

import ufs  # noqa: E402
import ufs_nfs  # noqa: E402


class Shared:
    """The shared mount of one module for one option string, made on first use.

    If the daemon dies during a case, the death is recorded and the next
    case gets a fresh mount; the module's closing unmount point then fails.
    """

    def __init__(self, module, opts):
        self.module, self.opts = module, opts
        self.m = None
        self.error = None
        self.deaths = []

    @property
    def label(self):
        return f'unmount [{self.opts or "default options"}]'

    def get(self):
        if self.error:
            raise ufs.HarnessError(f'shared mount failed earlier: {self.error}')
        if self.m is None:
            try:
                self.m = ufs.Mount(opts=self.opts).__enter__()
            except Exception as e:
                self.error = e
                raise
        return self.m

    def after_case(self, case_name):
        """A diagnostic if the daemon died or the mount vanished during the case."""
        if self.m is None or self.m.alive():
            return None
        rc = self.m.proc.poll() if self.m.proc else None
        if self.m.killed:
            rc = 'killed after the time limit'
        text = f'the shared mount broke during this case (daemon status {rc})'
        self.deaths.append(f'{case_name}: daemon status {rc}')
        self.m.abort()
        self.m = None
        return text

    def teardown(self):
        if self.m is not None:
            m, self.m = self.m, None
            m.stop()
        if self.deaths:
            raise AssertionError('the daemon died during: ' + ', '.join(self.deaths))
        if self.error:
            raise ufs.Skip('never mounted')


class Tap:
    def __init__(self, total):
        self.n = 0
        self.counts = {'passed': 0, 'failed': 0, 'skipped': 0}
        self.out(f'1..{total}')

    @staticmethod
    def out(line):
        sys.stdout.write(line + '\n')
        sys.stdout.flush()

    def result(self, name, error, diag=None, elapsed=None):
        self.n += 1
        if isinstance(error, ufs.Skip):
            self.counts['skipped'] += 1
            self.out(f'ok {self.n} - {name} # SKIP {_one_line(error)}')
            return
        self.counts['failed' if error or diag else 'passed'] += 1
        self.out(f'{"not ok" if error or diag else "ok"} {self.n} - {name}')
        text = ''
        if error:
            text = ''.join(traceback.format_exception(error)).rstrip('\n')
        if diag:
            text += '\n' + diag
        for line in text.split('\n'):
            if line:
                self.out(f'# {line}')
        if elapsed is not None and elapsed > 5:
            self.out(f'# took {elapsed:.1f} s')

    def summary(self, seconds):
        c = self.counts
        self.out(f'# {c["passed"]} passed, {c["failed"]} failed, {c["skipped"]} skipped '
                 f'in {seconds:.1f} s')
        # The same as a plain line for runners that read closing lines.
        print(f'mount-tests: {c["passed"]} passed, {c["failed"]} failed, '
              f'{c["skipped"]} skipped')


def _one_line(exc):
    return ' '.join(str(exc).split()) or type(exc).__name__


def load_modules(names):
    if not names:
        names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, 't_*.py')))
    modules = []
    for name in names:
        if os.sep in name:  # a test module elsewhere, given by path
            sys.path.insert(0, os.path.dirname(os.path.abspath(name)))
        modules.append(importlib.import_module(os.path.basename(name).removesuffix('.py')))
    return modules


def plan(modules, pattern, skip=()):
    """[(module name, [cases], [shared opts keys in first-use order])]"""
    result = []
    for mod in modules:
        cases = [c for c in ufs.CASES if c.module == mod.__name__
                 and (not pattern or pattern in f'{c.module}: {c.name}')
                 and not any(s in f'{c.module}: {c.name}' for s in skip)]
        keys = list(dict.fromkeys(c.opts for c in cases if c.mount))
        if cases:
            result.append((mod.__name__, cases, keys))
    return result


def run_case(c, shared, tap):
    first_mount = len(ufs.MOUNT_HISTORY)
    used = []
    error, start = None, time.monotonic()
    try:
        ufs.check_requirements(c)
        with ufs.deadline(c.timeout):
            if c.mount:
                used.append(shared.get())
                c.fn(used[0])
            else:
                c.fn()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        error = e
    diag = shared.after_case(c.name) if c.mount else None
    if diag or (error and not isinstance(error, ufs.Skip)):
        mounts = dict.fromkeys(ufs.MOUNT_HISTORY[first_mount:] + used)
        tails = [t for t in (m.log_tail() for m in mounts) if t and t not in str(error)]
        diag = '\n'.join(filter(None, [diag] + tails)) or None
    tap.result(f'{c.module}: {c.name}', error, diag, time.monotonic() - start)


def run_module(module, cases, keys, tap):
    shared = {k: Shared(module, k) for k in keys}
    for c in cases:
        run_case(c, shared.get(c.opts), tap)
    for s in shared.values():
        error = None
        try:
            with ufs.deadline(30):
                s.teardown()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            error = e
        tap.result(f'{module}: {s.label}', error)


def preflight(cfg):
    """A reason to skip the whole run, or None."""
    if os.geteuid() != 0:
        return 'the mount tests must run as root'
    if cfg.bind:
        return None
    if not os.path.exists('/dev/fuse'):
        return '/dev/fuse is missing'
    if 'io_uring=on' in cfg.opts.split(','):
        try:
            with open('/sys/module/fuse/parameters/enable_uring') as f:
                if f.read().strip() != 'Y':
                    return ('FUSE-over-io_uring is off: '
                            'echo Y > /sys/module/fuse/parameters/enable_uring')
        except FileNotFoundError:
            return 'this kernel has no FUSE-over-io_uring'
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--variant', help=f'one of {", ".join(sorted(ufs.VARIANTS))}')
    ap.add_argument('-k', dest='pattern', help='run only cases whose name contains this')
    ap.add_argument('--skip', action='append', default=[],
                    help='leave out cases whose name contains this (repeatable)')
    ap.add_argument('--list', action='store_true', help='list the cases and exit')
    ap.add_argument('modules', nargs='*')
    args = ap.parse_args()

    cfg = ufs.configure(args.variant)
    todo = plan(load_modules(args.modules), args.pattern, args.skip)
    if args.list:
        for module, cases, _ in todo:
            for c in cases:
                print(f'{module}: {c.name}')
        return 0
    reason = preflight(cfg)
    if reason:
        print(f'1..0 # SKIP {reason}')
        return 0
    if not cfg.bind and not os.access(cfg.daemon, os.X_OK):
        print(f'Bail out! daemon {cfg.daemon} is not an executable (set UFS_DAEMON)')
        return 1

    os.umask(0o022)
    ufs.install_safety_net()
    with contextlib.ExitStack() as stack:
        if cfg.backing == 'nfs':
            reason = ufs_nfs.unavailable()
            if reason:
                print(f'1..0 # SKIP {cfg.variant}: {reason}')
                return 0
            nfs = tempfile.mkdtemp(prefix='ufs-nfs-')
            stack.callback(os.rmdir, nfs)
            stack.enter_context(ufs_nfs.loopback(nfs))
            ufs.set_run_root(nfs)
        run_all(todo)
    return 0


def run_all(todo):
    cfg = ufs.config()
    tap = Tap(sum(len(cases) + len(keys) for _, cases, keys in todo))
    tap.out(f'# variant {cfg.variant}: daemon {cfg.daemon}, options {cfg.opts or "none"}, '
            f'run directory {ufs.run_dir()}')
    start = time.monotonic()
    for module, cases, keys in todo:
        run_module(module, cases, keys, tap)
    tap.summary(time.monotonic() - start)


if __name__ == '__main__':
    sys.exit(main())
