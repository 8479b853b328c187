# SPDX-License-Identifier: GPL-2.0-or-later
"""Scale: looking up many files must never run the daemon out of descriptors.

A tree of empty files on a tmpfs of its own is mounted with
entry_timeout=3600,attr_timeout=3600, so the kernel keeps every inode it
looked up (and the daemon every inode the kernel holds); then every file is
stat()ed through the mount.  No lookup may fail, and none with EMFILE: the
daemon may not need a descriptor per inode the kernel caches.  The hard
RLIMIT_NOFILE of this machine is far below the number of files.

Two processes make the tree and two look it up (one per CPU here).
Reported as TAP diagnostics: time, the daemon's RSS, descriptor count and
`inodes` counter, and memory per inode.  The stat loop gives up after
10,000 errors (the count already says what is wrong).

UFS_LIMITS_FILES overrides the size of the big case (default 1,000,000).
"""

import collections
import contextlib
import os
import resource
import subprocess
import time

import ufs
from ufs import case, check, check_eq

BIG = int(os.environ.get('UFS_LIMITS_FILES') or 1_000_000)
PER_DIR = 1000


WORKERS = 2          # processes making and looking up the tree (one per CPU here)


def files_in(d, files):
    return max(0, min(PER_DIR, files - d * PER_DIR))


def make_part(chan, root, files, dirs):
    """Child: the directories dirs (a range) and their files."""
    for d in dirs:
        path = f'{root}/d{d:04d}'
        os.mkdir(path)
        for f in range(files_in(d, files)):
            os.mknod(f'{path}/f{f:03d}')
    return len(dirs)


def in_parallel(fn, *args, dirs, timeout=550):
    """fn(chan, *args, share) in WORKERS children, each taking every
    WORKERS-th directory of range(dirs); their results in a list."""
    children = [ufs.Child(fn, *args, range(i, dirs, WORKERS)) for i in range(WORKERS)]
    try:
        return [c.join(timeout=timeout) for c in children]
    finally:
        for c in children:
            c.kill()


def make_tree(root, files):
    """files empty files, PER_DIR per directory (d0000/f000 ...)."""
    start = time.monotonic()
    dirs = (files + PER_DIR - 1) // PER_DIR
    in_parallel(make_part, root, files, dirs=dirs)
    return dirs, time.monotonic() - start


def kib(text):
    """'12345 kB' -> 12345."""
    return int(text.split()[0]) if text else 0


def daemon_numbers(m):
    if m.proc is None:
        return {}
    stats = m.stats() or {}
    return {'rss_kib': kib(ufs.proc_status(m.pid, 'VmRSS')), 'fds': ufs.fd_count(m.pid),
            'inodes': stats.get('inodes'), 'nofile': nofile_limit(m.pid)}


def nofile_limit(pid):
    with open(f'/proc/{pid}/limits') as f:
        for line in f:
            if line.startswith('Max open files'):
                return line.split()[3:5]
    return None


MAX_ERRORS = 10_000


def stat_part(chan, mnt, files, dirs):
    """Child: stat the files of dirs (a range); (errors by errno name, first
    failures, files tried).  Gives up after its share of MAX_ERRORS."""
    errors = collections.Counter()
    first = []
    tried = 0
    for d in dirs:
        if sum(errors.values()) >= MAX_ERRORS // WORKERS:
            break
        path = f'{mnt}/d{d:04d}'
        for f in range(files_in(d, files)):
            name = f'{path}/f{f:03d}'
            tried += 1
            try:
                os.stat(name)
            except OSError as e:
                errors[ufs.errname(e.errno)] += 1
                if len(first) < 3:
                    first.append(f'{os.path.relpath(name, mnt)}: {ufs.errname(e.errno)}')
    return dict(errors), first, tried


def stat_all(mnt, dirs, files):
    """stat every file; (errors by errno name, first few failures, seconds,
    files tried).  Gives up after MAX_ERRORS failures: by then the count
    says enough, and a broken run should not take as long as a good one."""
    start = time.monotonic()
    errors, first, tried = collections.Counter(), [], 0
    for part_errors, part_first, part_tried in in_parallel(stat_part, mnt, files, dirs=dirs):
        errors.update(part_errors)
        first += part_first
        tried += part_tried
    return errors, first[:3], time.monotonic() - start, tried


def many_files(files, label):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with ufs_tmpfs(files) as src:
        dirs, made_in = make_tree(src, files)
        with ufs.Mount(source=src, opts='entry_timeout=3600,attr_timeout=3600') as m:
            before = daemon_numbers(m)
            errors, first, took, tried = stat_all(m.mnt, dirs, files)
            after = daemon_numbers(m)
            lines = [f'{label}: {files} files in {dirs} directories made in {made_in:.1f} s; '
                     f'stat of {tried} files through the mount by {WORKERS} processes took '
                     f'{took:.1f} s ({took / tried * 1e6:.1f} us of wall time per file)'
                     + (f'; gave up after {MAX_ERRORS} errors' if tried < files else ''),
                     f'errors by errno: {dict(errors) or "none"}'
                     + (f', first: {first}' if first else '')]
            if after:
                added = (after['inodes'] or 0) - (before['inodes'] or 0)
                per = (after['rss_kib'] - before['rss_kib']) * 1024 / added if added > 0 else 0
                lines.append(f'daemon: RSS {before["rss_kib"]} -> {after["rss_kib"]} KiB, '
                             f'descriptors {before["fds"]} -> {after["fds"]}, inodes '
                             f'{before["inodes"]} -> {after["inodes"]}, about {per:.0f} bytes '
                             f'of RSS per inode; RLIMIT_NOFILE {after["nofile"]} '
                             f'(the harness\'s hard limit: {hard})')
                if added < tried - sum(errors.values()):
                    # The kernel may still evict dentries under memory
                    # pressure, or when another test drops the caches.
                    lines.append(f'note: the kernel let go of {tried - added} of the inodes '
                                 'it looked up (memory pressure or drop_caches elsewhere): '
                                 'the bytes per inode are not meaningful')
            ufs.diag('\n'.join(lines))
            check_eq(errors.get('EMFILE', 0), 0,
                     f'lookups that failed with EMFILE (the daemon ran out of descriptors; '
                     f'it holds {after.get("fds")} with {after.get("inodes")} inodes)')
            check(not errors, f'lookups failed: {dict(errors)}; first: {first}')
            check(m.alive(), 'the daemon died')


def ufs_tmpfs(files):
    """A tmpfs with room for `files` inodes, on a scratch directory."""
    return ufs.tmpfs('many', f'size=64m,nr_inodes={files + files // 100 + 1000}')


@case(root=True, mount=False, timeout=120)
def lookup_30k_files():
    """30,000 files: more than the hard descriptor limit (20,000 here)."""
    many_files(30_000, 'lookup_30k_files')


@case(root=True, mount=False, timeout=600)
def lookup_1m_files():
    """1,000,000 files (UFS_LIMITS_FILES): never EMFILE, never an error."""
    many_files(BIG, 'lookup_1m_files')
