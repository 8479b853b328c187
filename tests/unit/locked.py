#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every function in daemon/*.[ch] whose name ends in _locked asserts its lock.

The rule (daemon/lockdep.h): a function named *_locked is called with a
lock held, and says which by starting with UFS_ASSERT_HELD(&lock), which the
debug build checks at run time.  This holds the rule itself: the body's first
statement must be UFS_ASSERT_HELD (several may follow one another, for a
function that needs two locks).  TAP on stdout; the offenders are printed.

  locked.py            check daemon/*.[ch] (UFS_SRCDIR, else this tree)
  locked.py FILE...    check those files instead
The first check feeds the checker a function without the assertion and
passes only if the checker catches it: the check can fail.
"""
import glob
import os
import re
import sys

DEF = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(\w+_locked)\s*\(([^;{]*?)\)\s*\{',
                 re.M | re.S)
ASSERT = re.compile(r'UFS_ASSERT_HELD\s*\(')


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def offenders(text, name='<text>'):
    """(function, line) of each _locked definition not asserting a lock first."""
    text = strip_comments(text)
    found = []
    for m in DEF.finditer(text):
        body = text[m.end():].lstrip()
        if not ASSERT.match(body):
            found.append((m.group(1), text.count('\n', 0, m.start()) + 1))
    return found


def definitions(text):
    return [m.group(1) for m in DEF.finditer(strip_comments(text))]


SELF_TEST_BAD = """
static int count_locked(struct thing *t)
{
	return t->count;
}
"""
SELF_TEST_GOOD = """
static int count_locked(struct thing *t)
{
	UFS_ASSERT_HELD(&t->lock);
	return t->count;
}
"""


def main():
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(os.environ.get('UFS_SRCDIR', top),
                                                          'daemon', '*.[ch]')))
    n = 0
    bad = 0

    def ok(cond, what, detail=()):
        nonlocal n, bad
        n += 1
        bad += not cond
        print(f'{"" if cond else "not "}ok {n} - {what}')
        for line in detail:
            print(f'#   {line}')

    ok(offenders(SELF_TEST_BAD) == [('count_locked', 2)] and not offenders(SELF_TEST_GOOD),
       'self-test: a _locked function without UFS_ASSERT_HELD is caught, one with it passes')
    total = 0
    for path in files:
        text = open(path).read()
        defs = definitions(text)
        if not defs:
            continue
        total += len(defs)
        off = offenders(text, path)
        ok(not off, f'{os.path.basename(path)}: {len(defs)} _locked functions assert their lock first',
           [f'{os.path.basename(path)}:{line}: {fn}() does not start with UFS_ASSERT_HELD'
            for fn, line in off])
    ok(total > 0 or bool(sys.argv[1:]), f'{total} _locked functions found')
    print(f'1..{n}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
