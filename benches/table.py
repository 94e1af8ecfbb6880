#!/usr/bin/env python3
"""Prints the medians of the last
`cargo bench -p failfast-benches --bench breaker` run as the Markdown table
of benches/README.md.

    python3 benches/table.py [CRITERION_DIR]

CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion, else target/criterion.
Columns: the median in ns per call, its difference to the bare call of the
same group (fed the same inputs), and how many times faster it is than each peer in the same group
(peer median / this median).
"""

import json
import os
import sys
from pathlib import Path

GROUPS = [
    "closed_1_thread",
    "closed_2_threads",
    "closed_2_threads_cpu",
    "rate_1_thread",
    "rate_2_threads",
    "rate_2_threads_cpu",
    "open_rejected",
    "async_current_thread",
    "async_current_thread_cpu",
    "timeout_current_thread",
]
PEERS = ["failsafe", "recloser"]
BASE = {
    "async_current_thread": "plain async fn",
    "async_current_thread_cpu": "plain async fn",
    "timeout_current_thread": "plain async fn",
}
# Cases with failures in the window compare with the floor fed the same inputs.
SOME_FAILING = ", 1 in 64 failing"


def medians(root):
    found = {}
    for bench in root.glob("*/*/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        estimates = json.loads((bench.parent / "estimates.json").read_text())
        group, case = meta["group_id"], meta["function_id"]
        found.setdefault(group, {})[case] = estimates["median"]["point_estimate"]
    return found


def order(item):
    case = item[0]
    rank = 0 if case.startswith(("floor", "plain")) else 1 if case in PEERS else 2
    return (rank, case)


def criterion_dir():
    """The directory given as the first argument, else criterion's under
    $CARGO_TARGET_DIR or target."""
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    return Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"


def main():
    root = criterion_dir()
    found = medians(root)
    if not found:
        sys.exit(f"no criterion results under {root}; run `cargo bench -p failfast-benches --bench breaker` first")
    print("| group | case | median ns/call | Δ to base | × vs failsafe | × vs recloser |")
    print("|---|---|---:|---:|---:|---:|")
    for group in GROUPS + sorted(set(found) - set(GROUPS)):
        cases = found.get(group)
        if not cases:
            continue
        for case, ns in sorted(cases.items(), key=order):
            base_case = BASE.get(group, "floor: bare call")
            if case.endswith(SOME_FAILING):
                base_case += SOME_FAILING
            base = cases.get(base_case)
            delta = "" if base is None else f"{ns - base:+.2f}"
            ratios = [f"{cases[p] / ns:.1f}×" if p in cases else "" for p in PEERS]
            print(f"| {group} | {case} | {ns:.2f} | {delta} | {ratios[0]} | {ratios[1]} |")


if __name__ == "__main__":
    main()
