//! `counts_ok`: an `Ok` the function returns counted as a failure, by a
//! pattern, a predicate or a classifier. It opens the breaker, reaches the
//! fallback as `Error::CountedOk`, reaches the caller unchanged without
//! one, reopens a half-open breaker, and is retried by `#[retry]` as the
//! failure it is; an `Ok` not matched is a success. The same on a permit
//! (`Permit::record`). A binary of its own: its breakers run
//! on one `ManualClock`, installed for the whole binary. One test advances
//! it, by a minute, to take `counts_ok::async` through recovery; every
//! other breaker here stays open for an hour, so that the tests running
//! meanwhile still find their breakers open.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use failfast::{
    Breaker, Error, ManualClock, Rejected, Snapshot, State, TimedOut, circuit_breaker, registry,
    retry, testing,
};

static CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

fn clock() -> &'static ManualClock {
    testing::install_clock(&CLOCK);
    &CLOCK
}

fn snapshot(name: &str) -> Snapshot {
    registry::get(name).expect("registered").snapshot()
}

/// What a client gets back: an answer with a status, even a 503; or what a
/// fallback answered instead, saying what it was given.
#[derive(Clone, Debug, PartialEq)]
enum Reply {
    Stock(u32),
    Unavailable { status: u16 },
    Fallback(String),
}

#[derive(Debug, PartialEq)]
enum ApiError {
    Transport,
    Refused(State),
    TimedOut,
}

impl From<Rejected> for ApiError {
    fn from(rejected: Rejected) -> Self {
        ApiError::Refused(rejected.state())
    }
}

impl From<TimedOut> for ApiError {
    fn from(_: TimedOut) -> Self {
        ApiError::TimedOut
    }
}

/// The dependency's answer: 200 is stock, 0 a transport error, any other
/// status an `Ok` answer with that status.
fn answer(status: u16) -> Result<Reply, ApiError> {
    match status {
        200 => Ok(Reply::Stock(7)),
        0 => Err(ApiError::Transport),
        status => Ok(Reply::Unavailable { status }),
    }
}

/// A fallback's answer: what it was given, as a word.
fn given(error: &Error<ApiError, Reply>) -> Reply {
    Reply::Fallback(match error {
        Error::CountedOk(Reply::Unavailable { status }) => format!("counted {status}"),
        Error::CountedOk(other) => format!("counted {other:?}"),
        Error::Failed(e) => format!("failed {e:?}"),
        Error::Rejected(r) => format!("rejected {}", r.state()),
        Error::Timeout(_) => "timeout".to_owned(),
        _ => "other".to_owned(),
    })
}

fn fallback(word: &str) -> Result<Reply, ApiError> {
    Ok(Reply::Fallback(word.to_owned()))
}

mod sync_with_a_fallback {
    use super::*;

    fn cached(status: u16, error: Error<ApiError, Reply>) -> Result<Reply, ApiError> {
        let _ = status;
        Ok(given(&error))
    }

    #[circuit_breaker(
        threshold = 2,
        recovery = "1h",
        counts_ok = Reply::Unavailable { status: 500..=599 },
        fallback = cached,
        name = "counts_ok::sync"
    )]
    fn stock(status: u16) -> Result<Reply, ApiError> {
        answer(status)
    }

    /// A 503 answered as `Ok` goes to the fallback as `CountedOk` and
    /// counts; two open the breaker; then the fallback gets refusals. A
    /// 404 answered as `Ok` is not matched: a success.
    #[test]
    fn a_counted_ok_reaches_the_fallback_and_opens_the_breaker() {
        clock();
        assert_eq!(stock(200), Ok(Reply::Stock(7)));
        assert_eq!(stock(503), fallback("counted 503"));
        assert_eq!(snapshot("counts_ok::sync").consecutive_failures, 1);
        assert_eq!(stock(404), Ok(Reply::Unavailable { status: 404 }));
        assert_eq!(
            snapshot("counts_ok::sync").consecutive_failures,
            0,
            "an `Ok` not matched is a success"
        );
        assert_eq!(stock(503), fallback("counted 503"));
        assert_eq!(snapshot("counts_ok::sync").state, State::Closed);
        assert_eq!(stock(502), fallback("counted 502"));
        assert_eq!(snapshot("counts_ok::sync").state, State::Open);
        assert_eq!(stock(200), fallback("rejected open"));
        let seen = snapshot("counts_ok::sync");
        assert_eq!((seen.successes, seen.failures, seen.rejected), (2, 3, 1));
    }
}

