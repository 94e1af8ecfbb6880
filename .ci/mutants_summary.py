#!/usr/bin/env python3
"""The finished shards of the sweep (`.ci/mutants_sweep.sh`) as rows of
docs/mutants.md's table, each followed by its missed and timed-out
mutants; then the shards together.

    .ci/mutants_summary.py [OUT]      # OUT: ~/mutants-sweep by default
"""
import glob
import math
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/mutants-sweep")


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


total = [0, 0, 0]  # detected, viable, unviable
for k in range(80):
    shard = f"{OUT}/shard-{k}"
    out = f"{shard}/mutants.out"
    if not (os.path.isdir(out) and os.path.exists(f"{shard}/exit")):
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
        f"| {k}/80 | 81df894 (tests of {commit}) | {len(caught)}{by_stop} | {len(timeout)} "
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
