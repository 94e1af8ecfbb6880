//! An open breaker on the system clock admits its trial call promptly once
//! `recovery` has elapsed, although a rejected call far from its deadline
//! reads only the kernel's coarse clock.
//!
//! # The bound
//!
//! A rejected call reads the precise clock once the coarse clock is within two
//! of its resolutions of the deadline (the most it trails the precise time), so
//! the transition is never early, and the first call after the deadline is the
//! trial. How late the trial is admitted is then the caller's own interval
//! between calls plus the time the operating system keeps the caller off a CPU:
//! on a quiet machine microseconds, on a loaded one the scheduler's latency, a
//! few milliseconds at worst.
//!
//! Measured on the 2-core development machine (debug build, 8 rounds each, a
//! load average of 8 from other builds): a caller in a loop was admitted a
//! median of 13 to 36 µs and at most 3.8 ms after the deadline; a caller
//! calling every 100 µs, within its own interval plus timer slack (medians of
//! 50 to 150 µs), at most 1.9 ms. The test prints its figures with
//! `cargo test -p failfast-runtime --test behaviour open_transition:: -- --nocapture`.
//!
//! The assertion uses a bound of 250 ms, far above that, so that it cannot flake
//! on a loaded CI machine and still catches a breaker that waits for something
//! other than its deadline (a second recovery period, a coarse clock trusted
//! past the deadline).

use std::hint::spin_loop;
use std::sync::{Mutex, PoisonError};
use std::thread::sleep;
use std::time::{Duration, Instant};

use failfast_runtime::{Breaker, State};

const RECOVERY: Duration = Duration::from_millis(50);
const ROUNDS: usize = 8;
/// Generous on purpose: see the module docs for the real bound.
const BOUND: Duration = Duration::from_millis(250);

fn breaker() -> Breaker {
    Breaker::builder()
        .name("open-transition")
        .threshold(1)
        .recovery(RECOVERY)
        .build()
        .unwrap()
}

/// Trips `breaker`, then asks for a permit (calling `between` after each
/// rejection) until one is granted. Returns how long after the earliest possible
/// deadline the trial was admitted, and how many calls were rejected before.
fn lateness(breaker: &Breaker, between: impl Fn()) -> (Duration, u64) {
    let tripped = Instant::now();
    let _ = breaker.call(|| Err::<(), _>("down"));
    // Open, or already half-open if this thread stalled past `recovery`.
    assert_ne!(breaker.state(), State::Closed, "one failure should trip it");
    let mut rejections = 0u64;
    let admitted = loop {
        match breaker.acquire() {
            Ok(permit) => {
                let at = Instant::now();
                permit.record(failfast_runtime::Outcome::Success);
                break at;
            }
            Err(rejected) => {
                assert_eq!(rejected.state(), State::Open);
                rejections += 1;
                between();
            }
        }
    };
    assert_eq!(
        breaker.state(),
        State::Closed,
        "the trial should have closed it"
    );
    // The deadline was set after `tripped`, so this is never early, and the
    // difference is an upper bound on how late the transition was.
    let due = tripped + RECOVERY;
    assert!(admitted >= due, "admitted {:?} early", due - admitted);
    (admitted - due, rejections)
}

/// The tests measure how late a caller sees the deadline: run them one at a
/// time, so that two spinning callers do not keep each other off a 2-core
/// machine's cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check(what: &str, between: impl Fn()) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let b = breaker();
    let rounds: Vec<_> = (0..ROUNDS).map(|_| lateness(&b, &between)).collect();
    assert!(
        rounds.iter().any(|r| r.1 > 0),
        "{what}: the breaker never rejected a call while open"
    );
    let mut late: Vec<Duration> = rounds.iter().map(|r| r.0).collect();
    late.sort();
    let (median, max) = (late[ROUNDS / 2], late[ROUNDS - 1]);
    println!(
        "Open -> HalfOpen lateness, {what}: median {median:?}, max {max:?} over {ROUNDS} rounds"
    );
    assert!(
        max < BOUND,
        "{what}: the trial was admitted {max:?} after recovery (bound {BOUND:?}); all: {late:?}"
    );
}

#[test]
fn trial_is_admitted_promptly_under_a_stream_of_calls() {
    check("caller spinning", spin_loop);
}

#[test]
fn trial_is_admitted_promptly_under_sparse_calls() {
    check("caller every 100 µs", || sleep(Duration::from_micros(100)));
}

#[test]
fn a_long_open_elsewhere_does_not_delay_a_short_one() {
    // This breaker's 20 s open keeps its own deadline far ahead of every
    // deadline below: a check that compared the coarse time with the wrong
    // deadline would wait those 20 s, and fail.
    let long = Breaker::builder()
        .name("open-transition-long")
        .threshold(1)
        .recovery(Duration::from_secs(20))
        .build()
        .unwrap();
    let _ = long.call(|| Err::<(), _>("down"));
    assert_eq!(long.state(), State::Open);
    check(
        "another breaker open for 20 s, caller every 100 µs",
        || {
            sleep(Duration::from_micros(100));
        },
    );
    assert_eq!(long.state(), State::Open, "and that one stays open");
}
