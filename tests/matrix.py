#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Print the module x variant matrix of a `make check` run as Markdown.

    tests/matrix.py [BUILDDIR]

Reads the TAP logs the mount variants and the guests left in BUILDDIR
(default: the current directory) and counts each module's points:
"16 P", "5 P, 2 S", "1 F" (passed, skipped, failed).  A variant whose log
is missing is shown as "not run".  docs/testing.md's matrix comes from it.
"""
import collections
import os
import re
import sys

LOGS = [
    ('dev (6.18)', 'tests/mount/dev.log'),
    ('uring (6.18)', 'tests/mount/uring.log'),
    ('uring-small (6.18)', 'tests/mount/uring-small.log'),
    ('uring-copy (6.18)', 'tests/mount/uring-copy.log'),
    ('fallback (6.18)', 'tests/mount/fallback.log'),
    ('asan (6.18)', 'tests/mount/asan.log'),
    ('guest (7.3)', 'tests/vm/guest-73.log'),
    ('cfr guest (7.3 + copy op)', 'tests/kernel/cfr-guest.log'),
    ('NFS guest (7.3)', 'tests/vm/guest-nfs.log'),
]
POINT = re.compile(r'^(not ok|ok) \d+ - ([\w-]+): (.*)$')


def tally(path):
    """{module: Counter(P=, S=, F=)} of one TAP log."""
    counts = collections.defaultdict(collections.Counter)
    with open(path, errors='replace') as f:
        for line in f:
            m = POINT.match(line.rstrip('\n'))
            if not m:
                continue
            status, module, rest = m.groups()
            if status == 'not ok':
                counts[module]['F'] += 1
            elif '# SKIP' in rest:
                counts[module]['S'] += 1
            else:
                counts[module]['P'] += 1
    return counts


def cell(c):
    if c is None:
        return 'not run'
    if not c:
        return '—'
    return ', '.join(f'{c[k]} {k}' for k in 'PFS' if c[k])


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else '.'
    columns = []
    for name, rel in LOGS:
        path = os.path.join(top, rel)
        columns.append((name, tally(path) if os.path.exists(path) else None))
    modules = sorted({m for _, t in columns if t for m in t})
    print('| Module | ' + ' | '.join(name for name, _ in columns) + ' |')
    print('|---' * (len(columns) + 1) + '|')
    for module in modules:
        cells = [cell(None if t is None else t.get(module, collections.Counter()))
                 for _, t in columns]
        print(f'| {module} | ' + ' | '.join(cells) + ' |')
    total = collections.Counter()
    for _, t in columns:
        for c in (t or {}).values():
            total.update(c)
    print(f'\n{total["P"]} passed, {total["F"]} failed, {total["S"]} skipped')
    return 1 if total['F'] else 0


if __name__ == '__main__':
    sys.exit(main())
