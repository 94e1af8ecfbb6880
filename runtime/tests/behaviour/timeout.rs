//! `Breaker::call_async` on a breaker with a time limit (`Builder::timeout`):
//! a call past its limit is dropped and counted as a failure; a trial that times out reopens the breaker and its slot comes
//! back. (That a timeout counts whatever `counts` says is the attribute's,
//! tested in `tests/calls/hangs.rs`.)

use std::future::pending;
use std::time::Duration;

use failfast_runtime::{Breaker, Error, ManualClock, State, TimedOut};

const LIMIT: Duration = Duration::from_millis(10);

/// The timeout `error` is.
fn timeout_of<E: std::fmt::Debug>(error: Error<E>) -> TimedOut {
    match error {
        Error::Timeout(timed_out) => timed_out,
        other => panic!("a timeout, not {other:?}"),
    }
}

#[tokio::test]
async fn a_timeout_is_a_failure() {
    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .threshold(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        let result = breaker.call_async(pending::<Result<(), u16>>()).await;
        assert_eq!(timeout_of(result.unwrap_err()).limit(), LIMIT);
    }
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test]
async fn an_answer_in_time_is_counted_as_usual() {
    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .threshold(2)
        .build()
        .unwrap();
    let failed = breaker.call_async(async { Err::<(), u16>(503) }).await;
    assert!(matches!(failed, Err(Error::Failed(503))), "{failed:?}");
    assert_eq!(breaker.snapshot().consecutive_failures, 1);
    let ok = breaker.call_async(async { Ok::<u32, u16>(7) }).await;
    assert_eq!(ok.unwrap(), 7);
    assert_eq!(
        breaker.snapshot().consecutive_failures,
        0,
        "a success resets the count"
    );
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test]
async fn a_trial_that_times_out_reopens_and_its_slot_comes_back() {
    let clock = ManualClock::new();
    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    breaker
        .acquire()
        .unwrap()
        .record(failfast_runtime::Outcome::Failure);
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        let trial = breaker.call_async(pending::<Result<(), u16>>()).await;
        assert!(matches!(trial, Err(Error::Timeout(_))));
        let s = breaker.snapshot();
        assert_eq!((s.state, s.trials_in_flight), (State::Open, 0), "{s:?}");
    }
    clock.advance(Duration::from_secs(1));
    let healed = breaker.call_async(async { Ok::<(), u16>(()) }).await;
    assert!(healed.is_ok());
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_past_its_limit_before_it_noticed_is_a_failure() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .name("dropped-late")
        .threshold(5)
        .build()
        .unwrap();
    {
        let mut call = pin!(breaker.call_async(pending::<Result<(), u16>>()));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
        tokio::time::advance(LIMIT * 2).await;
        // Dropped here, without a poll after the limit passed.
    }
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.consecutive_failures), (1, 1), "{s:?}");
}

#[tokio::test(start_paused = true)]
async fn a_call_that_answered_is_not_also_timed_out_when_dropped_late() {
    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .name("answered-late")
        .threshold(5)
        .build()
        .unwrap();
    let answer = breaker
        .call_async(async {
            // Ready at the same poll in which the limit passes.
            tokio::time::sleep(LIMIT).await;
            Ok::<u32, u16>(1)
        })
        .await;
    // The body is polled first: its answer wins, and nothing more is counted.
    assert_eq!(answer.unwrap(), 1);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.failures), (1, 0), "{s:?}");
}

/// A breaker named at run time: every call with a time limit makes a
/// `TimedOut` up front, which carries the calling thread's copy of the name
/// (see `tests/names.rs`), not a clone of the breaker's own `Arc<str>`.
#[tokio::test]
async fn a_timeout_carries_the_threads_copy_of_a_name_built_at_run_time() {
    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .name(format!("ledger@{}", "host-2"))
        .threshold(5)
        .build()
        .unwrap();
    // The first counted call makes the breaker's per-thread slots.
    assert!(breaker.call(|| Ok::<(), u16>(())).is_ok());
    let error = breaker
        .call_async(pending::<Result<(), u16>>())
        .await
        .unwrap_err();
    let timed_out = timeout_of(error);
    assert_eq!(timed_out.name(), "ledger@host-2");
    assert_ne!(timed_out.name().as_ptr(), breaker.name().as_ptr());
}

