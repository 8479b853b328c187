#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's layers, checked against its objects and its headers.

docs/architecture.md lists the files of daemon/ tier by tier, top first,
in the block after "<!-- layers -->". Every call (a symbol one object uses
and another defines, as nm(1) shows them: data such as an ops table counts
too) must go to the same tier or one below, the calls must form no circle,
and every object must be in the table.

Headers are held to the same rules.  The convention is one header per
module: X.h declares only what X.c defines (a header with no X.c declares
types and inline helpers only).  An #include "Y.h" in X.c or X.h is then a
use of module Y, and must go to the same tier or one below; a header with
no module of its own is transparent (its includes count for whoever
includes it).  The includes must form no circle, alone or together with
the calls.  TAP on stdout, one line per check; the offenders are printed.

Usage: layers.py [--list] [--list-includes] [BUILDDIR]
       (default: $UFS_BUILDDIR, else the tree)
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
            if not os.path.basename(o).startswith(('uringfs_asan-', 'libufs_debug_a-'))]
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


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def split_bodies(text):
    """(the header's top level, its brace bodies): declarations live in
    the first, an inline helper's calls and a struct's members in the second."""
    top, body, depth = [], [], 0
    for ch in text:
        if ch == '{':
            depth += 1
        if depth:
            body.append(ch)
        else:
            top.append(ch)
        if ch == '}':
            depth -= 1
    return ''.join(top), ''.join(body)


def includes(srcdir):
    """{file: [quoted headers it includes]} for daemon/*.[ch]."""
    out = {}
    for p in sorted(glob.glob(os.path.join(srcdir, 'daemon', '*.[ch]'))):
        text = strip_comments(open(p).read())
        out[os.path.basename(p)] = re.findall(r'^\s*#\s*include\s+"([^"/]+)"', text, re.M)
    return out


def header_checks(srcdir, defs):
    """(misplaced declarations, include edges {module: {module: [why]}})."""
    inc = includes(srcdir)
    sources = {f for f in inc if f.endswith('.c')}
    declared, used_inline = {}, {}
    for h in (f for f in inc if f.endswith('.h')):
        top, body = split_bodies(strip_comments(open(os.path.join(srcdir, 'daemon', h)).read()))
        declared[h] = {defs[w] for w in re.findall(r'\b\w+\b', top) if w in defs}
        used_inline[h] = {defs[w] for w in re.findall(r'\b\w+\b', body) if w in defs}
    misplaced = []
    for h, owners in sorted(declared.items()):
        own = h[:-2] + '.c'
        wrong = sorted(o for o in owners if o != own)
        if wrong:
            misplaced.append(f'{h} declares what {", ".join(wrong)} define'
                             + ('' if own in sources else f' ({h} has no {own})'))

    def module(f):
        """The module a file belongs to, or None for a header of types only."""
        c = f[:-2] + '.c'
        return c if c in sources else None

    def uses(f, seen):
        """Modules f uses through its includes, looking through type headers."""
        found = collections.defaultdict(list)
        for h in inc.get(f, []):
            if h not in inc or h in seen:
                continue
            m = module(h)
            if m:
                found[m].append(h)
            else:
                for g, why in uses(h, seen | {h}).items():
                    found[g].extend(f'{h}: {w}' for w in why)
                for g in used_inline.get(h, ()):
                    found[g].append(f'{h} (inline)')
        return found

    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in inc:
        m = module(f)
        if not m:
            continue
        for g, why in uses(f, {f}).items():
            if g != m:
                edges[m][g].extend(f'{f} includes {w}' for w in why)
        if f.endswith('.h'):
            for g in used_inline.get(f, ()):
                if g != m:
                    edges[m][g].append(f'{f} (inline)')
    return misplaced, edges


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
    srcdir = os.environ.get('UFS_SRCDIR', top)
    misplaced, inc_edges = header_checks(srcdir, defs)
    if '--list-includes' in sys.argv:
        for f in sorted(inc_edges):
            for g in sorted(inc_edges[f]):
                print(f'{f} -> {g}: {"; ".join(sorted(set(inc_edges[f][g])))}')
        return 0
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
    def downward(edge_map, verb, sep):
        """One check per file: every edge of edge_map goes to its tier or below."""
        for f in sorted(uses):
            if f not in tier_of:
                continue
            up = [f'{f} ({tiers[tier_of[f]][0]}) -> {g} ({tiers[tier_of[g]][0]}): '
                  f'{sep.join(sorted(set(why)))}'
                  for g, why in sorted(edge_map.get(f, {}).items())
                  if g in tier_of and tier_of[g] < tier_of[f]]
            ok(not up, f'{f}: {verb} only its own tier and those below', up)

    downward(edges, 'calls', ' ')
    found = circles(edges)
    ok(not found, 'no circles', [' -> '.join(c) for c in found])

    ok(not misplaced, 'each header declares only its own module\'s symbols', misplaced)
    downward(inc_edges, 'includes', '; ')
    found = circles(inc_edges)
    ok(not found, 'no circles by includes', [' -> '.join(c) for c in found])
    both = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in (edges, inc_edges):
        for f, gs in e.items():
            for g, why in gs.items():
                both[f][g].extend(why)
    found = circles(both)
    ok(not found, 'no circles by calls and includes together', [' -> '.join(c) for c in found])
    print(f'1..{n}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