mod async_with_a_closure_fallback {
    use super::*;

    #[circuit_breaker(
        threshold = 2,
        recovery = "30s",
        counts_ok = |reply: &Reply| matches!(reply, Reply::Unavailable { status } if *status >= 500),
        fallback = |error| async move { Ok(given(&error)) },
        name = "counts_ok::async"
    )]
    async fn stock(status: u16) -> Result<Reply, ApiError> {
        tokio::task::yield_now().await;
        answer(status)
    }

    /// The same through an `async fn`, with a predicate and a closure
    /// fallback (whose parameter's type comes from the attribute); then,
    /// after `recovery`, a counted `Ok` of the trial reopens the breaker,
    /// and a trial answering stock closes it.
    #[tokio::test]
    async fn a_counted_ok_opens_the_breaker_and_reopens_it_from_half_open() {
        let clock = clock();
        assert_eq!(stock(503).await, fallback("counted 503"));
        assert_eq!(stock(0).await, fallback("failed Transport"));
        assert_eq!(snapshot("counts_ok::async").state, State::Open);
        clock.advance(Duration::from_secs(30));
        assert_eq!(snapshot("counts_ok::async").state, State::HalfOpen);
        assert_eq!(stock(500).await, fallback("counted 500"));
        assert_eq!(
            snapshot("counts_ok::async").state,
            State::Open,
            "the trial's counted `Ok` reopens"
        );
        assert_eq!(stock(200).await, fallback("rejected open"));
        clock.advance(Duration::from_secs(30));
        assert_eq!(stock(200).await, Ok(Reply::Stock(7)));
        assert_eq!(snapshot("counts_ok::async").state, State::Closed);
    }
}

mod without_a_fallback {
    use super::*;

    #[circuit_breaker(
        threshold = 2,
        recovery = "1h",
        counts_ok = Reply::Unavailable { .. },
        name = "counts_ok::plain"
    )]
    fn stock(status: u16) -> Result<Reply, ApiError> {
        answer(status)
    }

    /// Without a fallback the counted `Ok` reaches the caller as it was
    /// returned, and was counted: two of them open the breaker, whose
    /// refusal is the function's error.
    #[test]
    fn a_counted_ok_reaches_the_caller_unchanged_and_counts() {
        clock();
        assert_eq!(stock(503), Ok(Reply::Unavailable { status: 503 }));
        assert_eq!(snapshot("counts_ok::plain").failures, 1);
        assert_eq!(stock(504), Ok(Reply::Unavailable { status: 504 }));
        assert_eq!(snapshot("counts_ok::plain").state, State::Open);
        assert_eq!(stock(200), Err(ApiError::Refused(State::Open)));
    }
}

mod with_timeout {
    use super::*;

    #[circuit_breaker(
        threshold = 5,
        recovery = "1h",
        timeout = "1s",
        counts_ok = Reply::Unavailable { .. },
        fallback = |error| async move { Ok(given(&error)) },
        name = "counts_ok::timeout"
    )]
    async fn stock(status: u16, delay: Duration) -> Result<Reply, ApiError> {
        tokio::time::sleep(delay).await;
        answer(status)
    }

    /// With `timeout`, an `Ok` returned in time is judged by `counts_ok`;
    /// a call past the limit is a timeout, whatever it would have returned.
    #[tokio::test(start_paused = true)]
    async fn a_counted_ok_in_time_is_counted_and_a_late_one_is_a_timeout() {
        clock();
        let quick = Duration::from_millis(10);
        let late = Duration::from_secs(2);
        assert_eq!(stock(503, quick).await, fallback("counted 503"));
        assert_eq!(stock(503, late).await, fallback("timeout"));
        assert_eq!(stock(200, late).await, fallback("timeout"));
        let seen = snapshot("counts_ok::timeout");
        assert_eq!((seen.failures, seen.timeouts), (3, 2));
        assert_eq!(stock(200, quick).await, Ok(Reply::Stock(7)));
        assert_eq!(snapshot("counts_ok::timeout").consecutive_failures, 0);
    }
}

