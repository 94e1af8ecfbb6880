//! The adaptive concurrency limit (`Builder::adaptive_concurrency`): AIMD on
//! the calls' outcomes between its least and most places, never more calls
//! at once than the limit, and every place given back on every path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use failfast_runtime::__private::Bulkhead;
use failfast_runtime::{Breaker, ManualClock, Mode, Outcome, Reason, State};

fn adaptive(name: &'static str, least: u32, most: u32) -> Breaker {
    Breaker::builder()
        .name(name)
        .adaptive_concurrency(least, most)
        .threshold(1_000_000)
        .build()
        .unwrap()
}

fn limit(b: &Breaker) -> u32 {
    b.snapshot().concurrency_limit.expect("an adaptive limit")
}

#[test]
fn failures_cut_the_limit_by_a_tenth_down_to_its_least() {
    let b = adaptive("adaptive.decrease", 5, 100);
    assert_eq!(limit(&b), 100, "it starts at its most");
    let mut expected = 100;
    for _ in 0..40 {
        b.acquire().unwrap().record(Outcome::Failure);
        expected = (expected * 9 / 10).max(5);
        assert_eq!(limit(&b), expected);
    }
    assert_eq!(limit(&b), 5);
    // Neutral outcomes move nothing.
    for _ in 0..10 {
        b.acquire().unwrap().record(Outcome::Neutral);
    }
    assert_eq!(limit(&b), 5);
}

#[test]
fn successes_raise_it_by_one_only_while_half_of_it_is_in_use() {
    let b = adaptive("adaptive.increase", 4, 10);
    for _ in 0..20 {
        b.acquire().unwrap().record(Outcome::Failure);
    }
    assert_eq!(limit(&b), 4);
    // One call at a time uses a quarter of it: no raise.
    for _ in 0..100 {
        b.acquire().unwrap().record(Outcome::Success);
    }
    assert_eq!(limit(&b), 4, "lightly used: no drift up");
    // Two at once use half: each success raises it.
    let first = b.acquire().unwrap();
    b.acquire().unwrap().record(Outcome::Success);
    assert_eq!(limit(&b), 5);
    // The limit filled: the next call is refused, and counted as rejected.
    let held: Vec<_> = (0..4).map(|_| b.acquire().unwrap()).collect();
    let refused = b.acquire().unwrap_err();
    assert_eq!(
        (refused.reason(), refused.state()),
        (Reason::ConcurrencyLimit, State::Closed)
    );
    assert_eq!(b.snapshot().rejected, 1);
    // Five running: each success raises it while they are half of it.
    first.record(Outcome::Success);
    assert_eq!(limit(&b), 6, "5 of 5 in use");
    let mut held = held.into_iter();
    held.next().unwrap().record(Outcome::Success);
    assert_eq!(limit(&b), 7, "4 of 6 in use");
    held.next().unwrap().record(Outcome::Success);
    assert_eq!(limit(&b), 7, "3 of 7 in use: under half");
    drop(held);
    // Used to the full, round after round: up to its most, no further.
    for _ in 0..10 {
        let all: Vec<_> = (0..limit(&b)).map(|_| b.acquire().unwrap()).collect();
        for permit in all {
            permit.record(Outcome::Success);
        }
    }
    assert_eq!(limit(&b), 10);
}

#[test]
fn every_way_a_call_ends_gives_its_place_back() {
    let b = adaptive("adaptive.paths", 1, 1);
    b.acquire().unwrap().record(Outcome::Success);
    drop(b.acquire().unwrap());
    let _ = b.call(|| Err::<(), _>("down"));
    let _ = std::panic::catch_unwind(|| b.call(|| -> Result<(), ()> { panic!("boom") }));
    // A permit a full bulkhead refuses gives its place back too.
    let bulkhead = Bulkhead::new(0);
    let mut permit = b.acquire().unwrap();
    assert!(bulkhead.enter(&b, &mut permit).is_err());
    drop(permit);
    // The one place is free: a call is admitted, and the next one refused.
    let held = b.acquire().expect("the place was given back every time");
    assert!(b.acquire().is_err());
    drop(held);
    assert!(b.acquire().is_ok());
}

#[test]
fn trials_take_no_place_and_forced_closed_calls_none() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("adaptive.trials")
        .adaptive_concurrency(1, 1)
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.acquire().unwrap().record(Outcome::Failure);
    clock.advance(Duration::from_secs(1));
    let trial = b.acquire().unwrap();
    assert!(trial.is_trial());
    trial.record(Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    let held = b.acquire().expect("the trial held no place");
    assert!(b.acquire().is_err());
    drop(held);
    b.set_mode(Mode::ForcedClosed);
    let forced: Vec<_> = (0..5).map(|_| b.acquire().unwrap()).collect();
    drop(forced);
    b.set_mode(Mode::Normal);
    let held = b.acquire().expect("forced-closed calls held no place");
    assert!(b.acquire().is_err());
    drop(held);
}

#[test]
fn observe_only_counts_what_it_would_refuse_and_lets_it_through() {
    let b = adaptive("adaptive.observe", 2, 2);
    b.set_mode(Mode::ObserveOnly);
    let held: Vec<_> = (0..5).map(|_| b.acquire().unwrap()).collect();
    assert_eq!(b.snapshot().would_reject, 3);
    drop(held);
    b.set_mode(Mode::Normal);
    let held: Vec<_> = (0..2).map(|_| b.acquire().unwrap()).collect();
    assert!(b.acquire().is_err(), "every place given back, no more");
    drop(held);
}

#[test]
fn calls_an_observe_only_breaker_would_have_refused_give_back_no_place() {
    let b = Breaker::builder()
        .name("adaptive.observed")
        .adaptive_concurrency(1, 1)
        .threshold(1)
        .build()
        .unwrap();
    b.set_mode(Mode::ObserveOnly);
    b.acquire().unwrap().record(Outcome::Failure);
    // Open, observe-only: let through, holding no place, giving none back.
    for _ in 0..3 {
        b.acquire().unwrap().record(Outcome::Success);
    }
    assert_eq!(b.snapshot().would_reject, 3);
    b.set_mode(Mode::Normal);
    let held = b.acquire().expect("the one place is free");
    assert!(b.acquire().is_err(), "and there is only one");
    drop(held);
}

/// Eight threads call at once, each call failing one time in five (the
/// limit keeps moving): at no moment are more calls running than the limit
/// read before each admission allows, nor more than the most places; when
/// they are done every place is free again.
#[test]
fn threads_never_run_more_calls_than_the_most_places() {
    let b = Arc::new(adaptive("adaptive.threads", 2, 6));
    let running = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let (b, running, peak) = (b.clone(), running.clone(), peak.clone());
            std::thread::spawn(move || {
                let mut refused = 0;
                for i in 0..20_000u32 {
                    let Ok(permit) = b.acquire() else {
                        refused += 1;
                        continue;
                    };
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::hint::spin_loop();
                    running.fetch_sub(1, Ordering::SeqCst);
                    permit.record(if (i + t) % 5 == 0 {
                        Outcome::Failure
                    } else {
                        Outcome::Success
                    });
                }
                refused
            })
        })
        .collect();
    let refused: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 6, "{peak} calls at once");
    println!("peak {peak}, refused {refused}, limit now {}", limit(&b));
    // Every place is free: as many calls as the limit are admitted at once.
    let n = limit(&b);
    let held: Vec<_> = (0..n).map(|_| b.acquire().unwrap()).collect();
    assert!(b.acquire().is_err());
    drop(held);
}
