#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Directories deeper than PATH_MAX: N mkdir+stat at depth D.

    bench/deep-tree.py [-d DEPTH] [-n CALLS] [-l NAME_LEN] [--base DAEMON]

A chain of DEPTH directories with NAME_LEN-character names is made in a
scratch directory (default under /var/tmp, a local file system), then CALLS
mkdir+stat of fresh names in the deepest one are timed natively, through
the mount of this tree's daemon (io_uring, defaults) and, with --base,
through the mount of another build (the build from before a change), and
printed side by side.  Reaching the depth through a mount is timed apart
(one LOOKUP per level).  Root only.  Not a test: numbers only.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMON = os.environ.get('UFS_DAEMON', os.path.join(TOP, 'daemon', 'uringfs'))


def chain(top, depth, name, make):
    """A descriptor of top/name/name/... (depth levels), made if make."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        if make:
            os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def remove(top, name):
    """rmtree recurses once per level: lift each level up first."""
    path, lifted = f'{top}/{name}', f'{top}/.lifted'
    while os.path.lexists(path):
        if os.path.isdir(f'{path}/{name}'):
            os.rename(f'{path}/{name}', lifted)
            shutil.rmtree(path)
            os.rename(lifted, path)
        else:
            shutil.rmtree(path)


def ops(fd, calls, tag):
    t = time.monotonic()
    for i in range(calls):
        os.mkdir(f'{tag}{i}', dir_fd=fd)
        os.stat(f'{tag}{i}', dir_fd=fd)
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('-d', '--depth', type=int, default=3000)
    ap.add_argument('-n', '--calls', type=int, default=100)
    ap.add_argument('-l', '--name-len', type=int, default=200)
    ap.add_argument('--base', help='another build of the daemon, to compare with')
    ap.add_argument('--dir', default='/var/tmp')
    a = ap.parse_args()
    name = 'd' * a.name_len
    work = tempfile.mkdtemp(prefix='deep-tree.', dir=a.dir)
    src, mnt = f'{work}/src', f'{work}/mnt'
    os.mkdir(src)
    os.mkdir(mnt)
    rows = []
    print(f'{a.calls} mkdir+stat at depth {a.depth}, {a.name_len}-character names')
    print(f'{"":10} {"reach depth (s)":>16} {"mkdir+stat (s)":>16}', flush=True)
    try:
        fd = chain(src, a.depth, name, True)
        rows.append(('native', 0.0, ops(fd, a.calls, 'n')))
        print(f'{"native":10} {0.0:16.3f} {rows[-1][2]:16.3f}', flush=True)
        os.close(fd)
        for label, daemon in [('uringfs', DAEMON)] + ([('base', a.base)] if a.base else []):
            subprocess.run([daemon, src, mnt], check=True)
            try:
                t = time.monotonic()
                fd = chain(mnt, a.depth, name, False)
                reach = time.monotonic() - t
                rows.append((label, reach, ops(fd, a.calls, label[0])))
                print(f'{label:10} {reach:16.3f} {rows[-1][2]:16.3f}', flush=True)
                os.close(fd)
            finally:
                subprocess.run(['fusermount3', '-u', mnt], check=True)
    finally:
        remove(src, name)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