mod under_retry {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);
    static STATUSES: [u16; 3] = [503, 503, 200];

    #[retry(attempts = 3, backoff = "1ns")]
    #[circuit_breaker(
        threshold = 10,
        recovery = "1h",
        counts_ok = Reply::Unavailable { .. },
        name = "counts_ok::retried"
    )]
    fn stock() -> Result<Reply, ApiError> {
        let call = CALLS.fetch_add(1, Ordering::SeqCst) as usize;
        answer(STATUSES[call.min(2)])
    }

    /// A counted `Ok` is retried as the counted failure it is: two 503s,
    /// then the stock of the third attempt.
    #[test]
    fn a_counted_ok_is_retried() {
        clock();
        assert_eq!(stock(), Ok(Reply::Stock(7)));
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
        let seen = snapshot("counts_ok::retried");
        assert_eq!((seen.failures, seen.successes), (2, 1));
    }

    static LAST_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1ns")]
    #[circuit_breaker(
        threshold = 10,
        recovery = "1h",
        counts_ok = Reply::Unavailable { .. },
        name = "counts_ok::retried_out"
    )]
    fn always_unavailable() -> Result<Reply, ApiError> {
        LAST_CALLS.fetch_add(1, Ordering::SeqCst);
        answer(503)
    }

    /// The last attempt's counted `Ok` is returned as it is.
    #[test]
    fn the_last_counted_ok_is_returned() {
        clock();
        assert_eq!(always_unavailable(), Ok(Reply::Unavailable { status: 503 }));
        assert_eq!(LAST_CALLS.load(Ordering::SeqCst), 3);
        assert_eq!(snapshot("counts_ok::retried_out").failures, 3);
    }

    static FALLBACK_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 4, backoff = "1ns")]
    #[circuit_breaker(
        threshold = 2,
        recovery = "1h",
        counts_ok = Reply::Unavailable { .. },
        fallback = |error| Ok(given(&error)),
        name = "counts_ok::retried_fallback"
    )]
    fn with_fallback() -> Result<Reply, ApiError> {
        FALLBACK_CALLS.fetch_add(1, Ordering::SeqCst);
        answer(503)
    }

    /// With a fallback, the loop stops when the counted `Ok`s open the
    /// breaker, and the fallback gets the last one.
    #[test]
    fn retries_stop_when_counted_oks_open_the_breaker() {
        clock();
        assert_eq!(with_fallback(), fallback("counted 503"));
        assert_eq!(FALLBACK_CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(snapshot("counts_ok::retried_fallback").state, State::Open);
    }
}

/// `counts_ok = HttpClassifier`: an HTTP answer judged as the tower layer
/// and the reqwest middleware judge it.
#[cfg(feature = "http")]
mod http_classifier {
    use super::*;
    use failfast::classify::HttpClassifier;

    fn respond(status: u16) -> http::Response<()> {
        http::Response::builder().status(status).body(()).unwrap()
    }

