//! The figures `examples/cascade.rs` prints and the README quotes, checked
//! on the example's own simulation (the same code, included as a module):
//! without a breaker the pool runs out and page views are refused; with a
//! breaker per server the peak stays under 15% of the pool and no page view
//! is refused; with `recovery = "1s..4s"` every breaker is closed within
//! seconds of the gateway's recovery, and more checkouts are paid within
//! 10 s than with `"30s"`.

use crate::cascade_example::{HANG_UNTIL_MS, POOL, Run, runs};

fn paid_within_10_s(run: &Run) -> u64 {
    run.completed - run.completed_slowly
}

#[test]
fn the_cascade_examples_figures_hold() {
    let runs = runs(7);
    assert_eq!(runs.naive.peak, POOL, "no breaker: every worker busy");
    assert!(runs.naive.refused_page_views > 0);
    for (name, run) in [("30s", &runs.guarded), ("1s..4s", &runs.tuned)] {
        assert!(run.peak * 100 <= POOL * 15, "{name}: peak {}", run.peak);
        assert_eq!(run.refused_page_views, 0, "{name}");
        assert_eq!(run.refused_checkouts, 0, "{name}");
    }
    let closed_after = |run: &Run| run.all_closed_at.expect("every breaker closes") - HANG_UNTIL_MS;
    // One open period (4 s at most) and a trial's 3 s timeout.
    assert!(
        closed_after(&runs.tuned) <= 7_000,
        "{}",
        closed_after(&runs.tuned)
    );
    assert!(
        closed_after(&runs.guarded) <= 33_000,
        "{}",
        closed_after(&runs.guarded)
    );
    assert!(closed_after(&runs.tuned) < closed_after(&runs.guarded));
    assert!(paid_within_10_s(&runs.tuned) > paid_within_10_s(&runs.guarded));
    // Every checkout is accounted for, in each run.
    for run in [&runs.naive, &runs.guarded, &runs.tuned] {
        let ended =
            run.completed + run.failed_after_retries + run.fast_failed + run.refused_checkouts;
        assert!(
            ended <= runs.checkouts as u64,
            "{ended} of {}",
            runs.checkouts
        );
    }
    assert!(runs.page_views > 0);
}
