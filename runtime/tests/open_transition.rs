//! An open breaker on the system clock admits its trial call promptly once
//! `recovery` has elapsed, although a rejected call reads only the coarse clock.
//!
//! # The bound
//!
//! While a breaker is open, the `failfast-clock` thread publishes the time every
//! `TICK` (1 ms), and a rejected call reads the precise clock only once that
//! coarse time is within one `TICK` of the deadline. So the transition is never
//! early, and it is late by at most how far the ticker's wake-up overshoots its
//! 1 ms sleep: the timer slack plus the time the operating system takes to run
//! the woken thread. On an idle Linux machine that is tens of microseconds; on a
//! loaded one it is the scheduler's latency, a few milliseconds at worst. (The
//! trial itself is admitted by the first call after that, so a caller's own
//! interval between calls adds to it.)
//!
//! Measured on the 2-core development machine (debug build, 8 rounds each): a
//! caller calling in a loop was admitted a median of 0.6 to 1.8 µs and at most
//! 26 µs after the deadline on a quiet machine, and at most 4.2 ms while other
//! builds kept both cores busy; a caller calling every 100 µs, within its own
//! interval plus timer slack (at most 170 µs quiet, 1.9 ms loaded). The test
//! prints its figures with
//! `cargo test -p failfast-runtime --test open_transition -- --nocapture`.
//!
//! The assertion uses a bound of 250 ms, far above that, so that it cannot flake
//! on a loaded CI machine and still catches a breaker that waits for something
//! other than its deadline (a second recovery period, a ticker that never starts).

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
                permit.success();
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

/// The tests measure how late a thread is woken: run them one at a time, so
/// that two spinning callers do not keep the ticker thread off a 2-core
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
    // This breaker's 20 s open keeps the ticker running past every deadline
    // below, so their checks read a coarse time that has passed them (a
    // check that trusted it the wrong way would wait those 20 s, and fail).
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
