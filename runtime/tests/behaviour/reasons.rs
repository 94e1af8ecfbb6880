//! Every refusal says why: open, half-open trials in flight, forced open,
//! shed, the adaptive limit.
//! (The concurrency limit is `tests/calls/bulkhead.rs`'s, at the facade.)

use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, ManualClock, Reason, State};

#[test]
fn each_refusal_carries_its_reason() {
    let clock = ManualClock::new();
    let breaker = Breaker::builder()
        .name("reasons")
        .threshold(1)
        .recovery(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    breaker
        .acquire()
        .unwrap()
        .record(failfast_runtime::Outcome::Failure);

    let open = breaker.acquire().unwrap_err();
    assert_eq!((open.state(), open.reason()), (State::Open, Reason::Open));
    assert_ne!(open.reason(), Reason::ConcurrencyLimit);
    assert_eq!(open.retry_after(), Some(Duration::from_secs(10)));

    clock.advance(Duration::from_secs(10));
    let trial = breaker.acquire().expect("the trial");
    let busy = breaker.acquire().unwrap_err();
    assert_eq!(
        (busy.state(), busy.reason()),
        (State::HalfOpen, Reason::TrialsInFlight)
    );
    assert_eq!(
        busy.to_string(),
        "circuit breaker `reasons` is half-open: its trial calls are in flight"
    );
    trial.record(failfast_runtime::Outcome::Success);

    breaker.set_mode(Mode::ForcedOpen);
    let forced = breaker.acquire().unwrap_err();
    assert_eq!(
        (forced.state(), forced.reason()),
        (State::Open, Reason::ForcedOpen)
    );
    assert_eq!(forced.retry_after(), None);
    assert_eq!(forced.reason().to_string(), "forced open");
}

#[test]
fn a_full_bulkhead_refuses_at_the_concurrency_limit_and_counts_a_rejection() {
    use failfast_runtime::__private::Bulkhead;

    let breaker = Breaker::builder().name("reasons-bulkhead").build().unwrap();
    let bulkhead = Bulkhead::new(2);
    assert_eq!(bulkhead.max(), 2);
    let mut first = breaker.acquire().unwrap();
    let mut second = breaker.acquire().unwrap();
    let _a = bulkhead.enter(&breaker, &mut first).unwrap();
    let _b = bulkhead.enter(&breaker, &mut second).unwrap();
    assert_eq!(bulkhead.running(), 2);

    let mut third = breaker.acquire().unwrap();
    let refused = bulkhead.enter(&breaker, &mut third).unwrap_err();
    assert_eq!(refused.reason(), Reason::ConcurrencyLimit);
    assert_eq!(
        (refused.state(), refused.reason()),
        (State::Closed, Reason::ConcurrencyLimit)
    );
    drop(third);
    let s = breaker.snapshot();
    assert_eq!((s.rejected, s.neutral), (1, 0), "{s:?}");
}

#[test]
fn a_refusal_by_shedding_or_the_adaptive_limit_says_so() {
    let shedding = Breaker::builder()
        .name("reasons.shed")
        .shed(2.0)
        .build()
        .unwrap();
    for _ in 0..10 {
        shedding
            .acquire()
            .unwrap()
            .record(failfast_runtime::Outcome::Failure);
    }
    let shed = loop {
        if let Err(rejected) = shedding.acquire() {
            break rejected;
        }
    };
    assert_eq!(shed.reason(), Reason::Shed);
    assert_eq!(
        shed.to_string(),
        "circuit breaker `reasons.shed` is shedding load: call not attempted"
    );
    let limited = Breaker::builder()
        .name("reasons.limit")
        .adaptive_concurrency(1, 1)
        .build()
        .unwrap();
    let _held = limited.acquire().unwrap();
    let refused = limited.acquire().unwrap_err();
    assert_eq!(
        refused.to_string(),
        "circuit breaker `reasons.limit` is at its concurrency limit: call not attempted"
    );
    assert_eq!(
        std::io::Error::from(refused).kind(),
        std::io::ErrorKind::ResourceBusy
    );
    assert_eq!(
        std::io::Error::from(shed).kind(),
        std::io::ErrorKind::ResourceBusy
    );
}
