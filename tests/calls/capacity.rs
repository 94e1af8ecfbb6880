//! What `examples/capacity.rs` prints and `examples/README.md` quotes, checked on the
//! example's own simulation (the same code, included as a module) over 20
//! seeds: medians, and where `examples/README.md` says "in every run", the worst
//! run (or each seed's pair of runs). The degraded phase is 60 s here, not
//! the example's 120 s, and the run ends 20 s after it: the same rates from
//! fewer calls, so that the test takes seconds in a debug build.

use std::ops::Range;

use crate::capacity_example::{Guard, Phases, Run, TIMEOUT_MS, UNSERVED_COSTS, runs, spread};

const SEEDS: Range<u64> = 1..21;
const PHASES: Phases = Phases {
    degraded_from: 10_000,
    degraded_until: 70_000,
    end: 90_000,
};

fn row(rows: &[Vec<Run>], guard: Guard) -> &[Run] {
    &rows[Guard::ALL.iter().position(|g| *g == guard).unwrap()]
}

fn median(runs: &[Run], figure: impl Fn(&Run) -> f64) -> f64 {
    spread(runs, figure).median
}

/// Whether `a`'s goodput beats `b`'s on every seed.
fn beats_on_every_seed(a: &[Run], b: &[Run]) -> bool {
    a.iter().zip(b).all(|(a, b)| a.goodput() > b.goodput())
}

#[test]
fn what_each_breaker_makes_of_half_the_capacity() {
    let all = runs(&Guard::ALL, PHASES, SEEDS, &UNSERVED_COSTS);
    let (free, costly) = (&all[0], &all[1]);
    assert_eq!(UNSERVED_COSTS, [0.0, 0.25]);

    // Calls beyond the capacity cost nothing: without a breaker every call
    // reaches the dependency, which serves its capacity, in every run; the
    // others wait the whole timeout.
    let naive = row(free, Guard::NoBreaker);
    assert!(spread(naive, Run::goodput_share).min >= 0.98);
    assert!(spread(naive, |r| r.p99_wait_ms).min == TIMEOUT_MS as f64);
    assert!(median(naive, Run::slow_failures) > 45.0);
    // The consecutive rule and a failure rate over the last 100 calls
    // swing between all and nothing: most of the capacity is lost.
    for guard in [Guard::Classic, Guard::FailureRate] {
        let runs = row(free, guard);
        assert!(spread(runs, Run::goodput_share).max < 0.45, "{guard:?}");
        assert!(median(runs, Run::fast_failures) > 60.0, "{guard:?}");
    }
    // The same rate over 10 s keeps most of it: the window decides.
    let rate_10s = median(row(free, Guard::FailureRate10s), Run::goodput_share);
    assert!(rate_10s > 0.6, "{rate_10s}");
    assert!(rate_10s > 1.5 * median(row(free, Guard::FailureRate), Run::goodput_share));
    // Graded, k = 2: the sent share settles at √(2 × ½) = 1, it sheds
    // next to nothing. k = 1.2: about √0.6 of the load is sent, and the
    // goodput stays at the capacity.
    let two = row(free, Guard::Graded2);
    assert!(spread(two, Run::goodput_share).min >= 0.98);
    assert!(median(two, Run::load) > 0.97 * median(naive, Run::load));
    let one_two = row(free, Guard::Graded1_2);
    assert!(spread(one_two, Run::goodput_share).min >= 0.95);
    let sent = median(one_two, Run::load) / median(naive, Run::load);
    assert!((sent - 0.6f64.sqrt()).abs() < 0.05, "{sent}");
    assert!(median(one_two, |r| r.mean_wait_ms) < 0.7 * median(naive, |r| r.mean_wait_ms));
    // The adaptive limit follows the latency: the calls that time out no
    // longer hold most of its places, and it keeps most of the capacity.
    let adaptive = median(row(free, Guard::Adaptive), Run::goodput_share);
    assert!(adaptive >= 0.85, "{adaptive}");

    // An unserved call costs a quarter of a served one: without a breaker
    // the dependency serves (50 − ¼ × 100) / ¾ ≈ 33 calls/s, two thirds of
    // its capacity. Graded shedding sends less and gets more, on every
    // seed; the rules that swing between all and nothing, and the limit,
    // get less than no breaker.
    let naive = row(costly, Guard::NoBreaker);
    let share = median(naive, Run::goodput_share);
    assert!((share - 2.0 / 3.0).abs() < 0.03, "{share}");
    for guard in [Guard::Graded2, Guard::Graded1_2] {
        assert!(beats_on_every_seed(row(costly, guard), naive), "{guard:?}");
    }
    let one_two = median(row(costly, Guard::Graded1_2), Run::goodput_share);
    assert!(one_two > share + 0.1, "{one_two}");
    for guard in [Guard::Classic, Guard::FailureRate, Guard::FailureRate10s] {
        assert!(beats_on_every_seed(naive, row(costly, guard)), "{guard:?}");
    }

    // Every call answered again after the capacity returns: within the
    // open time and a timeout for the rules that open; within the 10 s
    // window and a timeout with graded shedding.
    for rows in &all {
        let worst = |guard| spread(row(rows, guard), Run::every_call_answered_after).max;
        assert_eq!(worst(Guard::NoBreaker), 0.0);
        for guard in [Guard::Classic, Guard::FailureRate, Guard::FailureRate10s] {
            assert!(worst(guard) <= 6.0, "{guard:?}: {}", worst(guard));
        }
        for guard in [Guard::Graded2, Guard::Graded1_2, Guard::Adaptive] {
            assert!(worst(guard) <= 11.0, "{guard:?}: {}", worst(guard));
        }
    }
}
