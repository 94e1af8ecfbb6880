#!/usr/bin/env python3
"""The finished shards of the sweep (`.ci/mutants_sweep.sh`) as rows of
docs/mutants.md's table, each followed by its missed and timed-out
mutants; then the shards together, and the two runs after the last shard:
the files changed since the reference, swept again (OUT/again), and the
survivors run again with the tests of the day (OUT/survivors), each in
parts (OUT/again/part-J), with the score of those tests over the whole
runtime once every part has run.

    .ci/mutants_summary.py [OUT]                  # OUT: ~/mutants-sweep by default
    .ci/mutants_summary.py OUT --survivors LIST   # the survivors, by their names in LIST

With `--survivors`, prints the name each survivor of the finished shards
has in LIST (`cargo mutants --list` of the commit they are to run on):
its own, or else the one mutant of LIST with the same file and change
(lines move when code above them changes). A survivor with no such
mutant (its code was removed, or the change is not unique in its file) is
written to stderr. A shard whose output is gone (the first shards' ran
on another machine) gives its survivors from its section of
docs/mutants.md, matched to the reference's list by shard; their number
must be the one in the shard's row.
"""
import functools
import glob
import math
import os
import re
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/mutants-sweep")
SHARDS = 80
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "mutants.md")


def lines(path):
    try:
        with open(path) as f:
            return [l for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def wilson(k, n, z=1.96):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


@functools.cache
def docs():
    """docs/mutants.md, read once."""
    with open(DOCS) as f:
        return f.read()


def row(k):
    """Shard k's row in docs/mutants.md's table of the sweep, if it has one."""
    return re.search(
        rf"^\| {k}/80 \| 81df894.*\| *(\d+) *\| [0-9.]+% \((\d+) of (\d+)\) \|$",
        docs(),
        re.M,
    )


def from_docs(k, reference):
    """Shard k's survivors as docs/mutants.md records them."""
    sweep = docs()[docs().index("### From the sweep (81df894)") :]
    sweep = sweep[: sweep.index("### Run ahead of their shards")]
    recorded = row(k)
    if not recorded:
        sys.exit(f"shard {k}: no output and no row in docs/mutants.md")
    missed = int(recorded.group(3)) - int(recorded.group(2))
    section = re.search(rf"^Shard {k}/80[^\n]*:\n(.*?)(?=^Shard \d+/80|\Z)", sweep, re.M | re.S)
    names = []
    for change, path, line in re.findall(
        r"(?:^- | and\n  )`([^`]+)`\s*\(`([^`]+?):(\d+)[`,]", section.group(1) if section else "", re.M
    ):
        change = re.sub(r"\s*\n\s*", " ", change)
        names += [
            name
            for i, name in enumerate(reference)
            if i % SHARDS == k
            and name.startswith(f"runtime/src/{path}:{line}:")
            and name.endswith(f": {change}")
        ]
    if len(names) != missed:
        sys.exit(f"shard {k}: {len(names)} survivors in docs/mutants.md, {missed} in its row")
    return names


def survivors():
    """The names, in the reference's list, of every finished shard's survivors."""
    reference = lines(f"{OUT}/reference.list")
    names = []
    for k in range(SHARDS):
        out = f"{OUT}/shard-{k}/mutants.out"
        if os.path.isdir(out):
            names += lines(f"{out}/missed.txt") if os.path.exists(f"{OUT}/shard-{k}/exit") else []
        elif row(k):
            names += from_docs(k, reference)
    return names


def renamed(names, reference, today):
    """Each name's name in `today`, or None: its own, or else the one with
    its file and change, when that pair is unique in both lists."""
    known = set(today)

    def by_change(names):
        found = {}
        for name in names:
            path, _, _, change = name.split(":", 3)
            found.setdefault((path, change), []).append(name)
        return found

    before, now = by_change(reference), by_change(today)
    for name in names:
        path, _, _, change = name.split(":", 3)
        same = now.get((path, change), [])
        unique = len(same) == 1 and len(before.get((path, change), [])) == 1
        yield name, name if name in known else (same[0] if unique else None)


if "--survivors" in sys.argv:
    today = lines(sys.argv[sys.argv.index("--survivors") + 1])
    for name, now in renamed(survivors(), lines(f"{OUT}/reference.list"), today):
        if now:
            print(now)
        else:
            print(f"not in the list today: {name}", file=sys.stderr)
    sys.exit(0)


total = [0, 0, 0]  # detected, viable, unviable
for k in range(SHARDS):
    shard = f"{OUT}/shard-{k}"
    out = f"{shard}/mutants.out"
    if not os.path.isdir(out):
        # Gone (or run on another machine): the row docs/mutants.md records.
        recorded = row(k)
        if not recorded:
            continue
        print(recorded.group(0), "(recorded)")
        for m in from_docs(k, lines(f"{OUT}/reference.list")):
            print("    missed:", m)
        total[0] += int(recorded.group(2))
        total[1] += int(recorded.group(3))
        total[2] += int(recorded.group(1))
        continue
    if not os.path.exists(f"{shard}/exit"):
        continue
    caught, timeout, missed, unviable = (
        lines(f"{out}/{n}.txt") for n in ("caught", "timeout", "missed", "unviable")
    )
    # A test binary stopped by `timeout` (.cargo/mutants.toml) fails with 124.
    stopped = sum(
        "exit status: 124" in open(log, errors="replace").read()
        for log in glob.glob(f"{out}/log/*.log")
    )
    commit = open(f"{shard}/COMMIT").read().strip()[:7]
    viable = len(caught) + len(timeout) + len(missed)
    detected = len(caught) + len(timeout)
    share = 100.0 * detected / viable if viable else 0.0
    by_stop = f" ({stopped} by the 60 s stop)" if stopped else ""
    print(
        f"| {k}/{SHARDS} | 81df894 (tests of {commit}) | {len(caught)}{by_stop} | {len(timeout)} "
        f"| {len(missed)} | {len(unviable)} | {share:.1f}% ({detected} of {viable}) |"
    )
    for m in missed:
        print("    missed:", m)
    for m in timeout:
        print("    timed out:", m)
    total[0] += detected
    total[1] += viable
    total[2] += len(unviable)

if total[1]:
    low, high = wilson(total[0], total[1])
    print(
        f"together: {total[0]} of {total[1]} viable detected, "
        f"{100.0 * total[0] / total[1]:.1f}% (95% Wilson {100 * low:.1f}% to {100 * high:.1f}%); "
        f"{total[2]} unviable"
    )


def outcomes(run):
    """The outcomes of a run in parts (OUT/again, OUT/survivors), over the
    parts that finished, and how many parts there are and have finished."""
    parts = int(open(f"{run}/PARTS").read())
    done = [j for j in range(parts) if os.path.exists(f"{run}/part-{j}/exit")]
    found = [[], [], [], []]
    for j in done:
        for i, n in enumerate(("caught", "timeout", "missed", "unviable")):
            found[i] += lines(f"{run}/part-{j}/mutants.out/{n}.txt")
    return found, len(done), parts


def progress(done, parts):
    return "" if done == parts else f" ({done} of its {parts} parts so far)"


again = f"{OUT}/again"
if os.path.exists(f"{again}/PARTS"):
    (caught, timeout, missed, unviable), done, parts = outcomes(again)
    viable = len(caught) + len(timeout) + len(missed)
    commit = open(f"{again}/COMMIT").read().strip()[:7]
    print(
        f"the files changed since the reference, on {commit}{progress(done, parts)}: "
        f"{len(caught) + len(timeout)} of {viable} viable detected ({len(timeout)} timed out), "
        f"{len(unviable)} unviable"
    )
    for m in missed:
        print("    missed:", m)

again = f"{OUT}/survivors"
if os.path.exists(f"{again}/PARTS") and total[1]:
    (caught, timeout, missed, _), done, parts = outcomes(again)
    commit = open(f"{again}/COMMIT").read().strip()[:7]
    names = set(lines(f"{again}/names"))
    # Only the survivors count: the run also takes field deletions its
    # name filter lets through (cargo-mutants #632).
    caught = [m for m in caught + timeout if m in names]
    missed = [m for m in missed if m in names]
    gone = len(survivors()) - len(names)
    print(
        f"the {len(names)} survivors found in {commit}'s list, on its tests{progress(done, parts)}: "
        f"{len(caught)} detected, {len(missed)} missed; {gone} not in the list"
    )
    for m in missed:
        print("    missed:", m)
    if done == parts:
        low, high = wilson(total[0] + len(caught), total[1])
        print(
            f"the whole runtime with {commit}'s tests: {total[0] + len(caught)} of {total[1]} "
            f"viable detected, {100.0 * (total[0] + len(caught)) / total[1]:.1f}% "
            f"(95% Wilson {100 * low:.1f}% to {100 * high:.1f}%)"
        )
