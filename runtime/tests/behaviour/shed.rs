//! Graded shedding (`shed`): the chance of refusal against its formula,
//! what counts toward it, how it ends, and how it sits beside the other
//! rules. Time is a `ManualClock`: a window of 10 s is 20 periods of 500 ms.

use std::time::Duration;

use failfast_runtime::{Breaker, Error, ManualClock, Mode, Outcome, Reason, State};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PERIOD: Duration = Duration::from_millis(500);

fn graded(name: &'static str, k: f64, clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .name(name)
        .shed(k)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// One call that fails or succeeds; whether it was shed.
fn call(breaker: &Breaker, fails: bool) -> bool {
    match breaker.call(|| if fails { Err(()) } else { Ok(()) }) {
        Err(Error::Rejected(r)) => {
            assert_eq!((r.reason(), r.state()), (Reason::Shed, State::Closed));
            true
        }
        _ => false,
    }
}

/// `(admitted − k × accepted) / (admitted + 1)`, in [0, 0.9].
fn formula(admitted: f64, accepted: f64, k: f64) -> f64 {
    ((admitted - k * accepted) / (admitted + 1.0)).clamp(0.0, 0.9)
}

#[test]
fn the_chance_after_each_failure_is_the_formula_over_the_window() {
    let clock = ManualClock::new();
    let b = graded("shed.formula", 2.0, &clock);
    // 30 successes, then failures one by one: nothing is shed while the
    // chance is 0, and each failure sets it to the formula's value.
    for _ in 0..30 {
        assert!(!call(&b, false));
    }
    let mut failures = 0.0;
    while b.snapshot().shedding == 0.0 {
        assert!(!call(&b, true), "no refusal at chance 0");
        failures += 1.0;
        assert!(failures < 100.0);
    }
    // (30 + f − 2 × 30) / (30 + f + 1) > 0 first at f = 31.
    assert_eq!(failures, 31.0);
    let expected = formula(61.0, 30.0, 2.0);
    assert!((b.snapshot().shedding - expected).abs() < 1e-6);
    // Five more failures, admitted or not: the chance follows the calls
    // admitted, and leaves out the refused ones.
    for _ in 0..200 {
        call(&b, true);
    }
    let s = b.snapshot();
    let admitted = (s.successes + s.failures) as f64;
    assert!(s.shed > 0 && s.shed == s.rejected, "{s:?}");
    assert_eq!(s.calls, 30 + 31 + 200);
    let expected = formula(admitted, 30.0, 2.0);
    assert!(
        (s.shedding - expected).abs() < 1e-6,
        "{} vs {expected}",
        s.shedding
    );
}

#[test]
fn a_call_counts_as_admitted_from_its_start() {
    let clock = ManualClock::new();
    let b = graded("shed.in-flight", 2.0, &clock);
    for _ in 0..20 {
        call(&b, false);
    }
    // 40 calls hang; one failure brings a verdict on all of them.
    let hanging: Vec<_> = (0..40).map(|_| b.acquire().unwrap()).collect();
    call(&b, true);
    let expected = formula(61.0, 20.0, 2.0);
    assert!(expected > 0.3);
    assert!(
        (b.snapshot().shedding - expected).abs() < 1e-6,
        "{:?}",
        b.snapshot()
    );
    // They end neutral (the caller gave up): out of the window.
    for permit in hanging {
        permit.record(Outcome::Neutral);
    }
    // The next failure let through brings a verdict (calls shed before it
    // are in neither count).
    while call(&b, true) {}
    assert_eq!(b.snapshot().shedding, 0.0, "22 admitted, 20 accepted");
}

#[test]
fn nothing_is_shed_before_min_calls_and_at_most_nine_in_ten() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("shed.min-calls")
        .shed(2.0)
        .min_calls(25)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..24 {
        assert!(!call(&b, true));
    }
    assert_eq!(b.snapshot().shedding, 0.0, "24 admitted, 25 needed");
    assert!(!call(&b, true));
    assert!((b.snapshot().shedding - formula(25.0, 0.0, 2.0)).abs() < 1e-6);
    let (mut shed, mut tried) = (0u32, 0u32);
    for _ in 0..20_000 {
        if call(&b, true) {
            shed += 1;
        } else {
            tried += 1;
        }
    }
    assert!((b.snapshot().shedding - 0.9).abs() < 1e-6, "capped");
    let share = f64::from(shed) / 20_000.0;
    assert!(
        (share - 0.9).abs() < 0.015,
        "{share}: one in ten still tried"
    );
    assert!(tried > 1_500);
}

