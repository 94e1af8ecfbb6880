#!/usr/bin/env bash
# Every file a publishable crate pulls in with `include_str!` is in its
# package: `cargo package --list` against the paths the sources name.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for manifest in Cargo.toml */Cargo.toml; do
    dir=$(dirname "$manifest")
    grep -q '^publish = false' "$manifest" && continue
    name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$manifest" | head -1)
    [ -d "$dir/src" ] || continue
    missing=0
    listed=$(cargo package -p "$name" --list --allow-dirty 2>/dev/null)
    # include_str!("../docs/x.md") in src/lib.rs names docs/x.md in the crate.
    while IFS=: read -r file path; do
        rel=$(realpath -m --relative-to="$dir" "$(dirname "$file")/$path")
        if ! grep -qxF "$rel" <<<"$listed"; then
            echo "$name: $file includes $path, which its package leaves out" >&2
            missing=1
        fi
    done < <(grep -rhoE --include='*.rs' -H 'include_str!\("[^"]+"\)' "$dir/src" | sed -E 's/include_str!\("([^"]+)"\)/\1/')
    if [ "$missing" -eq 0 ]; then
        echo "$name: every included file is packaged"
    else
        status=1
    fi
done
exit $status
