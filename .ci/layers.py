#!/usr/bin/env python3
"""The runtime's import graph, from its `use` lines and paths: run from the
repository's root as `.ci/layers.py` (or `.ci/layers.py -v` for every edge).

An edge A -> B for each path in file A (outside comments and test
modules) that names module B: `crate::b::…`, `super::…` (the parent module,
or a sibling), or a child module of A by its name. Checks:

1. no circle (simple cycle) of more than two files;
2. the layers: a module of `core` imports nothing from `policy`, `ops` or
   `integrations`; `policy` nothing from `ops` or `integrations`; `ops`
   nothing from `integrations`.

Prints what breaks them and exits 1; `-v` prints every edge.
"""
import os, re, sys
args = [a for a in sys.argv[1:] if not a.startswith('-')]
root = args[0] if args else 'runtime/src'
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3]
            mod = rel.replace(os.sep, '::')
            if mod.endswith('::mod'):
                mod = mod[:-5]
            files[mod] = p
mods = set(files)

def strip(src):
    out = []
    for line in src.split('\n'):
        if re.match(r'\s*#\[cfg\((all\()?test[,)]', line):
            break
        out.append(re.sub(r'//.*', '', line))
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

def resolve(path):
    for i in range(len(path), 0, -1):
        m = '::'.join(path[:i])
        if m in mods:
            return m
    return None

edges = {m: set() for m in mods}
for m, p in files.items():
    src = strip(open(p).read())
    for mt in re.finditer(r'\bcrate::((?:\w+::)*)(\{[^;]*?\}|\w+)', src, re.S):
        prefix = [s for s in mt.group(1).split('::') if s]
        tail = mt.group(2)
        items = re.findall(r'\w+(?:::\w+)*', tail) if tail.startswith('{') else [tail]
        for item in items:
            t = resolve(prefix + item.split('::'))
            if t and t != m:
                edges[m].add(t)
    parent = m.rsplit('::', 1)[0] if '::' in m else None
    spans = inline_mods(src)
    for mt in re.finditer(r'\bsuper::(\*|(?:\w+::)*\w+|\{[^;]*?\})', src, re.S):
        if any(a <= mt.start() < b for a, b in spans) or parent is None:
            continue
        seg = mt.group(1)
        items = re.findall(r'\w+', seg) if seg.startswith('{') else [seg.split('::')[0]]
        for it in items:
            cand = parent + '::' + it
            edges[m].add(cand if cand in mods else parent)
    for child in re.findall(r'^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;', src, re.M):
        cm = child if m == 'lib' else m + '::' + child
        if cm in mods and re.search(r'(?<![\w:])(?:self::)?' + child + r'::', src):
            edges[m].add(cm)
edges = {m: {t for t in e if t != m} for m, e in edges.items()}

# Simple cycles longer than two (depth-first from each node, over nodes
# ordered after it, so each cycle is found once).
order = {m: i for i, m in enumerate(sorted(mods))}
cycles = []
def dfs(start, node, path, seen):
    for nxt in sorted(edges[node]):
        if nxt == start and len(path) > 2:
            cycles.append(list(path))
        elif nxt not in seen and order[nxt] > order[start]:
            seen.add(nxt); path.append(nxt)
            dfs(start, nxt, path, seen)
            path.pop(); seen.discard(nxt)
for s in sorted(mods):
    dfs(s, s, [s], {s})

rank = {'core': 0, 'policy': 1, 'ops': 2, 'integrations': 3}
def layer(m):
    return rank.get(m.split('::')[0])
upward = [(a, b) for a in sorted(edges) for b in sorted(edges[a])
          if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]

if '-v' in sys.argv:
    for m in sorted(edges):
        print(m, '->', ' '.join(sorted(edges[m])))
for c in cycles[:20]:
    print('circle of', len(c), ':', ' -> '.join(c + [c[0]]))
for a, b in upward:
    print('upward import:', a, '->', b)
print(f'{len(mods)} files, {sum(len(e) for e in edges.values())} imports, '
      f'{len(cycles)} circles over two files, {len(upward)} imports against the layers')
sys.exit(1 if cycles or upward else 0)