#[test]
fn failures_leave_the_window_and_shedding_stops_within_it_after_healing() {
    let clock = ManualClock::new();
    let b = graded("shed.healing", 2.0, &clock);
    // 100 calls per second; the dependency fails every call for 30 s.
    let tick = Duration::from_millis(10);
    for _ in 0..3_000 {
        call(&b, true);
        clock.advance(tick);
    }
    assert!((b.snapshot().shedding - 0.9).abs() < 1e-6);
    // Healed: shedding stops within the 10 s window.
    let mut healed_for = Duration::ZERO;
    while b.snapshot().shedding > 0.0 {
        call(&b, false);
        clock.advance(tick);
        healed_for += tick;
        assert!(healed_for <= Duration::from_secs(10), "{:?}", b.snapshot());
    }
    println!("shedding stopped {healed_for:?} after healing");
    assert!(healed_for >= PERIOD, "not before a period: {healed_for:?}");
    // And stays stopped: every call goes through.
    for _ in 0..1_000 {
        assert!(!call(&b, false));
        clock.advance(tick);
    }
}

/// The window holds the successes of its last 10 s even when nothing
/// failed then (the calls mark each period as it begins): after 100 s of
/// health at 100 calls/s, a dependency that fails every call is shed only
/// once its failures outnumber the window's successes (k = 2), about 5 s
/// in, not at the 10th failure.
#[test]
fn successes_of_a_healthy_window_hold_shedding_back() {
    let clock = ManualClock::new();
    let b = graded("shed.diluted", 2.0, &clock);
    let tick = Duration::from_millis(10);
    for _ in 0..10_000 {
        assert!(!call(&b, false));
        clock.advance(tick);
    }
    let mut failing_for = Duration::ZERO;
    while b.snapshot().shedding == 0.0 {
        call(&b, true);
        clock.advance(tick);
        failing_for += tick;
        assert!(failing_for < Duration::from_secs(10));
    }
    assert!(
        (Duration::from_secs(4)..=Duration::from_secs(6)).contains(&failing_for),
        "shedding began {failing_for:?} into the failures"
    );
}

#[test]
fn neutral_outcomes_and_refusals_are_no_evidence() {
    let clock = ManualClock::new();
    let b = graded("shed.neutral", 2.0, &clock);
    for _ in 0..1_000 {
        let permit = b.acquire().unwrap();
        permit.record(Outcome::Neutral);
    }
    for _ in 0..9 {
        call(&b, false);
    }
    call(&b, true);
    // 10 admitted, 9 accepted: (10 − 18) / 11 < 0.
    assert_eq!(b.snapshot().shedding, 0.0, "{:?}", b.snapshot());
}

#[test]
fn a_threshold_beside_it_still_opens_and_closing_starts_the_window_afresh() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("shed.threshold")
        .shed(2.0)
        .threshold(30)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    // Shedding starts at the 10th failure (min_calls), refusing nine in
    // ten; the threshold opens at the 30th admitted one all the same.
    let mut failures = 0;
    while b.state() == State::Closed {
        if !call(&b, true) {
            failures += 1;
        }
        assert!(failures <= 30);
    }
    assert_eq!(failures, 30);
    assert!(b.snapshot().shed > 0, "it shed before it opened");
    clock.advance(Duration::from_secs(1));
    assert!(!call(&b, false), "the trial");
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().shedding, 0.0, "a fresh window");
    // The failures before the open are not held against the new window.
    for _ in 0..9 {
        call(&b, true);
    }
    assert_eq!(b.snapshot().shedding, 0.0, "9 admitted since closing");
}

#[test]
fn without_a_trip_rule_it_never_opens() {
    let clock = ManualClock::new();
    let b = graded("shed.alone", 2.0, &clock);
    assert_eq!(b.config().threshold(), 0, "no threshold");
    for _ in 0..10_000 {
        call(&b, true);
        clock.advance(Duration::from_millis(1));
    }
    assert_eq!(b.state(), State::Closed);
    let s = b.snapshot();
    assert!(s.shed > 8_000 && s.failures > 900, "{s:?}");
}

#[test]
fn observe_only_counts_what_it_would_shed_and_lets_it_through() {
    let clock = ManualClock::new();
    let b = graded("shed.observe", 2.0, &clock);
    b.set_mode(Mode::ObserveOnly);
    for _ in 0..1_000 {
        assert!(!call(&b, true));
    }
    let s = b.snapshot();
    assert_eq!((s.shed, s.failures), (0, 1_000));
    assert!((800..=950).contains(&s.would_reject), "{s:?}");
}

