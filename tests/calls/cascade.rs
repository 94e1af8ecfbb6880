//! The figures `examples/cascade.rs` prints and the README quotes, checked
//! on the example's own simulation (the same code, included as a module):
//! without a breaker the pool runs out and page views are refused; with a
//! breaker per server the peak stays under 15% of the pool and no page view
//! is refused; with `recovery = "1s..4s"` every breaker is closed within
//! seconds of the gateway's recovery, and more checkouts are paid within
//! 10 s than with `"30s"`. Graded shedding alone never opens, refuses only
//! by shedding, pays at least as many checkouts within 10 s as no breaker,
//! and stops shedding within the 3 s timeout of the recovery; beside the
//! threshold, the threshold opens it and the recovery is the classic one's.
//! The graded rows draw their refusals from the breakers' own generators
//! (not seeded), so they vary between runs: their bounds are the goals,
//! which each of a thousand runs met (peak at most 41 workers of the 45
//! allowed, back to normal at most 3.0 s after the recovery, at least 746
//! checkouts paid within 10 s against 734).

use crate::cascade_example::{Guard, HANG_UNTIL_MS, POOL, Run, runs};

/// How long after the gateway's recovery every breaker was back to normal
/// (closed, not shedding), in ms.
fn normal_after(run: &Run) -> u64 {
    run.normal_after_heal_ms()
        .expect("every breaker back to normal")
}

#[test]
fn the_cascade_examples_figures_hold() {
    let runs = runs(7);
    let naive = &runs[Guard::NoBreaker];
    let guarded = &runs[Guard::Recovery30s];
    let tuned = &runs[Guard::Recovery1To4s];
    let graded = &runs[Guard::Graded];
    let beside = &runs[Guard::GradedThreshold];
    assert_eq!(naive.peak, POOL, "no breaker: every worker busy");
    assert!(naive.refused_page_views > 0);
    for guard in &Guard::ALL[1..] {
        let run = &runs[*guard];
        let name = guard.label();
        assert!(run.peak * 100 <= POOL * 15, "{name}: peak {}", run.peak);
        assert_eq!(run.refused_page_views, 0, "{name}");
        assert_eq!(run.refused_checkouts, 0, "{name}");
        assert!(run.fast_failed > 0, "{name}: the breaker refused attempts");
    }
    // One open period (4 s at most) and a trial's 3 s timeout.
    assert!(normal_after(tuned) <= 7_000, "{}", normal_after(tuned));
    assert!(normal_after(guarded) <= 33_000, "{}", normal_after(guarded));
    assert!(normal_after(tuned) < normal_after(guarded));
    assert!(graded.paid_within_10_s() > tuned.paid_within_10_s());
    assert!(tuned.paid_within_10_s() > guarded.paid_within_10_s());

    // Graded alone: it never opens, so every refusal is shedding; and the
    // goals, each of them.
    assert_eq!(graded.shed, graded.fast_failed);
    assert!(
        graded.paid_within_10_s() >= naive.paid_within_10_s(),
        "{} < {}",
        graded.paid_within_10_s(),
        naive.paid_within_10_s()
    );
    assert!(normal_after(graded) <= 3_000, "{}", normal_after(graded));
    // Shedding after the recovery refuses checkouts the gateway would pay:
    // a handful at most, against the classic breakers' seconds of fallbacks.
    assert!(
        graded.fast_failed_after_heal < tuned.fast_failed_after_heal,
        "{} vs {}",
        graded.fast_failed_after_heal,
        tuned.fast_failed_after_heal
    );

    // Beside the threshold: the threshold opens it (most refusals are not
    // shedding), and it closes the way the tuned classic breaker does, on a
    // trial after one open period: later than shedding alone stops.
    assert!(beside.shed < beside.fast_failed / 2, "{}", beside.shed);
    assert!(normal_after(beside) <= 7_000, "{}", normal_after(beside));
    assert!(normal_after(beside) > normal_after(graded));

    // Every checkout is accounted for, in each run.
    for (guard, run) in &runs.runs {
        let ended =
            run.completed + run.failed_after_retries + run.fast_failed + run.refused_checkouts;
        assert!(
            ended <= runs.checkouts as u64,
            "{guard:?}: {ended} of {}",
            runs.checkouts
        );
        if let Some(t) = run.normal_again_at {
            assert!(t >= HANG_UNTIL_MS);
        }
    }
    assert!(runs.page_views > 0);
}
