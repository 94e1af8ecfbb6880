//! `Breaker::call_timeout`: a call past its limit is dropped and counted as a
//! failure, whatever the classifier says; a trial that times out reopens the
//! breaker and its slot comes back.

use std::future::pending;
use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, State};

const LIMIT: Duration = Duration::from_millis(10);

#[tokio::test]
async fn a_timeout_is_a_failure_whatever_counts_says() {
    let breaker = Breaker::builder().threshold(2).build().unwrap();
    for _ in 0..2 {
        let result = breaker
            .call_timeout_with(|_: &u16| false, LIMIT, pending::<Result<(), u16>>())
            .await;
        let error = result.unwrap_err();
        assert!(error.is_timeout(), "{error:?}");
        assert_eq!(error.timed_out().unwrap().limit(), LIMIT);
    }
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test]
async fn an_answer_in_time_is_classified_as_usual() {
    let breaker = Breaker::builder().threshold(1).build().unwrap();
    let neutral = breaker
        .call_timeout_with(|_: &u16| false, LIMIT, async { Err::<(), u16>(400) })
        .await;
    assert_eq!(neutral.unwrap_err().failed(), Some(&400));
    assert_eq!(breaker.snapshot().consecutive_failures, 0);
    let ok = breaker
        .call_timeout(LIMIT, async { Ok::<u32, u16>(7) })
        .await;
    assert_eq!(ok.unwrap(), 7);
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test]
async fn a_trial_that_times_out_reopens_and_its_slot_comes_back() {
    let clock = ManualClock::new();
    let breaker = Breaker::builder()
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    breaker.acquire().unwrap().failure();
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        let trial = breaker
            .call_timeout(LIMIT, pending::<Result<(), u16>>())
            .await;
        assert!(trial.unwrap_err().is_timeout());
        let s = breaker.snapshot();
        assert_eq!((s.state, s.trials_in_flight), (State::Open, 0), "{s:?}");
    }
    clock.advance(Duration::from_secs(1));
    let healed = breaker
        .call_timeout(LIMIT, async { Ok::<(), u16>(()) })
        .await;
    assert!(healed.is_ok());
    assert_eq!(breaker.state(), State::Closed);
}
