//! What `examples/metastable.rs` prints and `examples/README.md` quotes, checked on
//! the example's own simulation (the same code, included as a module) over
//! 20 seeds, each run on the real breakers and a virtual clock. The runs
//! are shorter than the example's (10 s before the trigger, 50 s after, not
//! 30 s and 80 s), so that the test takes seconds in a debug build; the
//! trigger is the same 10 s at half the capacity.

use std::ops::Range;

use crate::metastable_example::{CAPACITY_PER_SEC, Guard, Phases, Run, runs, spread};

const SEEDS: Range<u64> = 1..21;
const PHASES: Phases = Phases {
    trigger_from: 10_000,
    trigger_until: 20_000,
    end: 70_000,
};

fn row(rows: &[Vec<Run>], guard: Guard) -> &[Run] {
    &rows[Guard::ALL.iter().position(|g| *g == guard).unwrap()]
}

/// The latest recovery over the seeds, in seconds after the trigger
/// (infinite: some run never recovered).
fn worst_recovery(runs: &[Run]) -> f64 {
    spread(runs, Run::recovered_after).max
}

#[test]
fn retries_keep_the_server_down_and_failfast_brings_it_back() {
    let rows = runs(&Guard::ALL, PHASES, SEEDS);

    // The trigger alone does not keep the server down: without retries the
    // queue drains and it recovers on its own, in every run.
    let alone = worst_recovery(row(&rows, Guard::NoRetries));
    assert!(alone <= 15.0, "{alone}");

    // Retries without a budget do: in every run the server stays asked for
    // more than twice its capacity, works mostly for callers who gave up,
    // and answers next to nothing, to the end.
    let retries = row(&rows, Guard::Retries);
    assert!(spread(retries, Run::recovered_after).min.is_infinite());
    assert!(spread(retries, Run::answered_after).max < 0.05);
    assert!(spread(retries, Run::load_after).min > 2.0 * CAPACITY_PER_SEC);
    assert!(spread(retries, Run::wasted).min > 0.6);

    // Each protection brings it back in every run: the budget and graded
    // shedding within tens of seconds, the default breaker after its 30 s
    // open, the breaker with "1s..4s" within seconds.
    let bounds = [
        (Guard::RetriesBudget, 40.0),
        (Guard::Breaker, 35.0),
        (Guard::Graded, 20.0),
        (Guard::BreakerBudget, 35.0),
        (Guard::GradedBudget, 20.0),
        (Guard::BreakerTunedBudget, 5.0),
    ];
    for (guard, bound) in bounds {
        let worst = worst_recovery(row(&rows, guard));
        assert!(worst <= bound, "{guard:?}: {worst} s");
    }
    // The adaptive limit, which follows latency, brings it back within
    // seconds too, and then answers nearly everything: the noise of a
    // dependency whose latency varies as much as its mean (exponential
    // service) is not taken for a queue. (A Poisson burst that queues the
    // server for a moment still cuts it, as it should: a late dip below
    // 90% in a second can happen, so the bound is on the median.)
    let adaptive = row(&rows, Guard::Adaptive);
    let back = spread(adaptive, Run::recovered_after);
    assert!(back.median <= 10.0, "{back:?}");
    let answered = spread(adaptive, Run::answered_after);
    assert!(
        answered.min >= 0.9 && answered.median >= 0.96,
        "{answered:?}"
    );
    // The default breaker's open time is what it takes: never much sooner.
    let breaker = spread(row(&rows, Guard::Breaker), Run::recovered_after);
    assert!(breaker.min >= 15.0, "{breaker:?}");
    // Those that recover within seconds answer nearly every request after
    // the trigger, and waste little of the server's work.
    let guard = Guard::BreakerTunedBudget;
    let runs = row(&rows, guard);
    assert!(
        spread(runs, Run::answered_after).median >= 0.97,
        "{guard:?}"
    );
    assert!(spread(runs, Run::wasted).max < 0.15, "{guard:?}");
}
