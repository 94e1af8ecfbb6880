#!/usr/bin/env python3
"""The runtime's public items, as a user can name them: read from rustdoc's
JSON output (nightly), so what counts is what is reachable from the crate's
root by public paths and not `#[doc(hidden)]`: modules, types, traits,
functions and the inherent methods of public types (not trait impls, fields
or variants). An item reachable by two paths counts once.

    cargo +nightly rustdoc -p failfast-runtime --all-features \\
        -- -Z unstable-options --output-format json
    python3 .ci/public_items.py target/doc/failfast_runtime.json      # the count by kind
    python3 .ci/public_items.py target/doc/failfast_runtime.json -v   # and every item
"""
import collections
import json
import sys

args = [a for a in sys.argv[1:] if not a.startswith('-')]
doc = json.load(open(args[0] if args else 'target/doc/failfast_runtime.json'))
index = doc['index']
root = str(doc['root'])
seen, items = set(), []


def hidden(item):
    return any('doc(hidden)' in str(a) for a in item.get('attrs', []))


def methods(item, path):
    for kind in ('struct', 'enum', 'union'):
        for impl_id in item['inner'].get(kind, {}).get('impls', []):
            impl = index[str(impl_id)]['inner']['impl']
            if impl.get('trait') is not None:
                continue
            for method_id in impl['items']:
                method = index[str(method_id)]
                if method.get('visibility') == 'public' and not hidden(method):
                    items.append((next(iter(method['inner'])), f"{path}::{method['name']}"))


def walk(item_id, prefix):
    if item_id in seen or item_id not in index:
        return
    seen.add(item_id)
    item = index[item_id]
    if hidden(item):
        return
    kind = next(iter(item['inner']))
    if kind == 'module':
        path = '' if item_id == root else prefix + item['name']
        if path:
            items.append(('module', path))
        for child in item['inner']['module']['items']:
            walk(str(child), path + '::' if path else '')
    elif kind == 'use':
        use = item['inner']['use']
        target = str(use.get('id'))
        if target not in index:
            return
        if use.get('is_glob') and 'module' in index[target]['inner']:
            for child in index[target]['inner']['module']['items']:
                walk(str(child), prefix)
        else:
            walk(target, prefix)
    elif item.get('visibility') == 'public':
        path = prefix + (item.get('name') or '?')
        items.append((kind, path))
        methods(item, path)


walk(root, '')
by_kind = collections.Counter(kind for kind, _ in items)
print(len(items), 'public items:', ', '.join(f'{n} {k}' for k, n in by_kind.most_common()))
if '-v' in sys.argv:
    for kind, path in sorted(items, key=lambda i: i[1]):
        print(f'{path} ({kind})')
