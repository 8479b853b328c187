#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's layers, checked against its objects.

docs/architecture.md lists the files of daemon/ tier by tier, top first,
in the block after "<!-- layers -->". Every call (a symbol one object uses
and another defines, as nm(1) shows them: data such as an ops table counts
too) must go to the same tier or one below, the calls must form no circle,
and every object must be in the table. TAP on stdout, one line per check;
the offending calls are printed.

Usage: layers.py [--list] [BUILDDIR]   (default: $UFS_BUILDDIR, else the tree)
"""
import collections
import glob
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))


def read_tiers(path):
    text = open(path).read()
    m = re.search(r'<!-- layers -->\s*```[a-z]*\n(.*?)```', text, re.S)
    if not m:
        sys.exit(f'Bail out! {path}: no "<!-- layers -->" block')
    tiers = []
    for line in m.group(1).splitlines():
        if not line.strip():
            continue
        name, _, files = line.partition(':')
        tiers.append((name.strip(), files.split()))
    return tiers


def source_name(obj):
    base = os.path.basename(obj)
    base = re.sub(r'^daemon_libufs_a-', '', base)
    return base[:-2] + '.c'


def objects(builddir):
    objs = [o for o in glob.glob(os.path.join(builddir, 'daemon', '*.o'))
            if 'uringfs_asan-' not in os.path.basename(o)]
    return sorted(objs)


def symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBRC':
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == 'U':
            used.add(parts[1])
    return defined, used


def circles(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    builddir = args[0] if args else os.environ.get('UFS_BUILDDIR', top)
    tiers = read_tiers(os.path.join(os.environ.get('UFS_SRCDIR', top), 'docs',
                                    'architecture.md'))
    tier_of = {}
    for i, (_, files) in enumerate(tiers):
        for f in files:
            tier_of[f] = i
    objs = objects(builddir)
    if not objs:
        print(f'1..0 # SKIP no objects under {builddir}/daemon: build first')
        return 0
    defs, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        name = source_name(o)
        uses[name] = u
        for s in d:
            defs[s] = name
    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for f, used in uses.items():
        for s in used:
            g = defs.get(s)
            if g and g != f:
                edges[f][g].append(s)
    if '--list' in sys.argv:
        for f in sorted(edges):
            for g in sorted(edges[f]):
                print(f'{f} -> {g}: {" ".join(sorted(edges[f][g]))}')
        return 0

    n = 0
    failed = 0

    def ok(cond, what, detail=()):
        nonlocal n, failed
        n += 1
        print(f'{"" if cond else "not "}ok {n} - {what}')
        for line in detail:
            print(f'#   {line}')
        failed += not cond

    missing = sorted(f for f in uses if f not in tier_of)
    ok(not missing, 'every object of daemon/ is in the layer table',
       [f'{f}: not in docs/architecture.md\'s layers' for f in missing])
    stale = sorted(f for f in tier_of if f not in uses)
    ok(not stale, 'every file of the layer table is built',
       [f'{f}: in the table, but no object' for f in stale])
    for f in sorted(uses):
        if f not in tier_of:
            continue
        up = []
        for g, syms in sorted(edges.get(f, {}).items()):
            if g in tier_of and tier_of[g] < tier_of[f]:
                up.append(f'{f} ({tiers[tier_of[f]][0]}) -> {g} ({tiers[tier_of[g]][0]}): '
                          f'{" ".join(sorted(syms))}')
        ok(not up, f'{f}: calls only its own tier and those below', up)
    found = circles(edges)
    ok(not found, 'no circles', [' -> '.join(c) for c in found])
    print(f'1..{n}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
