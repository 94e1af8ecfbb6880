//! Growing open time through the public builder: `max_recovery` doubles the open
//! period on each reopen without a healthy pause, each full `recovery` of healthy
//! closed time takes one doubling back, `jitter` spreads each period, and
//! `Rejected::retry_after()` is always exactly the time until a trial is admitted.

use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ManualClock, State};

const NS: Duration = Duration::from_nanos(1);
const SEC: Duration = Duration::from_secs(1);

fn builder(clock: &ManualClock) -> Builder {
    Breaker::builder()
        .threshold(1)
        .recovery(SEC)
        .clock(clock.clone())
}

fn fail(b: &Breaker) {
    let r = b.call(|| Err::<(), _>("down"));
    assert!(matches!(r, Err(failfast_runtime::Error::Failed(_))));
    assert_eq!(b.state(), State::Open);
}

fn succeed(b: &Breaker) {
    b.call(|| Ok::<_, ()>(())).expect("admitted");
}

/// Waits out the open period of an open breaker and returns how long it was,
/// checking on the way that `retry_after` is exact: 1 ns before it the breaker
/// still rejects, at it a trial is admitted (the trial itself is left to the
/// caller).
fn wait_out(b: &Breaker, clock: &ManualClock) -> Duration {
    let rejected = b.acquire().expect_err("the breaker should be open");
    assert_eq!(rejected.state(), State::Open);
    let retry = rejected
        .retry_after()
        .expect("an open breaker knows its next trial");
    assert_eq!(b.snapshot().retry_after, Some(retry));
    assert!(retry > Duration::ZERO);
    clock.advance(retry - NS);
    let again = b.acquire().expect_err("1 ns early");
    assert_eq!(again.retry_after(), Some(NS), "retry_after counts down");
    assert_eq!(b.state(), State::Open);
    clock.advance(NS);
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "a trial is admitted at retry_after"
    );
    retry
}

/// Waits out the open period and fails the trial; returns the period.
fn failed_round(b: &Breaker, clock: &ManualClock) -> Duration {
    let period = wait_out(b, clock);
    fail(b);
    period
}

/// Waits out the open period and lets the trial succeed; returns the period.
fn healed_round(b: &Breaker, clock: &ManualClock) -> Duration {
    let period = wait_out(b, clock);
    succeed(b);
    assert_eq!(b.state(), State::Closed);
    period
}

fn secs(periods: &[Duration]) -> Vec<f64> {
    periods.iter().map(Duration::as_secs_f64).collect()
}

#[test]
fn without_max_recovery_every_open_lasts_recovery() {
    let clock = ManualClock::new();
    let b = builder(&clock).build().unwrap();
    fail(&b);
    for _ in 0..10 {
        assert_eq!(failed_round(&b, &clock), SEC);
    }
    assert_eq!(healed_round(&b, &clock), SEC);
    fail(&b);
    assert_eq!(wait_out(&b, &clock), SEC);
}

/// Without jitter an open period is `recovery` to the nanosecond, however
/// long: past 2^53 ns (104 days) a period is no longer whole in an `f64`,
/// and one worked out through the jitter's arithmetic would be 1 ns short.
#[test]
fn without_jitter_a_long_recovery_is_kept_to_the_nanosecond() {
    let clock = ManualClock::new();
    let recovery = Duration::from_nanos((1 << 53) + 1);
    let b = builder(&clock).recovery(recovery).build().unwrap();
    fail(&b);
    assert_eq!(failed_round(&b, &clock), recovery);
    assert_eq!(healed_round(&b, &clock), recovery);
}

#[test]
fn open_time_doubles_on_consecutive_failed_trials_up_to_max_recovery() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(10))
        .build()
        .unwrap();
    fail(&b);
    let periods: Vec<_> = (0..7).map(|_| failed_round(&b, &clock)).collect();
    assert_eq!(secs(&periods), [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]);
}

#[test]
fn max_recovery_equal_to_recovery_never_grows() {
    let clock = ManualClock::new();
    let b = builder(&clock).max_recovery(SEC).build().unwrap();
    fail(&b);
    for _ in 0..5 {
        assert_eq!(failed_round(&b, &clock), SEC);
    }
}

#[test]
fn open_time_keeps_growing_while_the_breaker_flaps() {
    // Reopening right after closing is not a healthy pause: the growth goes on.
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(64))
        .build()
        .unwrap();
    fail(&b);
    let mut periods = Vec::new();
    for _ in 0..4 {
        periods.push(healed_round(&b, &clock));
        clock.advance(SEC - NS); // closed for less than one `recovery`
        fail(&b);
    }
    periods.push(wait_out(&b, &clock));
    assert_eq!(secs(&periods), [1.0, 2.0, 4.0, 8.0, 16.0]);
}