#[test]
fn its_multiplier_changes_at_run_time_and_only_where_it_was_built() {
    let clock = ManualClock::new();
    let b = graded("shed.reconfigure", 2.0, &clock);
    for _ in 0..50 {
        call(&b, false);
    }
    for _ in 0..50 {
        call(&b, true);
    }
    assert_eq!(b.snapshot().shedding, 0.0, "100 − 2 × 50 = 0");
    b.reconfigure(&Breaker::builder().shed(1.0)).unwrap();
    call(&b, true);
    let expected = formula(101.0, 50.0, 1.0);
    assert!(
        (b.snapshot().shedding - expected).abs() < 1e-6,
        "{:?}",
        b.snapshot()
    );
    let refused = Breaker::builder()
        .build()
        .unwrap()
        .reconfigure(&Breaker::builder().shed(2.0))
        .unwrap_err();
    assert_eq!(refused.key(), "shed");
    let refused = b.reconfigure(&Breaker::builder().shed(0.5)).unwrap_err();
    assert!(refused.to_string().contains("outside [1, 10]"), "{refused}");
}

/// The rejection share at steady state against the formula: every admitted
/// call fails with probability `f`, so the window's accepted share is
/// `1 − f` and the chance settles at `1 − k(1 − f)`, in [0, 0.9]. 100 calls
/// per second for 620 s; the share shed over the last 600 s is compared.
/// The chance moves with the window's own noise: a window of about 800
/// admitted calls reads the accepted share with a standard deviation of at
/// most 0.018, so the chance's is at most 0.036 (k = 2); 60 windows
/// average that down to 0.005. The tolerance, 0.025, is five times that,
/// and far less than the 0.1 between neighbouring failure shares tried.
#[test]
fn the_share_shed_at_steady_state_is_the_formulas() {
    for (k, f) in [
        (2.0, 0.3),
        (2.0, 0.6),
        (2.0, 0.75),
        (2.0, 0.9),
        (2.0, 1.0),
        (1.5, 0.5),
        (1.2, 0.4),
    ] {
        let clock = ManualClock::new();
        let b = graded("shed.steady", k, &clock);
        let mut rng = StdRng::seed_from_u64(0x5eed ^ (f * 1000.0) as u64);
        let (mut shed, mut offered) = (0u32, 0u32);
        for i in 0..62_000 {
            let was_shed = call(&b, rng.gen_bool(f));
            if i >= 2_000 {
                offered += 1;
                shed += u32::from(was_shed);
            }
            clock.advance(Duration::from_millis(10));
        }
        let measured = f64::from(shed) / f64::from(offered);
        let expected = (1.0 - k * (1.0 - f)).clamp(0.0, 0.9);
        println!("k = {k}, f = {f}: shed {measured:.4}, formula {expected:.4}");
        assert!(
            (measured - expected).abs() < 0.025,
            "k = {k}, f = {f}: shed {measured}, formula {expected}"
        );
    }
}

/// 100 calls per second, from 1,000 s of uptime on: the shedding window
/// set to 1 s, then 10 s, then back, each change followed by an outage of
/// 30 s and a recovery. Shedding starts in each outage and stops within
/// one window (and a period) of each heal, whatever the uptime.
#[test]
fn a_window_changed_at_run_time_at_any_uptime_sheds_and_heals_in_its_own_time() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("shed.reshaped")
        .shed(2.0)
        .window_time(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    let tick = Duration::from_millis(10);
    let run = |fails: bool, d: Duration| {
        for _ in 0..d.as_millis() / 10 {
            call(&b, fails);
            clock.advance(tick);
        }
    };
    let mut uptime = Duration::from_secs(1_000);
    for secs in [10, 1, 10, 60, 1, 2, 10] {
        clock.advance(uptime.saturating_sub(clock.now()));
        let window = Duration::from_secs(secs);
        b.reconfigure(&Breaker::builder().window_time(window)).unwrap();
        run(false, Duration::from_secs(5));
        run(true, Duration::from_secs(30).max(window));
        assert!(b.snapshot().shedding > 0.5, "{secs} s at {:?}", clock.now());
        let mut healed_for = Duration::ZERO;
        while b.snapshot().shedding > 0.0 {
            call(&b, false);
            clock.advance(tick);
            healed_for += tick;
            assert!(
                healed_for <= window + window / 20 + tick,
                "window {secs} s at {:?}: still shedding {healed_for:?} after the heal",
                clock.now()
            );
        }
        uptime = uptime * 3 + Duration::from_secs(1_000_000);
    }
}