#[tokio::test]
async fn a_timeout_names_its_breaker_and_limit() {
    use std::error::Error as _;

    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .name("ledger")
        .build()
        .unwrap();
    let error = breaker
        .call_async(pending::<Result<(), std::io::Error>>())
        .await
        .unwrap_err();
    let Error::Timeout(timed_out) = &error else {
        panic!("a timeout, not {error:?}")
    };
    assert_eq!(timed_out.name(), "ledger");
    let message = "call through circuit breaker `ledger` timed out after 10ms";
    assert_eq!(timed_out.to_string(), message);
    assert_eq!(error.to_string(), message);
    // `Error` is a transparent wrapper: its message is the timeout's, and it
    // has no source of its own.
    assert!(error.source().is_none());
}

#[test]
fn a_failed_call_shows_its_error_and_that_errors_source() {
    use std::error::Error as _;
    use std::fmt;

    #[derive(Debug)]
    struct Refused;
    impl fmt::Display for Refused {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection refused")
        }
    }
    impl std::error::Error for Refused {}

    #[derive(Debug)]
    struct Upstream(Refused);
    impl fmt::Display for Upstream {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("upstream down")
        }
    }
    impl std::error::Error for Upstream {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    let failed: Error<Upstream> = Error::Failed(Upstream(Refused));
    assert!(matches!(failed, Error::Failed(_)));
    assert_eq!(failed.to_string(), "upstream down");
    assert_eq!(failed.source().unwrap().to_string(), "connection refused");
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_before_its_limit_stays_neutral() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    let breaker = Breaker::builder()
        .timeout(LIMIT)
        .name("dropped-early")
        .threshold(1)
        .build()
        .unwrap();
    {
        let mut call = pin!(breaker.call_async(pending::<Result<(), u16>>()));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
        tokio::time::advance(LIMIT / 2).await;
    }
    let s = breaker.snapshot();
    assert_eq!(
        (s.state, s.failures, s.neutral),
        (State::Closed, 0, 1),
        "{s:?}"
    );
}

/// A timeout is counted as a failure and, on its own, as a timeout: in the
/// snapshot, and (feature `metrics`) as `outcome="timeout"`.
#[tokio::test]
async fn timeouts_are_counted_apart_as_well_as_failures() {
    let breaker = std::sync::Arc::new(
        Breaker::builder()
            .timeout(LIMIT)
            .name("timeout-totals")
            .threshold(10)
            .build()
            .unwrap(),
    );
    failfast_runtime::registry::register(&breaker);
    for _ in 0..2 {
        let _ = breaker.call_async(pending::<Result<(), u16>>()).await;
    }
    let _ = breaker.call_async(async { Err::<(), u16>(500) }).await;
    let s = breaker.snapshot();
    assert_eq!((s.timeouts, s.failures, s.calls), (2, 3, 3));

    #[cfg(feature = "metrics")]
    {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, failfast_runtime::metrics::export);
        let timeouts =
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .find_map(|(key, _, _, value)| {
                    let key = key.key();
                    let labels: Vec<(String, String)> = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    (key.name() == "failfast_calls_total"
                        && labels.contains(&("breaker".into(), "timeout-totals".into()))
                        && labels.contains(&("outcome".into(), "timeout".into())))
                    .then_some(value)
                });
        assert!(
            matches!(timeouts, Some(DebugValue::Counter(2))),
            "{timeouts:?}"
        );
    }
}

/// `call_async` reads the limit in force as each call is admitted: one
/// changed at run time applies to the next call, not the declared one.
#[tokio::test(start_paused = true)]
async fn call_async_takes_the_limit_in_force_when_the_call_starts() {
    let breaker = Breaker::builder()
        .timeout(Duration::from_secs(3600))
        .threshold(5)
        .build()
        .unwrap();
    breaker
        .reconfigure(&Breaker::builder().timeout(LIMIT))
        .unwrap();
    let error = breaker
        .call_async(pending::<Result<(), u16>>())
        .await
        .unwrap_err();
    assert_eq!(timeout_of(error).limit(), LIMIT);
    assert_eq!(breaker.snapshot().timeouts, 1);
}

/// A breaker built without a time limit never times a call out: its
/// `call_async` waits for the body however long it takes.
#[tokio::test(start_paused = true)]
async fn call_async_without_a_limit_waits_for_the_body() {
    let breaker = Breaker::builder().threshold(1).build().unwrap();
    let answer = breaker
        .call_async(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<u32, u16>(7)
        })
        .await;
    assert_eq!(answer.unwrap(), 7);
    let s = breaker.snapshot();
    assert_eq!((s.timeouts, s.timed_started, s.successes), (0, 0, 1));
}
