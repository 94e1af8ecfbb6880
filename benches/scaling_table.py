#!/usr/bin/env python3
"""Prints the scaling tables (each call path, one thread against two) from
the last `cargo bench -p failfast-benches --bench scaling` run.

    python3 benches/scaling_table.py [CRITERION_DIR]

CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion, else target/criterion.
Timings are criterion's medians (ns per call); memory and registration times
come from `scaling_setup.tsv`, which the bench writes there at setup.
"""

import sys

from table import criterion_dir, medians

COUNT_WINDOWS = ["10", "100", "10000", "1000000"]
TIME_WINDOWS = ["1s", "1m", "1h"]
BREAKERS = ["1", "1000", "100000"]
TARGET_RATIO = 1.5


def setup(root):
    found = {}
    path = root / "scaling_setup.tsv"
    if path.exists():
        for line in path.read_text().splitlines():
            section, case, value, _unit = line.split("\t")
            found[(section, case)] = float(value)
    return found


def ns(found, group, case):
    value = found.get((group, case))
    return "" if value is None else f"{value:.2f}"


def duration(found, group, case):
    value = found.get((group, case))
    if value is None:
        return ""
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.2f} µs"
    return f"{value:.2f} ns"


def size(value):
    if value is None:
        return ""
    return f"{value:,.0f}"


def main():
    root = criterion_dir()
    found = {
        (group, case): ns for group, cases in medians(root).items() for case, ns in cases.items()
    }
    fixed = setup(root)
    if not any(group.startswith("scaling_") for group, _ in found):
        sys.exit(f"no scaling results under {root}; run `cargo bench -p failfast-benches --bench scaling` first")

    inline = fixed.get(("memory", "a breaker, inline"))
    print(f"Windows (rate rule, 1 thread, `Breaker::call`); a breaker itself is {size(inline)} bytes inline.")
    print()
    print("| window | success ns/call | 1 in 64 failing ns/call | heap bytes (measured) |")
    print("|---|---:|---:|---:|")
    for calls in COUNT_WINDOWS:
        heap = fixed.get(("memory", f"count window of {calls} calls"))
        print(
            f"| {int(calls):,} calls | {ns(found, 'scaling_window_calls', f'{calls} calls/success')} "
            f"| {ns(found, 'scaling_window_calls', f'{calls} calls/1 in 64 failing')} | {size(heap)} |"
        )
    for length in TIME_WINDOWS:
        heap = fixed.get(("memory", f"time window of {length}"))
        print(
            f"| {length} | {ns(found, 'scaling_window_time', f'{length}/success')} "
            f"| {ns(found, 'scaling_window_time', f'{length}/1 in 64 failing')} | {size(heap)} |"
        )
    consecutive = fixed.get(("memory", "consecutive rule, no window"))
    print()
    print(
        f"A breaker under the consecutive rule (no window) takes {size(consecutive)} heap bytes after its "
        "first call (the per-thread totals); the window rows include the same."
    )
    print()
    print("| registered breakers | `register` ns/breaker | `get` hit ns | `get` miss ns | `all` | heap bytes per breaker (measured) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in BREAKERS:
        register = fixed.get(("registry", f"{n} breakers/register"))
        memory = fixed.get(("registry", f"{n} breakers/memory"))
        print(
            f"| {int(n):,} | {'' if register is None else f'{register:.0f}'} "
            f"| {ns(found, 'scaling_registry', f'{n} breakers/get hit')} "
            f"| {ns(found, 'scaling_registry', f'{n} breakers/get miss')} "
            f"| {duration(found, 'scaling_registry', f'{n} breakers/all')} | {size(memory)} |"
        )
    print()
    print("| path | 1 thread ns/call (CPU) | 2 threads ns/call (CPU) | 2 threads ÷ 1 thread | ≤ 1.5× |")
    print("|---|---:|---:|---:|---|")
    cases = sorted(
        {case for group, case in found if group == "scaling_threads_1"},
        key=lambda case: (not case.startswith("floor"), case),
    )
    for case in cases:
        one = found.get(("scaling_threads_1", case))
        two = found.get(("scaling_threads_2", case))
        ratio = "" if one is None or two is None else f"{two / one:.2f}×"
        met = "" if not ratio or case.startswith("floor") else ("met" if two / one <= TARGET_RATIO else "**missed**")
        print(f"| {case} | {ns(found, 'scaling_threads_1', case)} | {ns(found, 'scaling_threads_2', case)} | {ratio} | {met} |")


if __name__ == "__main__":
    main()