#[test]
fn open_time_decays_one_step_per_recovery_of_healthy_closed_time() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(64))
        .build()
        .unwrap();
    fail(&b);
    // 1, 2, 4, 8 s: the next open would last 16 s.
    for expected in [1, 2, 4] {
        assert_eq!(failed_round(&b, &clock), SEC * expected);
    }
    assert_eq!(healed_round(&b, &clock), SEC * 8);

    // Healthy for 2 × recovery: two steps back, 16 → 4 s.
    clock.advance(SEC * 2);
    fail(&b);
    assert_eq!(healed_round(&b, &clock), SEC * 4);
    // Next would be 8 s; healthy for 1 × recovery (to the nanosecond): 4 s.
    clock.advance(SEC);
    fail(&b);
    assert_eq!(healed_round(&b, &clock), SEC * 4);
    // Next would be 8 s; healthy for 1 ns less than a recovery: no decay.
    clock.advance(SEC - NS);
    fail(&b);
    assert_eq!(healed_round(&b, &clock), SEC * 8);
    // A long healthy spell takes it all the way back to `recovery`, never below.
    clock.advance(Duration::from_secs(3600));
    fail(&b);
    assert_eq!(healed_round(&b, &clock), SEC);
    clock.advance(Duration::from_secs(3600));
    fail(&b);
    assert_eq!(wait_out(&b, &clock), SEC);
}

#[test]
fn decay_counts_closed_time_only() {
    // Time spent open or half-open is not healthy time.
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(64))
        .build()
        .unwrap();
    fail(&b);
    for expected in [1, 2, 4, 8] {
        assert_eq!(failed_round(&b, &clock), SEC * expected);
    }
    // A long half-open trial (100 s) that finally fails: still growing.
    assert!(b.acquire().is_err(), "open for 16 s");
    clock.advance(Duration::from_secs(16));
    let trial = b.acquire().expect("trial");
    clock.advance(Duration::from_secs(100));
    trial.record(failfast_runtime::Outcome::Failure);
    assert_eq!(wait_out(&b, &clock), SEC * 32);
}

#[test]
fn reset_restarts_the_growth() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(64))
        .build()
        .unwrap();
    fail(&b);
    for _ in 0..4 {
        failed_round(&b, &clock);
    }
    b.set_mode(failfast_runtime::Mode::Normal);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(wait_out(&b, &clock), SEC);
}

#[test]
fn retry_after_counts_down_while_open() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .recovery(Duration::from_secs(10))
        .build()
        .unwrap();
    fail(&b);
    clock.advance(Duration::from_millis(3250));
    let rejected = b.acquire().expect_err("open");
    assert_eq!(rejected.retry_after(), Some(Duration::from_millis(6750)));
    assert_eq!(b.snapshot().retry_after, Some(Duration::from_millis(6750)));
}

/// Collects `rounds` open periods of a breaker whose trials keep failing.
fn failed_periods(b: &Breaker, clock: &ManualClock, rounds: usize) -> Vec<Duration> {
    fail(b);
    (0..rounds).map(|_| failed_round(b, clock)).collect()
}

#[test]
fn jitter_spreads_each_open_period_within_plus_minus_jitter() {
    const ROUNDS: usize = 400;
    let recovery = Duration::from_secs(10);
    let jitter = 0.2;
    let clock = ManualClock::new();
    let b = builder(&clock)
        .recovery(recovery)
        .jitter(jitter)
        .build()
        .unwrap();
    // `wait_out` checks that each jittered `retry_after` is exact.
    let periods = secs(&failed_periods(&b, &clock, ROUNDS));
    let (lo, hi) = (10.0 * (1.0 - jitter), 10.0 * (1.0 + jitter));
    for p in &periods {
        assert!((lo..=hi).contains(p), "{p} s outside [{lo}, {hi}]");
    }
    let min = periods.iter().copied().fold(f64::INFINITY, f64::min);
    let max = periods.iter().copied().fold(0.0, f64::max);
    // Uniform over ±2 s: 400 draws all inside ±1 s has probability 2^-400.
    assert!(min < 9.0 && max > 11.0, "not spread: [{min}, {max}]");
    // Centred on the nominal period: a uniform over ±2 s has standard deviation
    // 2/√3 s, so the mean of 400 has standard error 0.058 s; allow 5 of them.
    let mean = periods.iter().sum::<f64>() / ROUNDS as f64;
    assert!(
        (mean - 10.0).abs() < 5.0 * (2.0 / 3f64.sqrt()) / (ROUNDS as f64).sqrt(),
        "mean {mean}"
    );
}

