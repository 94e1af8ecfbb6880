#!/usr/bin/env bash
# The sweep of the whole runtime by mutation (docs/mutants.md): runs its 80
# round-robin shards one after another, from the first without a result,
# at idle priority, in a clone of its own that it mutates in place. Each
# shard runs with the tests of the commit named in $OUT/TESTS (the
# reference's own by default), and only if that commit's list of mutants
# is the reference's, mutant for mutant: the runtime's code is the same.
#
#     .ci/mutants_sweep.sh [OUT]        # OUT: ~/mutants-sweep by default
#     SWEEP_FROM=K .ci/mutants_sweep.sh # from shard K (those before are recorded)
#     touch OUT/STOP                    # no new shard after the one running
#     .ci/mutants_summary.py [OUT]      # the rows of docs/mutants.md's table
#
# Then, on the commit named in $OUT/AGAIN_AT (main's head when that phase
# starts, by default), without the skip of the clock test, which the
# reference's runtime needed (docs/mutants.md, *Method*): every survivor
# of the shards is run again, into OUT/survivors; then the files whose
# mutants changed since the reference are swept again whole, into
# OUT/again. Both go in parts (OUT/survivors/part-J; SWEEP_PARTS of them,
# 8 by default) that, like the shards, start again from the first
# without an exit file.
#
# OUT/shard-K holds a shard's log, its exit code, the commit of its tests
# (COMMIT) and cargo-mutants' output (mutants.out). A shard stopped before
# its end (no exit file) starts again from its beginning.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$HOME/mutants-sweep}
REF=${SWEEP_REF:-81df894}
SHARDS=80
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
tree=$OUT/tree
export CARGO_TARGET_DIR=$OUT/target STRESS_SHORT_SECS=1

if [ ! -d "$tree/.git" ]; then
    git clone -q "$repo" "$tree" || exit 8
fi
cd "$tree" || exit 8
git fetch -q "$repo" || exit 8
if [ ! -s "$OUT/reference.list" ]; then
    git checkout -q --detach "$REF" || exit 8
    cargo mutants -p failfast-runtime --list > "$OUT/reference.list" || exit 8
fi
[ -s "$OUT/TESTS" ] || git rev-parse "$REF" > "$OUT/TESTS"

for k in $(seq "${SWEEP_FROM:-0}" $((SHARDS - 1))); do
    [ -f "$OUT/shard-$k/exit" ] && continue
    if [ -f "$OUT/STOP" ]; then echo "$(date -u +%T) $OUT/STOP: shard $k not started"; exit 0; fi
    tests=$(cat "$OUT/TESTS")
    git checkout -q -- . && git fetch -q "$repo" && git checkout -q --detach "$tests" || exit 8
    cargo mutants -p failfast-runtime --list > "$OUT/list-now" 2>/dev/null
    if ! cmp -s "$OUT/list-now" "$OUT/reference.list"; then
        echo "$(date -u +%T) the mutants of $tests are not those of $REF"
        exit 9
    fi
    rm -rf "$OUT/shard-$k" && mkdir -p "$OUT/shard-$k"
    echo "$tests" > "$OUT/shard-$k/COMMIT"
    # The unmutated run checks the tests pass and sets the timeout: once
    # for each commit of tests.
    baseline=()
    if [ "$(cat "$OUT/BASELINE_OK" 2>/dev/null)" = "$tests" ]; then
        baseline=(--baseline=skip --timeout 140)
    fi
    echo "$(date -u +%T) shard $k/$SHARDS with the tests of $tests ${baseline[*]}"
    nice -n 19 cargo mutants -p failfast-runtime --in-place \
        --shard "$k/$SHARDS" --sharding round-robin "${baseline[@]}" -o "$OUT/shard-$k" \
        -- -- --test-threads 4 --skip the_first_readings_agree_with_the_later_ones \
        > "$OUT/shard-$k/log" 2>&1
    rc=$?
    echo $rc > "$OUT/shard-$k/exit"
    echo "$(date -u +%T) shard $k exit $rc"
    # 0: all caught; 2: some missed; 3: some timed out. Else stop.
    case $rc in 0 | 2 | 3) echo "$tests" > "$OUT/BASELINE_OK" ;; *) exit $rc ;; esac
done

git checkout -q -- . && git fetch -q "$repo" || exit 8
# The commit of the day is taken when these runs start, not before a STOP.
if [ -f "$OUT/STOP" ] && [ ! -s "$OUT/AGAIN_AT" ]; then
    echo "$(date -u +%T) $OUT/STOP: the runs on the code of the day not started"
    exit 0
