//! What `examples/cascade.rs` prints and the README quotes, checked on the
//! example's own simulation (the same code, included as a module) over 20
//! seeds: medians, and where the README says "in every run", the worst
//! run. Each seed runs the real breakers on a virtual clock, graded
//! shedding's draws seeded, so a run is the same each time.

use std::ops::Range;

use crate::cascade_example::{Guard, POOL, Run, paired, runs, spread};

const SEEDS: Range<u64> = 1..21;

struct Rows(Vec<Vec<Run>>);

impl Rows {
    fn of(&self, guard: Guard) -> &[Run] {
        let row = Guard::ALL.iter().position(|g| *g == guard).unwrap();
        &self.0[row]
    }
}

fn median(runs: &[Run], figure: impl Fn(&Run) -> f64) -> f64 {
    spread(runs, figure).median
}

fn worst(runs: &[Run], figure: impl Fn(&Run) -> f64) -> f64 {
    spread(runs, figure).max
}

fn peak(r: &Run) -> f64 {
    r.peak as f64
}

fn slow(r: &Run) -> f64 {
    r.slow_failures as f64
}

fn last_refused_s(r: &Run) -> f64 {
    r.last_refused_after_heal_ms as f64 / 1000.0
}

#[test]
fn what_a_breaker_adds_over_a_timeout_alone() {
    let rows = Rows(runs(&Guard::ALL, SEEDS, false));
    let naive = rows.of(Guard::NoBreaker30s);
    let timeout = rows.of(Guard::TimeoutOnly);

    // The 30 s timeout alone empties the pool: page views are refused in
    // every run. The 3 s timeout alone never comes near it.
    assert_eq!(median(naive, peak), POOL as f64);
    assert!(spread(naive, |r| r.refused_page_views as f64).min > 0.0);
    assert!(
        worst(timeout, peak) < POOL as f64 / 4.0,
        "{}",
        worst(timeout, peak)
    );
    for (guard, runs) in Guard::ALL.iter().zip(&rows.0).skip(1) {
        assert_eq!(
            worst(runs, |r| r.refused_page_views as f64),
            0.0,
            "{guard:?}"
        );
        assert_eq!(
            worst(runs, |r| r.refused_checkouts as f64),
            0.0,
            "{guard:?}"
        );
    }

    // What the breakers add: the peak about halved, and most of the
    // checkouts that waited 9 s for nothing answered at once instead.
    let (timeout_peak, timeout_slow) = (median(timeout, peak), median(timeout, slow));
    let waited = |r: &Run| r.slow_wait_ms as f64;
    // (The adaptive row's `shed = 2` counts a hanging attempt as evidence
    // once it has outlived the calls the server answered, or timed out,
    // not as it starts: its peak is a little higher.)
    for (guard, most) in [
        (Guard::Classic, 0.65),
        (Guard::ClassicTuned, 0.65),
        (Guard::Adaptive, 0.7),
    ] {
        let runs = rows.of(guard);
        assert!(
            median(runs, peak) <= most * timeout_peak,
            "{guard:?}: {}",
            median(runs, peak)
        );
        assert!(
            median(runs, slow) <= 0.25 * timeout_slow,
            "{guard:?}: {}",
            median(runs, slow)
        );
        assert!(
            median(runs, waited) <= 0.25 * median(timeout, waited),
            "{guard:?}"
        );
        let instant = median(runs, |r| r.instant_fallbacks as f64);
        assert!(instant >= 0.7 * timeout_slow, "{guard:?}: {instant}");
    }
    // Graded shedding refuses all but its probes once a window holds
    // enough failures (a server sees 0.67 checkouts a second: the probe is
    // the attempt after the last failure has left the window): fewer slow
    // failures than the timeout alone, though many stay.
    for guard in [Guard::Graded, Guard::GradedTuned] {
        let runs = rows.of(guard);
        assert!(
            median(runs, peak) <= 0.75 * timeout_peak,
            "{guard:?}: {}",
            median(runs, peak)
        );
        let slow = median(runs, slow) / timeout_slow;
        assert!((0.2..0.7).contains(&slow), "{guard:?}: {slow}");
    }
    // The failure rate over the last 100 calls: 100 healthy calls to
    // outweigh first, so the peak is barely lower than the timeout's.
    assert!(median(rows.of(Guard::FailureRate), peak) > 0.75 * timeout_peak);

    // What the breakers cost: checkouts refused after the heal, which the
    // timeout alone never refuses; so it pays the most within 10 s.
    assert_eq!(worst(timeout, |r| r.refused_after_heal as f64), 0.0);
    for (guard, runs) in Guard::ALL.iter().zip(&rows.0).skip(2) {
        let fewer = paired(runs, timeout, |r| r.paid_within_10_s as f64);
        assert!(
            fewer.median <= 0.0,
            "{guard:?} pays more than the timeout: {fewer:?}"
        );
        assert!(
            median(runs, |r| r.refused_after_heal as f64) > 0.0,
            "{guard:?}"
        );
    }
    // The default 30 s open time refuses for most of 30 s after the heal;
    // "1s..4s" for seconds; graded shedding stops at its first probe once
    // the hang's last timeout (3 s after the heal at most) has left the
    // window, a probe that may itself time out before the heal: within
    // 20 s at its defaults, 7 s tuned.
    let classic = median(rows.of(Guard::Classic), last_refused_s);
    assert!(classic >= 20.0, "{classic}");
    let tuned = rows.of(Guard::ClassicTuned);
    assert!(
        worst(tuned, last_refused_s) <= 15.0,
        "{}",
        worst(tuned, last_refused_s)
    );
    assert!(median(tuned, last_refused_s) <= classic / 3.0);
    let graded_tuned = rows.of(Guard::GradedTuned);
    assert!(
        worst(graded_tuned, last_refused_s) <= 7.0,
        "{}",
        worst(graded_tuned, last_refused_s)
    );
    let graded = rows.of(Guard::Graded);
    assert!(
        worst(graded, last_refused_s) <= 20.0,
        "{}",
        worst(graded, last_refused_s)
    );
}

#[test]
fn a_seed_gives_the_same_run_every_time() {
    // Graded shedding's refusals are drawn: seeded per run, on whichever
    // thread runs it, the same seed gives the same refusals.
    let guards = [Guard::Graded, Guard::GradedTuned, Guard::Adaptive];
    let first = runs(&guards, 3..7, false);
    let again = runs(&guards, 3..7, false);
    assert_eq!(first, again);
    // And another seed, other runs.
    assert_ne!(first[0][0], first[0][1]);
}