    #[circuit_breaker(
        threshold = 2,
        recovery = "1h",
        counts_ok = failfast::classify::HttpClassifier,
        name = "counts_ok::http"
    )]
    fn get(status: u16) -> Result<http::Response<()>, ApiError> {
        Ok(respond(status))
    }

    /// A 5xx counts, a 429 (the caller's limit) is neutral and a 200 a
    /// success, as `HttpClassifier` says; two 5xx in a row open.
    #[test]
    fn server_errors_count_and_client_errors_are_neutral() {
        clock();
        assert_eq!(get(503).unwrap().status(), 503);
        assert_eq!(get(429).unwrap().status(), 429);
        let seen = snapshot("counts_ok::http");
        assert_eq!(
            (seen.failures, seen.neutral, seen.consecutive_failures),
            (1, 1, 1)
        );
        assert_eq!(get(200).unwrap().status(), 200);
        assert_eq!(snapshot("counts_ok::http").consecutive_failures, 0);
        assert_eq!(get(500).unwrap().status(), 500);
        assert_eq!(get(502).unwrap().status(), 502);
        assert_eq!(snapshot("counts_ok::http").state, State::Open);
        assert_eq!(get(200).unwrap_err(), ApiError::Refused(State::Open));
    }

    #[cfg(feature = "reqwest-middleware")]
    #[circuit_breaker(threshold = 1, recovery = "1h", counts_ok = HttpClassifier, name = "counts_ok::reqwest")]
    fn fetch(status: u16) -> Result<reqwest::Response, ApiError> {
        Ok(reqwest::Response::from(
            http::Response::builder()
                .status(status)
                .body(String::new())
                .unwrap(),
        ))
    }

    /// The same classifier judges a `reqwest::Response`.
    #[cfg(feature = "reqwest-middleware")]
    #[test]
    fn a_reqwest_response_is_judged_the_same() {
        clock();
        assert_eq!(fetch(404).unwrap().status(), 404);
        assert_eq!(snapshot("counts_ok::reqwest").state, State::Closed);
        assert_eq!(fetch(503).unwrap().status(), 503);
        assert_eq!(snapshot("counts_ok::reqwest").state, State::Open);
    }

    /// A response made of a refusal further down carries it, and is not
    /// counted: that call never reached the dependency.
    #[test]
    fn a_refusal_further_down_is_neutral() {
        clock();
        let inner = Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_secs(3600))
            .build()
            .unwrap();
        let _ = inner.call(|| Err::<(), _>("down"));
        let refused = http::Response::<String>::from(inner.acquire().unwrap_err());
        #[circuit_breaker(threshold = 1, recovery = "1h", counts_ok = HttpClassifier, name = "counts_ok::stacked")]
        fn pass_on(response: http::Response<String>) -> Result<http::Response<String>, ApiError> {
            Ok(response)
        }
        assert_eq!(pass_on(refused).unwrap().status(), 503);
        let seen = snapshot("counts_ok::stacked");
        assert_eq!((seen.state, seen.neutral), (State::Closed, 1));
    }
}

/// The same rule for code that holds a permit, recorded by hand, on a
/// breaker of its own clock.
mod permit {
    use super::*;

    fn call(breaker: &Breaker, status: u16) {
        let result = answer(status);
        let permit = breaker.acquire().expect("admitted");
        permit.record(match &result {
            Ok(Reply::Unavailable { status }) if *status >= 500 => failfast::Outcome::Failure,
            Ok(_) => failfast::Outcome::Success,
            Err(_) => failfast::Outcome::Failure,
        });
    }

    #[test]
    fn a_counted_ok_opens_and_reopens_and_an_unmatched_one_closes() {
        let clock = ManualClock::new();
        let breaker = Breaker::builder()
            .threshold(2)
            .recovery(Duration::from_secs(30))
            .clock(clock.clone())
            .build()
            .unwrap();
        call(&breaker, 503);
        call(&breaker, 404);
        assert_eq!(breaker.snapshot().consecutive_failures, 0, "404 succeeds");
        call(&breaker, 503);
        call(&breaker, 500);
        assert_eq!(breaker.state(), State::Open);
        clock.advance(Duration::from_secs(30));
        call(&breaker, 502);
        assert_eq!(breaker.state(), State::Open, "the trial's 502 reopens");
        clock.advance(Duration::from_secs(30));
        call(&breaker, 200);
        assert_eq!(breaker.state(), State::Closed);
        let seen = breaker.snapshot();
        assert_eq!((seen.failures, seen.successes), (4, 2));
    }

    /// `resolve` is the same with no `Ok` counted.
    #[test]
    fn resolve_counts_no_ok() {
        let breaker = Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_secs(3600))
            .build()
            .unwrap();
        breaker.acquire().unwrap().resolve(&answer(503), |_| true);
        assert_eq!(breaker.state(), State::Closed);
        breaker.acquire().unwrap().resolve(&answer(0), |_| true);
        assert_eq!(breaker.state(), State::Open);
    }
}
