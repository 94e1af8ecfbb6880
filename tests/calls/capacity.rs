//! The claims `examples/capacity.rs` prints and the README quotes, checked
//! on the example's own simulation (the same code, included as a module):
//! with the dependency serving half the load offered, the classic breaker
//! swings between all and nothing and wastes most of the capacity; graded
//! shedding keeps the goodput at the capacity, and with `shed(1.2)` sends
//! the dependency the share `√(k·c)` of the load, not all of it. Graded
//! shedding draws its refusals from the breaker's own generator, so its
//! bounds leave room for that noise (tenths of a call per second over the
//! 120 s degraded).

use crate::capacity_example::{DEGRADED_CAPACITY, Guard, Run, TIMEOUT_MS, runs};

fn refused_share(run: &Run) -> f64 {
    run.degraded_refused as f64 / run.degraded_calls as f64
}

#[test]
fn the_capacity_examples_claims_hold() {
    let runs = runs(7);
    let naive = &runs[Guard::NoBreaker];
    let classic = &runs[Guard::Classic];
    let graded = [&runs[Guard::Graded2], &runs[Guard::Graded1_2]];

    // Without a breaker every call reaches the dependency, which serves its
    // capacity; the others wait the whole timeout.
    assert!(naive.goodput_share() >= 0.98, "{}", naive.goodput());
    assert_eq!(naive.degraded_sent, naive.degraded_calls);
    assert_eq!(naive.latency_ms(0.99), TIMEOUT_MS);
    assert!(naive.load() > 1.8 * DEGRADED_CAPACITY, "{}", naive.load());

    // The classic breaker refuses most calls and wastes the capacity.
    assert!(refused_share(classic) > 0.5, "{}", refused_share(classic));
    assert!(
        classic.goodput_share() < 0.5,
        "classic goodput {}",
        classic.goodput()
    );

    for run in graded {
        assert!(
            run.goodput_share() >= 0.9,
            "graded goodput {} of {DEGRADED_CAPACITY}",
            run.goodput()
        );
        assert!(run.goodput() > classic.goodput());
        assert!(run.load() <= naive.load());
    }
    let [two, one_point_two] = graded;
    // k = 2 at half the capacity: the admitted share √(2 × ½) = 1, so
    // it sheds next to nothing.
    assert!(two.load() > 0.97 * naive.load(), "{}", two.load());
    // k = 1.2: √(1.2 × ½) ≈ 0.77 of the load reaches the dependency.
    let expected = (1.2f64 * 0.5).sqrt() * naive.load();
    assert!(
        (one_point_two.load() - expected).abs() < 0.05 * expected,
        "{} vs {expected}",
        one_point_two.load()
    );
    assert!(one_point_two.mean_latency_ms() < 0.7 * naive.mean_latency_ms());

    // The adaptive limit: timeouts cut it toward its least places, so it
    // sends far less than the offered load, and still serves more than the
    // classic breaker (AIMD gives up capacity for the calls held by
    // timeouts: it is no match for graded shedding here).
    let adaptive = &runs[Guard::Adaptive];
    assert!(adaptive.load() < 0.7 * naive.load(), "{}", adaptive.load());
    assert!(
        adaptive.goodput() > classic.goodput(),
        "{}",
        adaptive.goodput()
    );
    assert!(adaptive.full_goodput_after_ms() <= 10_000 + TIMEOUT_MS);

    // Every call answered again after the capacity returns: at once without
    // a breaker; within the open time and a timeout for the classic one;
    // within the 10 s window and a timeout with graded shedding (by then the
    // window holds none of the degraded phase).
    assert_eq!(naive.full_goodput_after_ms(), 0);
    assert!(classic.full_goodput_after_ms() <= 5_000 + TIMEOUT_MS);
    for run in graded {
        assert!(
            run.full_goodput_after_ms() <= 10_000 + TIMEOUT_MS,
            "{}",
            run.full_goodput_after_ms()
        );
    }
    for (_, run) in &runs.runs {
        assert!(run.answered <= run.calls);
        assert_eq!(run.calls, runs.calls as u64);
    }
}
