#!/usr/bin/env python3
"""The crates' import graphs, from their `use` lines and paths: run from the
repository's root as `.ci/layers.py` (every crate: runtime/src, macros/src,
fleet/src, rules/src), `.ci/layers.py runtime/src` (one crate) or
`.ci/layers.py -v` (and print every edge).

An edge A -> B for each path in file A that names module B: `crate::b::…`,
`super::…` (the parent module, or a sibling), or a child module of A by its
name. Comments are not read, nor a test module at the top of a file
(`#[cfg(test)] mod tests { … }`, unindented, to its closing `}`); the rest
is read to its end, a nested test module or a `#[cfg(test)]` item included.
Checks:

1. circles: a set of two or more files that import each other, directly or
   through others (a strongly connected component of the graph), is a
   circle. An import of a file's own parent module (`super::` from a child,
   or `crate::` of a module that encloses it, the crate root included) is
   not counted in them: a child is part of its parent. Every circle must be
   in ALLOWED below, as the exact set of its files; a circle that is not
   fails, and so does an entry of ALLOWED that is no longer a circle (it
   went or changed: take it out, or write down what it is now), so the list
   only shrinks.
2. the layers, in runtime/src only: a module of `core` imports nothing from
   `policy`, `ops` or `integrations`; `policy` nothing from `ops` or
   `integrations`; `ops` nothing from `integrations`.

Prints what breaks them and exits 1; `-v` prints every edge.
"""
import os, re, sys

CRATES = ['runtime/src', 'macros/src', 'fleet/src', 'rules/src']

# The circles there are, each the exact set of its files and what it is:
# none today. Remove one when it is broken; adding one is a decision, not a
# way to pass.
ALLOWED = []

TEST_CFG = re.compile(r'#\[cfg\((?:test|all\(test\b.*)\)\]\s*$')


def strip(src):
    """The file without comments and without its top-level test modules
    (their lines left blank)."""
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    lines = src.split('\n')
    out, i = [], 0
    while i < len(lines):
        if TEST_CFG.match(lines[i]):
            j = i + 1
            while j < len(lines) and (lines[j].startswith('#[') or not lines[j].strip()):
                j += 1
            if j < len(lines) and re.match(r'(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{', lines[j]):
                k = j
                while k < len(lines) and lines[k].rstrip() != '}':
                    k += 1
                out.extend([''] * (k + 1 - i))
                i = k + 1
                continue
        out.append(re.sub(r'//.*', '', lines[i]))
        i += 1
    return '\n'.join(out)


def inline_mods(src):
    """Spans of inline `mod x { … }` blocks: their `super::` is the file's module."""
    spans = []
    for mt in re.finditer(r'\bmod\s+\w+\s*\{', src):
        depth, i = 1, mt.end()
        while i < len(src) and depth:
            depth += {'{': 1, '}': -1}.get(src[i], 0)
            i += 1
        spans.append((mt.start(), i))
    return spans


def graph(root):
    """Module -> file, and module -> the modules it imports."""
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(d, f)
                mod = os.path.relpath(p, root)[:-3].replace(os.sep, '::')
                if mod.endswith('::mod'):
                    mod = mod[:-5]
                files[mod] = os.path.normpath(p)
    mods = set(files)

    def resolve(path):
        for i in range(len(path), 0, -1):
            m = '::'.join(path[:i])
            if m in mods:
                return m
        return 'lib'

    edges = {m: set() for m in mods}
    for m, p in files.items():
        with open(p) as f:
            src = strip(f.read())
        for mt in re.finditer(r'\bcrate::((?:\w+::)*)(\{[^;]*?\}|\w+)', src, re.S):
            prefix = [s for s in mt.group(1).split('::') if s]
            tail = mt.group(2)
            items = re.findall(r'\w+(?:::\w+)*', tail) if tail.startswith('{') else [tail]
            for item in items:
                edges[m].add(resolve(prefix + item.split('::')))
        parent = m.rsplit('::', 1)[0] if '::' in m else ('lib' if m != 'lib' else None)
        spans = inline_mods(src)
        for mt in re.finditer(r'\bsuper::((?:super::)*)(\*|(?:\w+::)*\w+|\{[^;]*?\})', src, re.S):
            if any(a <= mt.start() < b for a, b in spans) or parent is None:
                continue
            base = m.split('::')[:-1 - mt.group(1).count('super::')]
            seg = mt.group(2)
            items = re.findall(r'\w+', seg) if seg.startswith('{') else [seg.split('::')[0]]
            for it in items:
                edges[m].add(resolve(base + [it]) if base or it in mods else 'lib')
        for child in re.findall(r'^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;', src, re.M):
            cm = child if m == 'lib' else m + '::' + child
            if cm in mods and re.search(r'(?<![\w:])(?:self::)?' + child + r'::', src):
                edges[m].add(cm)
    return files, {m: {t for t in e if t != m} for m, e in edges.items()}


def encloses(a, m):
    """Whether module `a` is `m`'s parent, grandparent, … or the crate root."""
    return a == 'lib' or m.startswith(a + '::')


def circles(edges):
    """The strongly connected components of two or more modules (Tarjan),
    without the imports of a module's own ancestors."""
    down = {m: sorted(t for t in e if not encloses(t, m)) for m, e in edges.items()}
    index, low, on, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in down[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(down):
        if v not in index:
            visit(v)
    return found, down


rank = {'core': 0, 'policy': 1, 'ops': 2, 'integrations': 3}


def layer(m):
    return rank.get(m.split('::')[0])


verbose = '-v' in sys.argv[1:]
roots = [os.path.normpath(a) for a in sys.argv[1:] if not a.startswith('-')] or CRATES
failed = False
seen = []
for root in roots:
    files, edges = graph(root)
    comps, down = circles(edges)
    layered = root.replace(os.sep, '/').endswith('runtime/src')
    upward = [(a, b) for a in sorted(edges) for b in sorted(edges[a])
              if layered and layer(a) is not None and layer(b) is not None
              and layer(b) > layer(a)]
    if verbose:
        for m in sorted(edges):
            print(root, m, '->', ' '.join(t if t in down[m] else f'({t})' for t in sorted(edges[m])))
    unknown = 0
    for comp in comps:
        paths = {files[m] for m in comp}
        seen.append(paths)
        if any(paths == allowed for allowed, _ in ALLOWED):
            continue
        unknown += 1
        grew = [why for allowed, why in ALLOWED if allowed < paths]
        print(f'circle of {len(comp)} files in {root}, not in ALLOWED'
              + (f' (it was {grew[0]!r}, with fewer files)' if grew else '') + ':')
        for m in comp:
            print('   ', files[m], '->', ', '.join(files[t] for t in down[m] if t in comp))
    for a, b in upward:
        print(f'upward import in {root}: {a} -> {b}')
    print(f'{root}: {len(files)} files, {sum(len(e) for e in edges.values())} imports, '
          f'{len(comps)} circles ({len(comps) - unknown} allowed), '
          f'{len(upward)} imports against the layers')
    failed |= bool(unknown or upward)

# An allowed circle under a crate that was read must still be there, as it is.
read = [os.path.normpath(r) + os.sep for r in roots]
for allowed, why in ALLOWED:
    if any(all(p.startswith(r) for p in allowed) for r in read) and allowed not in seen:
        print(f'ALLOWED lists a circle that is not there ({why}: '
              f'{", ".join(sorted(allowed))}): remove it, or write what it is now')
        failed = True
sys.exit(1 if failed else 0)