fi
[ -s "$OUT/AGAIN_AT" ] || git -C "$repo" rev-parse HEAD > "$OUT/AGAIN_AT"
again=$(cat "$OUT/AGAIN_AT")
git checkout -q --detach "$again" || exit 8
cargo mutants -p failfast-runtime --list > "$OUT/list-again" 2>/dev/null || exit 8

# Both runs go in parts (SWEEP_PARTS, 8 by default), each with its exit
# file like a shard's: a run stopped in the middle starts again at the
# part it was in. The survivors go first: theirs is the score.
PARTS=${SWEEP_PARTS:-8}

# part DIR J ARGS...: part J of the run whose outputs go in DIR, with the
# unmutated run until a part has passed it on this commit.
part() {
    local dir=$1 j=$2 rc
    shift 2
    [ -f "$dir/part-$j/exit" ] && return 0
    if [ -f "$OUT/STOP" ]; then echo "$(date -u +%T) $OUT/STOP: $dir part $j not started"; exit 0; fi
    local skip=()
    if [ "$(cat "$OUT/BASELINE_AGAIN" 2>/dev/null)" = "$again" ]; then
        skip=(--baseline=skip --timeout 140)
    fi
    local parts
    parts=$(cat "$dir/PARTS")
    rm -rf "$dir/part-$j" && mkdir -p "$dir/part-$j"
    echo "$(date -u +%T) $dir part $j/$parts ${skip[*]}"
    nice -n 19 cargo mutants -p failfast-runtime --in-place "$@" "${skip[@]}" \
        --shard "$j/$parts" --sharding round-robin -o "$dir/part-$j" \
        -- -- --test-threads 4 > "$dir/part-$j/log" 2>&1
    rc=$?
    git checkout -q -- .
    echo $rc > "$dir/part-$j/exit"
    echo "$(date -u +%T) $dir part $j exit $rc"
    case $rc in 0 | 2 | 3) echo "$again" > "$OUT/BASELINE_AGAIN" ;; *) exit $rc ;; esac
}

# run DIR ARGS...: every part of the run in DIR.
run() {
    local dir=$1 j
    shift
    [ -s "$dir/PARTS" ] || echo "$PARTS" > "$dir/PARTS"
    for j in $(seq 0 $(($(cat "$dir/PARTS") - 1))); do part "$dir" "$j" "$@"; done
}

# Every survivor of the shards, by its name in the list of the day, with
# the tests of the day: the shards' score plus the survivors those tests
# catch is their score over the whole runtime. A name filter per
# survivor, and the files they are in (cargo-mutants 27.1 lets every
# struct-field deletion of the files through the name filter, #632: the
# summary counts only the survivors).
if [ ! -s "$OUT/survivors/names" ]; then
    mkdir -p "$OUT/survivors"
    echo "$again" > "$OUT/survivors/COMMIT"
    python3 "$repo/.ci/mutants_summary.py" "$OUT" --survivors "$OUT/list-again" \
        > "$OUT/survivors/names" 2> "$OUT/survivors/gone" || exit 8
    echo "$(date -u +%T) the $(wc -l < "$OUT/survivors/names") survivors on $again"
fi
filters=()
while read -r name; do
    filters+=(--re "^$(printf '%s' "$name" | sed 's/[][\\.^$*+?(){}|]/\\&/g')\$")
done < "$OUT/survivors/names"
for f in $(cut -d: -f1 "$OUT/survivors/names" | sort -u); do filters+=(--file "$f"); done
run "$OUT/survivors" "${filters[@]}"

# The files whose mutants differ from the reference's (a test added to a
# file's test module changes none), swept again whole.
if [ ! -s "$OUT/again/files" ]; then
    mkdir -p "$OUT/again"
    echo "$again" > "$OUT/again/COMMIT"
    diff "$OUT/reference.list" "$OUT/list-again" | sed -n 's/^[<>] \([^:]*\):.*/\1/p' | sort -u |
        while read -r f; do [ -f "$f" ] && echo "$f"; done > "$OUT/again/files"
    echo "$(date -u +%T) the files changed since $REF, on $again: $(tr '\n' ' ' < "$OUT/again/files")"
fi
files=()
while read -r f; do files+=(--file "$f"); done < "$OUT/again/files"
run "$OUT/again" "${files[@]}"
echo "$(date -u +%T) the sweep is done: .ci/mutants_summary.py $OUT"
