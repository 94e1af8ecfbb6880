#!/usr/bin/env python3
"""Instructions per call of each one-thread case of the `targets` bench,
counted by valgrind (cachegrind), for one or more built binaries side by side.

Timings on a shared VM move by a nanosecond between two builds of one source
(code placement); the instructions a call executes do not. When two builds
differ in time but not in instructions, the code did not change its work:

    cargo bench -p failfast-benches --bench targets --no-run   # prints the binary's path
    python3 benches/instructions.py OLD_BINARY NEW_BINARY
    python3 benches/instructions.py OLD NEW --only "1 thread/rate"

Each case runs alone (TARGETS_ONLY), one round, at N and at 2N calls; the
difference of the two totals, over the 1.1 N calls it adds (the round and
its tenth-size warm-up), is the case's instructions per call, with the
harness's own loop (the bare call is that floor). The two-thread cases run
for a span of time, not a number of calls, and are left out.
"""

import argparse
import os
import re
import subprocess
import sys


def total_instructions(binary, case, calls):
    env = dict(os.environ, TARGETS_ONLY=case, TARGETS_ROUNDS="1", TARGETS_CALLS=str(calls))
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         binary, "--bench"],
        env=env, capture_output=True, text=True,
    )
    if run.returncode != 0:
        sys.exit(f"{binary} with TARGETS_ONLY={case!r} failed:\n{run.stderr[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if not found:
        sys.exit(f"no instruction count from valgrind for {case!r}:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def cases(binary):
    """The one-thread and async cases, as the binary names them."""
    env = dict(os.environ, TARGETS_ROUNDS="1", TARGETS_CALLS="10")
    out = subprocess.run([binary, "--bench"], env=env, capture_output=True, text=True, check=True)
    names = re.findall(r"^\| (.+?) \| [\d.]+ \|", out.stdout, re.M)
    return [n for n in dict.fromkeys(names) if not n.startswith("2 threads/")]


def per_call(binary, names, calls):
    """Instructions per call of each case; a case whose name another's holds
    (`async/attribute` in `async/attribute, timeout`) runs with it, so the
    longer one's count is taken off."""
    result = {}
    for name in sorted(names, key=len, reverse=True):
        both = total_instructions(binary, name, 2 * calls) - total_instructions(binary, name, calls)
        own = both / (1.1 * calls)
        own -= sum(result[other] for other in result if name in other)
        result[name] = own
        print(f"  {os.path.basename(binary)}: {name}: {own:.1f}", file=sys.stderr)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+", help="built `targets` bench binaries")
    parser.add_argument("--only", help="only the cases whose name holds this text")
    parser.add_argument("--calls", type=int, default=200_000, help="N (default 200000)")
    args = parser.parse_args()
    if args.calls < 1000:
        sys.exit("--calls must be at least 1000")

    names = cases(args.binaries[0])
    if args.only:
        names = [n for n in names if args.only in n]
    if not names:
        sys.exit("no case to count")
    counts = [per_call(b, names, args.calls) for b in args.binaries]

    labels = [os.path.basename(b) for b in args.binaries]
    print("| case | " + " | ".join(labels) + (" | change |" if len(labels) > 1 else " |"))
    print("|---|" + "---:|" * (len(labels) + (len(labels) > 1)))
    for name in names:
        row = [f"{c[name]:.1f}" for c in counts]
        change = f" | {counts[-1][name] - counts[0][name]:+.1f}" if len(labels) > 1 else ""
        print(f"| {name} | " + " | ".join(row) + change + " |")


if __name__ == "__main__":
    main()
