#!/usr/bin/env python3
"""What can be checked of the declared MSRV without its toolchain.

The CI machine has one Rust toolchain, so the library crates cannot be built
on their `rust-version` here. Two of the three ways a crate breaks its MSRV
are checked instead:

- Dependencies: in a copy of the workspace, the lockfile is resolved anew
  the way a user on the MSRV toolchain would get it (cargo's MSRV-aware
  resolver, `incompatible-rust-versions = "fallback"`), and every crate each
  publishable crate depends on (every feature on, for Linux) must declare a
  `rust-version` no newer than that crate's own. A dependency with no
  compatible release fails here.
- The standard library: clippy's `incompatible_msrv` lint (on by default,
  an error under `-D warnings`) refuses an API stabilised after the
  `rust-version`; `.ci/run` runs clippy.
- The language: let chains (stable from 1.88) are refused below by a
  search of the sources; other newer syntax is not caught here.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def publishable(metadata):
    members = set(metadata["workspace_members"])
    return [
        p
        for p in metadata["packages"]
        if p["id"] in members and p.get("publish") != [] and p.get("rust_version")
    ]


def check(workspace):
    metadata = json.loads(
        subprocess.check_output(
            [
                "cargo", "metadata", "--format-version", "1", "--all-features",
                "--filter-platform", "x86_64-unknown-linux-gnu",
            ],
            cwd=workspace,
        )
    )
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    failures = 0
    for crate in publishable(metadata):
        msrv = crate["rust_version"]
        seen, stack = set(), [crate["id"]]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            for dep in nodes[node]["deps"]:
                if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                    stack.append(dep["pkg"])
        newer = sorted(
            f'{packages[i]["name"]} {packages[i]["version"]} (rust {packages[i]["rust_version"]})'
            for i in seen
            if packages[i].get("rust_version")
            and version(packages[i]["rust_version"]) > version(msrv)
        )
        if newer:
            failures += 1
            print(f'{crate["name"]} (rust {msrv}): dependencies need newer Rust: {", ".join(newer)}')
        else:
            print(f'{crate["name"]} (rust {msrv}): {len(seen) - 1} dependencies, all within it')
    return failures


def let_chains():
    found = 0
    pattern = re.compile(r"\b(if|while)\s+let\b[^{;]*&&\s*let\b")
    for path in [*ROOT.glob("src/**/*.rs"), *ROOT.glob("*/src/**/*.rs")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found += 1
                print(f"{path.relative_to(ROOT)}:{number}: a let chain needs Rust 1.88")
    return found


def main():
    with tempfile.TemporaryDirectory() as scratch:
        copy = pathlib.Path(scratch) / "workspace"
        shutil.copytree(
            ROOT, copy, ignore=shutil.ignore_patterns("target", ".git", "Cargo.lock")
        )
        subprocess.check_call(
            ["cargo", "generate-lockfile", "--quiet"],
            cwd=copy,
            env={**os.environ, "CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS": "fallback"},
        )
        failures = check(copy)
    failures += let_chains()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
