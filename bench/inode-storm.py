#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A storm of stats against the inode store's bound (inode_limit).

    bench/inode-storm.py N [OPTS]

N files (1000 per directory, made once under /tmp/ufs-inode-storm/srcN, a
local file system) are each lstat'ed once through a mount of $UFS_DAEMON
(default: this tree's daemon; io_uring unless $VARIANT says otherwise) with
OPTS (default: day-long entry and attribute timeouts, so only the bound
makes the kernel let go).  Every 100,000 stats it prints the daemon's inode
count, RSS, export records, the node ids it asked the kernel to prune and
its CPU ticks; at the end the pruner thread's CPU ticks.  Root only.  Not a
test: numbers only (docs/performance.md, "A million stats against the
bound").
"""
import os
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'tests', 'lib'))
import ufs  # noqa: E402

LONG = 'entry_timeout=86400,attr_timeout=86400'


def make_tree(src, n):
    if os.path.exists(src + '/done'):
        return
    os.makedirs(src, exist_ok=True)
    for d in range((n + 999) // 1000):
        os.makedirs(f'{src}/d{d}', exist_ok=True)
        for i in range(min(1000, n - d * 1000)):
            os.close(os.open(f'{src}/d{d}/f{i}', os.O_CREAT | os.O_WRONLY, 0o644))
    open(src + '/done', 'w').close()


def rss_kb(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1])
    return 0


def ticks(path):
    f = open(path).read().rsplit(') ', 1)[1].split()
    return int(f[11]), int(f[12])


def main():
    n = int(sys.argv[1])
    opts = sys.argv[2] if len(sys.argv) > 2 else LONG
    ufs.configure(os.environ.get('VARIANT', 'uring'))
    src = f'/tmp/ufs-inode-storm/src{n}'
    make_tree(src, n)
    with ufs.Mount(opts=opts, source=src) as m:
        t0 = time.monotonic()
        print(f'start: rss {rss_kb(m.pid)} kB', flush=True)
        peak = 0
        for d in range((n + 999) // 1000):
            for i in range(min(1000, n - d * 1000)):
                os.lstat(f'{m.mnt}/d{d}/f{i}')
            if d % 100 == 99:
                st, r = m.stats(), rss_kb(m.pid)
                peak = max(peak, r)
                print(f'{time.monotonic() - t0:7.1f} s {(d + 1) * 1000:8d} stats: '
                      f'inodes {st["inodes"]:8d} rss {r} kB export_nodeids '
                      f'{st["export_nodeids"]} pruned {st.get("inode_prune_nodeids")} '
                      f'cpu {ticks(f"/proc/{m.pid}/stat")}', flush=True)
        time.sleep(2)
        for t in os.listdir(f'/proc/{m.pid}/task'):
            if open(f'/proc/{m.pid}/task/{t}/comm').read().strip() == 'uringfs-prune':
                print(f'pruner thread cpu (user, system ticks): '
                      f'{ticks(f"/proc/{m.pid}/task/{t}/stat")}', flush=True)
        st, r = m.stats(), rss_kb(m.pid)
        print(f'end {time.monotonic() - t0:.1f} s: inodes {st["inodes"]} rss {r} kB '
              f'peak {max(peak, r)} kB export_nodeids {st["export_nodeids"]} '
              f'notifications {st.get("inode_prune_notifications")} '
              f'node ids {st.get("inode_prune_nodeids")} forgets {st.get("inode_prune_forgets")}')


if __name__ == '__main__':
    main()
