#!/usr/bin/env python3
"""File sizes: no `.rs` file of a crate's sources (runtime/src, macros/src,
fleet/src, rules/src) has more than LIMIT production lines. Run from the
repository's root as `.ci/sizes.py`, or `.ci/sizes.py -v` to print every
file's count, largest first.

A file's production lines are those before the line `#[cfg(test)]` (or
`#[cfg(all(test, …))]`), unindented, that opens its inline test module
(`mod tests { … }`): all of them when it has none. A file that is only
tests, one its parent declares under `#[cfg(test)]` (`mod tests;`), is not
counted.

A file over the limit is split by concern. EXCEPTIONS lists the files
being split now, each with its reason; an exception that is no longer over
the limit fails too (take it out), so the list only shrinks.

Prints each file over the limit with its count, and exits 1 if any is not
an exception.
"""
import os
import re
import sys

CRATES = ['runtime/src', 'macros/src', 'fleet/src', 'rules/src']
LIMIT = 800

# Path -> why it may be over the limit for now. Remove an entry once its
# split lands; adding one is a decision, not a way to pass.
# None today.
EXCEPTIONS = {}

TEST_CFG = re.compile(r'#\[cfg\((?:test|all\(test\b.*)\)\]\s*$')
MOD = re.compile(r'(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*([;{])')


def test_module(lines, i):
    """If line `i` is a test cfg, the `mod` item it applies to (skipping
    further attributes and blank lines): (name, '{' or ';'), else None."""
    if not TEST_CFG.match(lines[i]):
        return None
    j = i + 1
    while j < len(lines) and (lines[j].startswith('#[') or not lines[j].strip()):
        j += 1
    m = MOD.match(lines[j]) if j < len(lines) else None
    return (m.group(1), m.group(2)) if m else None


def production(lines):
    """The lines before the inline test module, or all of them."""
    for i in range(len(lines)):
        found = test_module(lines, i)
        if found and found[1] == '{':
            return i
    return len(lines)


def test_only(path, lines):
    """The files `path` declares as test modules (`#[cfg(test)] mod x;`)."""
    d = os.path.dirname(path)
    here = os.path.basename(path) in ('mod.rs', 'lib.rs', 'main.rs')
    if not here:
        d = os.path.join(d, os.path.basename(path)[:-3])
    out = set()
    for i in range(len(lines)):
        found = test_module(lines, i)
        if found and found[1] == ';':
            for p in (os.path.join(d, found[0] + '.rs'), os.path.join(d, found[0], 'mod.rs')):
                out.add(os.path.normpath(p))
    return out


def main():
    verbose = '-v' in sys.argv[1:]
    counts, skipped = {}, set()
    for root in CRATES:
        for d, _, fs in os.walk(root):
            for f in sorted(fs):
                if not f.endswith('.rs'):
                    continue
                path = os.path.normpath(os.path.join(d, f))
                with open(path, encoding='utf-8') as fh:
                    lines = fh.read().split('\n')
                if lines and lines[-1] == '':
                    lines.pop()
                counts[path] = production(lines)
                skipped |= test_only(path, lines)
    skipped &= set(counts)
    for path in skipped:
        del counts[path]
    failed = False
    over = sorted((n, p) for p, n in counts.items() if n > LIMIT)
    for n, path in reversed(over):
        why = EXCEPTIONS.get(path.replace(os.sep, '/'))
        if why:
            print(f'{path}: {n} production lines, over {LIMIT} (known exception: {why})')
        else:
            print(f'{path}: {n} production lines, over {LIMIT}: split it by concern')
            failed = True
    for path, why in sorted(EXCEPTIONS.items()):
        n = counts.get(os.path.normpath(path))
        if n is None or n <= LIMIT:
            state = 'is gone' if n is None else f'has {n} production lines'
            print(f'EXCEPTIONS lists {path} ({why}), which {state}: take it out')
            failed = True
    if verbose:
        for path, n in sorted(counts.items(), key=lambda pn: (-pn[1], pn[0])):
            print(f'{n:6} {path}')
    largest = max(counts.items(), key=lambda pn: pn[1])
    print(f'{len(counts)} files (and {len(skipped)} test-only), the largest {largest[0]} '
          f'({largest[1]} production lines), {len(over)} over {LIMIT}')
    return 1 if failed else 0


sys.exit(main())