#[test]
fn jitter_applies_to_the_grown_period() {
    let clock = ManualClock::new();
    let jitter = 0.5;
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(8))
        .jitter(jitter)
        .build()
        .unwrap();
    for _ in 0..20 {
        b.set_mode(failfast_runtime::Mode::Normal);
        let periods = secs(&failed_periods(&b, &clock, 6));
        for (p, nominal) in periods.iter().zip([1.0, 2.0, 4.0, 8.0, 8.0, 8.0]) {
            assert!(
                (nominal * (1.0 - jitter)..=nominal * (1.0 + jitter)).contains(p),
                "{p} s is not within ±{jitter} of {nominal} s ({periods:?})"
            );
        }
    }
}

#[test]
fn breakers_with_jitter_do_not_probe_in_lockstep() {
    let clock = ManualClock::new();
    let fleet: Vec<_> = (0..10)
        .map(|_| {
            builder(&clock)
                .recovery(Duration::from_secs(10))
                .jitter(0.1)
                .build()
                .unwrap()
        })
        .collect();
    for b in &fleet {
        fail(b);
    }
    let mut retries: Vec<_> = fleet
        .iter()
        .map(|b| b.acquire().unwrap_err().retry_after().unwrap())
        .collect();
    retries.sort();
    retries.dedup();
    assert!(
        retries.len() > 1,
        "ten instances, one probe instant: {retries:?}"
    );
}

/// At the cap the level stops rising, so one healthy `recovery` takes the open
/// time one step below the cap again, however many opens hit the cap.
#[test]
fn opens_at_the_cap_do_not_pile_up_levels() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .max_recovery(Duration::from_secs(4))
        .build()
        .unwrap();
    fail(&b);
    let periods: Vec<_> = (0..6).map(|_| failed_round(&b, &clock)).collect();
    assert_eq!(secs(&periods), [1.0, 2.0, 4.0, 4.0, 4.0, 4.0]);
    assert_eq!(healed_round(&b, &clock), SEC * 4);
    clock.advance(SEC);
    fail(&b);
    assert_eq!(wait_out(&b, &clock), SEC * 2, "one step below the cap");
}

/// A dependency down for `outage`, called every 100 ms, then healthy: when
/// (after it healed) the breaker is Closed again, and how many calls reached
/// the dependency while it was down.
fn close_after_outage(builder: Builder, clock: &ManualClock, outage: Duration) -> (Duration, u32) {
    let b = builder.threshold(5).clock(clock.clone()).build().unwrap();
    let step = Duration::from_millis(100);
    let mut t = Duration::ZERO;
    while t < outage {
        let _ = b.call(|| Err::<(), _>("down"));
        clock.advance(step);
        t += step;
    }
    // Every call that reached the dependency failed; the others were refused.
    let reached = u32::try_from(b.snapshot().failures).unwrap();
    let healed = t;
    while b.state() != State::Closed || b.snapshot().successes == 0 {
        let _ = b.call(|| Ok::<_, ()>(()));
        clock.advance(step);
        t += step;
        assert!(t < outage + Duration::from_secs(120), "never closed");
    }
    (t - healed, reached)
}

/// The settings the guide gives for closing within seconds of healing:
/// `recovery = "1s..4s"` finds a healed dependency within 4 s of its
/// recovery however long the outage was, where a fixed 30 s can take up to
/// 30 s; the price is a trial every 4 s at most while it is down.
#[test]
fn a_short_growing_recovery_closes_within_its_cap_after_a_long_outage() {
    // Ends 10 s after the classic breaker's fifth trial (at 150.4 s), so
    // its sixth is 20 s away; the fast one's is at most 4 s away, whenever
    // the outage ends.
    let outage = Duration::from_secs(160);
    let clock = ManualClock::new();
    let (fast, fast_trials) = close_after_outage(
        Breaker::builder().recovery(SEC).max_recovery(4 * SEC),
        &clock,
        outage,
    );
    let clock = ManualClock::new();
    let (classic, classic_trials) =
        close_after_outage(Breaker::builder().recovery(30 * SEC), &clock, outage);
    // Within the cap (and the 100 ms between calls) of healing.
    assert!(fast <= 4 * SEC + Duration::from_millis(100), "{fast:?}");
    // The classic one waits out its 30 s period, here most of it.
    assert!(
        classic > 4 * SEC + Duration::from_millis(100),
        "{classic:?}"
    );
    // The price: the 5 failures that opened it at 0.4 s, then one trial per
    // open period. Classic: at 30.4, 60.4, …, 150.4 s. Fast: at 1.4 and 3.4 s
    // (open 1 s, then 2 s), then every 4 s from 7.4 s to 159.4 s (39).
    assert_eq!(classic_trials, 5 + 5);
    assert_eq!(fast_trials, 5 + 2 + 39);
}
