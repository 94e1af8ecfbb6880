//! Behaviour of `#[retry]`, alone and above `#[circuit_breaker]`: each
//! attempt is one breaker call, rejections and neutral errors are never
//! retried, retries stop when the breaker opens, and the budget caps the
//! extra calls under load. Each test names its breaker and counts the body's
//! calls in its own static.

use std::sync::atomic::{AtomicU32, Ordering};

use failfast::Mode;
use failfast::{Rejected, State, circuit_breaker, registry, retry};

#[derive(Debug, PartialEq)]
enum ApiError {
    Down,
    BadRequest,
    Rejected(State),
}

impl From<Rejected> for ApiError {
    fn from(rejected: Rejected) -> Self {
        ApiError::Rejected(rejected.state())
    }
}

fn state(name: &str) -> State {
    registry::get(name).expect("registered").state()
}

mod against_an_open_breaker {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 3, recovery = "60s", name = "retry::open")]
    fn fetch() -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    #[test]
    fn one_call_per_attempt_then_none_once_open() {
        assert_eq!(fetch(), Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 3, "one body call per attempt");
        assert_eq!(state("retry::open"), State::Open);
        for _ in 0..5 {
            assert_eq!(fetch(), Err(ApiError::Rejected(State::Open)));
        }
        assert_eq!(
            CALLS.load(Ordering::SeqCst),
            3,
            "no call once open: a rejection is never retried"
        );
    }
}

mod the_breaker_opens_between_attempts {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 5, backoff = "1ms")]
    #[circuit_breaker(threshold = 2, recovery = "60s", name = "retry::opens")]
    fn fetch() -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    #[test]
    fn retries_stop_at_once_with_the_failure() {
        // The second failure opens the breaker for 60 s, far longer than the
        // next delay: the loop returns the failure instead of a rejection.
        assert_eq!(fetch(), Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(state("retry::opens"), State::Open);
    }
}

mod a_retry_becomes_the_trial {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 2, backoff = "200ms")]
    #[circuit_breaker(threshold = 1, recovery = "20ms", name = "retry::trial")]
    fn fetch() -> Result<u32, ApiError> {
        if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(ApiError::Down)
        } else {
            Ok(7)
        }
    }

    #[test]
    fn when_the_breaker_recovers_before_the_next_attempt() {
        // Open for 20 ms, next attempt after 200 ms (a margin for the
        // breaker's coarse clock on a busy machine): it is admitted as the
        // trial, succeeds, and closes the breaker.
        assert_eq!(fetch(), Ok(7));
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(state("retry::trial"), State::Closed);
    }
}

mod neutral_errors {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 5, backoff = "1ms")]
    #[circuit_breaker(threshold = 3, counts = ApiError::Down, name = "retry::neutral")]
    fn fetch(bad: bool) -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(if bad {
            ApiError::BadRequest
        } else {
            ApiError::Down
        })
    }

    #[test]
    fn are_never_retried() {
        for _ in 0..3 {
            assert_eq!(fetch(true), Err(ApiError::BadRequest));
        }
        assert_eq!(CALLS.load(Ordering::SeqCst), 3, "one call each, no retry");
        assert_eq!(state("retry::neutral"), State::Closed);
        // A counted failure is retried: three attempts trip the breaker.
        assert_eq!(fetch(false), Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 6);
        assert_eq!(state("retry::neutral"), State::Open);
    }
}

mod panics {
    use super::*;
    use std::panic;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 5, name = "retry::panics")]
    fn explode() -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        panic!("the body panicked");
    }

    #[test]
    fn a_panic_is_counted_once_and_not_retried() {
        let outcome = panic::catch_unwind(explode);
        assert!(outcome.is_err(), "the panic goes on unwinding");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        let snapshot = registry::get("retry::panics").unwrap().snapshot();
        assert_eq!(snapshot.consecutive_failures, 1);
    }
}

mod retry_on {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 4, backoff = "1ms", retry_on = ApiError::Down)]
    fn fetch(error: ApiError) -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(match error {
            ApiError::Down => ApiError::Down,
            _ => ApiError::BadRequest,
        })
    }

    #[test]
    fn only_matching_errors_are_retried() {
        assert_eq!(fetch(ApiError::BadRequest), Err(ApiError::BadRequest));
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(fetch(ApiError::Down), Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 5, "four attempts");
    }
}

mod without_a_breaker {
    use super::*;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(backoff = "1ms")]
    fn flaky(succeed_on: u32) -> Result<u32, ApiError> {
        let call = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
        if call >= succeed_on {
            Ok(call)
        } else {
            Err(ApiError::Down)
        }
    }

    #[test]
    fn every_error_is_retried_up_to_three_attempts_by_default() {
        assert_eq!(flaky(3), Ok(3));
        CALLS.store(0, Ordering::SeqCst);
        assert_eq!(flaky(4), Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
    }
}

mod budget {
    use super::*;
    use std::thread;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1ms", budget = 0.2)]
    fn always_down() -> Result<u32, ApiError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    const THREADS: u32 = 8;
    const CALLS_EACH: u32 = 100;

    #[test]
    fn caps_extra_calls_across_threads() {
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                thread::spawn(|| {
                    for _ in 0..CALLS_EACH {
                        assert_eq!(always_down(), Err(ApiError::Down));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let calls = THREADS * CALLS_EACH;
        let extra = CALLS.load(Ordering::SeqCst) - calls;
        // Unbudgeted, every call would make two more: 1,600 extra calls.
        // Within 10 s the budget allows 20% of the calls plus 10.
        let cap = calls / 5 + 10;
        assert!(
            extra <= cap,
            "{extra} extra calls for {calls} calls, cap {cap}"
        );
        assert!(
            extra >= cap / 2,
            "the budget did allow retries: {extra} extra calls"
        );
    }
}

mod shapes {
    use super::*;

    struct Client {
        calls: AtomicU32,
        name: String,
    }

    impl Client {
        #[retry(attempts = 3, backoff = "1ms")]
        #[circuit_breaker(threshold = 100, name = "retry::method")]
        fn fetch(&self, id: u32) -> Result<u32, ApiError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(ApiError::Down)
            } else {
                Ok(id)
            }
        }

        #[retry(attempts = 3, backoff = "1ms")]
        fn bump(&mut self) -> Result<u32, ApiError> {
            let calls = self.calls.get_mut();
            *calls += 1;
            if *calls < 3 {
                Err(ApiError::Down)
            } else {
                Ok(*calls)
            }
        }

        /// `self` by value, borrowed by each attempt.
        #[retry(attempts = 2, backoff = "1ms")]
        fn into_name(self) -> Result<String, ApiError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(ApiError::Down)
            } else {
                Ok(self.name.clone())
            }
        }
    }

    #[retry(attempts = 2, backoff = "1ms")]
    fn first<T: Clone + std::fmt::Debug>(items: &[T], calls: &AtomicU32) -> Result<T, ApiError> {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(ApiError::Down)
        } else {
            items.first().cloned().ok_or(ApiError::BadRequest)
        }
    }

    #[test]
    fn methods_and_generics_are_retried() {
        let client = Client {
            calls: AtomicU32::new(0),
            name: "inventory".into(),
        };
        assert_eq!(client.fetch(9), Ok(9));
        let mut client = Client {
            calls: AtomicU32::new(0),
            name: "inventory".into(),
        };
        assert_eq!(client.bump(), Ok(3));
        client.calls = AtomicU32::new(0);
        assert_eq!(client.into_name(), Ok("inventory".to_owned()));
        let calls = AtomicU32::new(0);
        assert_eq!(first(&["a", "b"], &calls), Ok("a"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}

/// A breaker with a `fallback` below `#[retry]`: the fallback runs once,
/// after the last attempt, with the error it would get without `#[retry]`.
/// The error type has no `From<Rejected>`: the fallback answers refusals.
mod fallback_after_the_retries {
    use super::*;
    use failfast::Error;
    use std::sync::Mutex;

    #[derive(Clone, Debug, PartialEq)]
    pub enum StockError {
        /// The dependency failed, on this attempt of the call.
        Down(u32),
        BadSku,
    }

    mod every_attempt_fails {
        use super::*;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static GIVEN: Mutex<Vec<(u32, Error<StockError>)>> = Mutex::new(Vec::new());

        fn cached(sku: u32, error: Error<StockError>) -> Result<u32, StockError> {
            GIVEN.lock().unwrap().push((sku, error));
            Ok(0)
        }

        #[retry(attempts = 3, backoff = "1ms")]
        #[circuit_breaker(threshold = 10, name = "retry::fallback_exhausted", fallback = cached)]
        fn stock(sku: u32) -> Result<u32, StockError> {
            let _ = sku;
            Err(StockError::Down(CALLS.fetch_add(1, Ordering::SeqCst) + 1))
        }

        #[test]
        fn the_fallback_is_called_once_with_the_last_error() {
            assert_eq!(stock(7), Ok(0));
            assert_eq!(CALLS.load(Ordering::SeqCst), 3, "three attempts");
            assert_eq!(
                *GIVEN.lock().unwrap(),
                [(7, Error::Failed(StockError::Down(3)))],
                "once, with the arguments and the third attempt's error"
            );
            let snapshot = registry::get("retry::fallback_exhausted")
                .unwrap()
                .snapshot();
            assert_eq!(snapshot.consecutive_failures, 3, "each attempt counted");
        }
    }

    mod a_fallback_block {
        use super::*;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static PREPARED: AtomicU32 = AtomicU32::new(0);
        static GIVEN: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());

        #[retry(attempts = 3, backoff = "1ms")]
        #[circuit_breaker(threshold = 10, name = "retry::fallback_block", fallback = {
            // Run before the first attempt, once for the whole call.
            let prepared = PREPARED.fetch_add(1, Ordering::SeqCst) + 1;
            let calls_before = CALLS.load(Ordering::SeqCst);
            move |_error| {
                GIVEN.lock().unwrap().push((prepared, calls_before));
                Ok(0)
            }
        })]
        fn stock(sku: u32) -> Result<u32, StockError> {
            let _ = sku;
            Err(StockError::Down(CALLS.fetch_add(1, Ordering::SeqCst) + 1))
        }

        #[test]
        fn runs_once_before_the_first_attempt() {
            assert_eq!(stock(7), Ok(0));
            assert_eq!(CALLS.load(Ordering::SeqCst), 3, "three attempts");
            assert_eq!(PREPARED.load(Ordering::SeqCst), 1, "one block per call");
            assert_eq!(*GIVEN.lock().unwrap(), [(1, 0)], "before any attempt");
        }
    }

    mod ok_on_the_second_attempt {
        use super::*;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static FALLBACKS: AtomicU32 = AtomicU32::new(0);

        #[retry(attempts = 3, backoff = "1ms")]
        #[circuit_breaker(threshold = 10, name = "retry::fallback_ok", fallback = |_| {
            FALLBACKS.fetch_add(1, Ordering::SeqCst);
            Ok(0)
        })]
        fn stock(sku: u32) -> Result<u32, StockError> {
            match CALLS.fetch_add(1, Ordering::SeqCst) {
                0 => Err(StockError::Down(1)),
                _ => Ok(sku),
            }
        }

        #[test]
        fn never_calls_the_fallback() {
            assert_eq!(stock(7), Ok(7));
            assert_eq!(CALLS.load(Ordering::SeqCst), 2);
            assert_eq!(FALLBACKS.load(Ordering::SeqCst), 0);
        }
    }

    mod an_open_breaker {
        use super::*;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static GIVEN: Mutex<Vec<Error<StockError>>> = Mutex::new(Vec::new());

        fn stale(error: Error<StockError>) -> Result<u32, StockError> {
            GIVEN.lock().unwrap().push(error);
            Ok(0)
        }

        #[retry(attempts = 5, backoff = "1ms")]
        #[circuit_breaker(
            threshold = 2,
            recovery = "60s",
            name = "retry::fallback_open",
            fallback = |error| stale(error)
        )]
        fn stock() -> Result<u32, StockError> {
            Err(StockError::Down(CALLS.fetch_add(1, Ordering::SeqCst) + 1))
        }

        #[test]
        fn sends_its_rejection_to_the_fallback_without_a_retry() {
            // The second failure opens the breaker for 60 s: the retries stop,
            // and the fallback gets that failure.
            assert_eq!(stock(), Ok(0));
            assert_eq!(CALLS.load(Ordering::SeqCst), 2);
            assert_eq!(state("retry::fallback_open"), State::Open);
            // Open: the rejection is not retried, and goes to the fallback.
            assert_eq!(stock(), Ok(0));
            assert_eq!(CALLS.load(Ordering::SeqCst), 2, "the body did not run");
            let given = GIVEN.lock().unwrap();
            assert_eq!(given.len(), 2, "{given:?}");
            assert_eq!(given[0], Error::Failed(StockError::Down(2)));
            let Error::Rejected(rejected) = &given[1] else {
                panic!("a rejection, not {:?}", given[1])
            };
            assert_eq!(rejected.name(), "retry::fallback_open");
            assert_eq!(rejected.state(), State::Open);
        }
    }

    mod errors_the_fallback_does_not_see {
        use super::*;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static GIVEN: Mutex<Vec<Error<StockError>>> = Mutex::new(Vec::new());

        fn cached(_sku: &str, error: Error<StockError>) -> Result<u32, StockError> {
            GIVEN.lock().unwrap().push(error);
            Ok(0)
        }

        #[retry(attempts = 3, backoff = "1ms")]
        #[circuit_breaker(
            threshold = 10,
            counts = StockError::Down(_),
            name = "retry::fallback_neutral",
            fallback = cached
        )]
        fn stock(sku: &str) -> Result<u32, StockError> {
            let call = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
            if sku.is_empty() {
                Err(StockError::BadSku)
            } else {
                Err(StockError::Down(call))
            }
        }

        #[test]
        fn a_neutral_error_is_returned_as_it_is_after_one_attempt() {
            assert_eq!(stock(""), Err(StockError::BadSku));
            assert_eq!(CALLS.load(Ordering::SeqCst), 1, "not retried");
            assert!(GIVEN.lock().unwrap().is_empty(), "no fallback");
        }

        static RETRY_ON_CALLS: AtomicU32 = AtomicU32::new(0);
        static RETRY_ON_GIVEN: Mutex<Vec<Error<StockError>>> = Mutex::new(Vec::new());

        #[retry(attempts = 3, backoff = "1ms", retry_on = StockError::Down(1))]
        #[circuit_breaker(threshold = 10, name = "retry::fallback_retry_on", fallback = |error| {
            RETRY_ON_GIVEN.lock().unwrap().push(error);
            Ok(0)
        })]
        fn limited() -> Result<u32, StockError> {
            Err(StockError::Down(
                RETRY_ON_CALLS.fetch_add(1, Ordering::SeqCst) + 1,
            ))
        }

        #[test]
        fn a_failure_retry_on_does_not_match_goes_to_the_fallback_at_once() {
            // `Down(1)` is retried; `Down(2)` is not, and is the fallback's.
            assert_eq!(limited(), Ok(0));
            assert_eq!(RETRY_ON_CALLS.load(Ordering::SeqCst), 2);
            assert_eq!(
                *RETRY_ON_GIVEN.lock().unwrap(),
                [Error::Failed(StockError::Down(2))]
            );
        }
    }

    mod methods {
        use super::*;

        struct Inventory {
            calls: AtomicU32,
            given: Mutex<Vec<(String, Error<StockError>)>>,
        }

        impl Inventory {
            #[retry(attempts = 2, backoff = "1ms")]
            #[circuit_breaker(threshold = 10, name = "retry::fallback_method", fallback = Self::cached)]
            fn stock(&self, sku: &str) -> Result<u32, StockError> {
                let _ = sku;
                Err(StockError::Down(
                    self.calls.fetch_add(1, Ordering::SeqCst) + 1,
                ))
            }

            fn cached(&self, sku: &str, error: Error<StockError>) -> Result<u32, StockError> {
                self.given.lock().unwrap().push((sku.to_owned(), error));
                Ok(1)
            }
        }

        #[test]
        fn the_fallback_gets_the_receiver_and_the_arguments() {
            let inventory = Inventory {
                calls: AtomicU32::new(0),
                given: Mutex::new(Vec::new()),
            };
            assert_eq!(inventory.stock("SKU-1"), Ok(1));
            assert_eq!(inventory.calls.load(Ordering::SeqCst), 2);
            assert_eq!(
                *inventory.given.lock().unwrap(),
                [("SKU-1".to_owned(), Error::Failed(StockError::Down(2)))]
            );
        }
    }
}

/// Async retries wait on tokio's timer; the paused clock makes the waits
/// exact, and the breaker's verdict reaches the loop across `.await`s.
#[cfg(feature = "tokio")]
mod async_retries {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 4, backoff = "100ms..250ms")]
    #[circuit_breaker(threshold = 100, name = "retry::async_backoff")]
    async fn down() -> Result<u32, ApiError> {
        tokio::task::yield_now().await;
        CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_up_to_its_bound_on_tokio_time() {
        let start = Instant::now();
        assert_eq!(down().await, Err(ApiError::Down));
        assert_eq!(CALLS.load(Ordering::SeqCst), 4);
        // 100 ms, 200 ms, then 250 ms (the bound), on the paused clock.
        assert_eq!(start.elapsed(), Duration::from_millis(550));
    }

    static OPEN_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1s")]
    #[circuit_breaker(threshold = 2, recovery = "60s", name = "retry::async_open")]
    async fn tripping() -> Result<u32, ApiError> {
        tokio::task::yield_now().await;
        OPEN_CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    #[tokio::test(start_paused = true)]
    async fn a_breaker_that_opens_ends_the_retries_without_waiting() {
        let start = Instant::now();
        assert_eq!(tripping().await, Err(ApiError::Down));
        assert_eq!(OPEN_CALLS.load(Ordering::SeqCst), 2);
        // One wait, between the two attempts; none after the breaker opened.
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        let start = Instant::now();
        assert_eq!(tripping().await, Err(ApiError::Rejected(State::Open)));
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "a rejection is not waited on"
        );
        assert_eq!(OPEN_CALLS.load(Ordering::SeqCst), 2);
    }

    static DROPPED_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 5, backoff = "100ms")]
    async fn dropped() -> Result<u32, ApiError> {
        DROPPED_CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_call_makes_no_further_attempt() {
        // Dropped during the second wait.
        let outcome = tokio::time::timeout(Duration::from_millis(150), dropped()).await;
        assert!(outcome.is_err());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(DROPPED_CALLS.load(Ordering::SeqCst), 2);
    }

    /// An error keeping why the breaker refused, and timeouts.
    #[derive(Debug, PartialEq)]
    enum UpstreamError {
        Refused(failfast::Reason),
        TimedOut,
    }

    impl From<Rejected> for UpstreamError {
        fn from(rejected: Rejected) -> Self {
            UpstreamError::Refused(rejected.reason())
        }
    }

    impl From<failfast::TimedOut> for UpstreamError {
        fn from(_: failfast::TimedOut) -> Self {
            UpstreamError::TimedOut
        }
    }

    static HOLDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

    #[retry(attempts = 3, backoff = "1s")]
    #[circuit_breaker(threshold = 100, max_concurrent = 1, name = "retry::bulkhead")]
    async fn limited(hold: bool) -> Result<u32, UpstreamError> {
        if hold {
            HOLDING.store(true, Ordering::SeqCst);
            RELEASE.notified().await;
        }
        Ok(1)
    }

    #[tokio::test(start_paused = true)]
    async fn a_concurrency_limit_refusal_is_not_retried() {
        let holder = tokio::spawn(limited(true));
        while !HOLDING.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        let start = Instant::now();
        assert_eq!(
            limited(false).await,
            Err(UpstreamError::Refused(failfast::Reason::ConcurrencyLimit))
        );
        // Retried, it would have waited 1 s (and 2 s) on the paused clock.
        assert_eq!(start.elapsed(), Duration::ZERO);
        RELEASE.notify_one();
        assert_eq!(holder.await.unwrap(), Ok(1));
    }

    static HANGS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "100ms")]
    #[circuit_breaker(threshold = 100, timeout = "50ms", name = "retry::timeout")]
    async fn hangs() -> Result<u32, UpstreamError> {
        HANGS.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_is_a_failure_and_is_retried() {
        let start = Instant::now();
        assert_eq!(hangs().await, Err(UpstreamError::TimedOut));
        assert_eq!(HANGS.load(Ordering::SeqCst), 3);
        // Three 50 ms limits, and two waits of 100 ms (a constant backoff).
        assert_eq!(start.elapsed(), Duration::from_millis(350));
        let snapshot = registry::get("retry::timeout").unwrap().snapshot();
        assert_eq!(snapshot.consecutive_failures, 3);
    }

    static NEUTRAL_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1s")]
    #[circuit_breaker(counts = ApiError::Down, name = "retry::async_neutral")]
    async fn bad_request() -> Result<u32, ApiError> {
        tokio::task::yield_now().await;
        NEUTRAL_CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::BadRequest)
    }

    static COUNTED_CALLS: AtomicU32 = AtomicU32::new(0);

    #[retry(attempts = 3, backoff = "1s")]
    #[circuit_breaker(counts = ApiError::Down, name = "retry::async_counted")]
    async fn counted() -> Result<u32, ApiError> {
        tokio::task::yield_now().await;
        COUNTED_CALLS.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }

    /// Two calls interleave on one thread, yielding inside their bodies:
    /// each loop still reads its own attempt's verdict.
    #[tokio::test(start_paused = true)]
    async fn verdicts_do_not_leak_between_interleaved_calls() {
        let (neutral, failed) = tokio::join!(bad_request(), counted());
        assert_eq!(neutral, Err(ApiError::BadRequest));
        assert_eq!(NEUTRAL_CALLS.load(Ordering::SeqCst), 1, "neutral: no retry");
        assert_eq!(failed, Err(ApiError::Down));
        assert_eq!(COUNTED_CALLS.load(Ordering::SeqCst), 3, "counted: retried");
    }

    /// The fallback below `#[retry]` on an `async fn`: awaited once, after
    /// the last attempt.
    mod fallback {
        use super::super::fallback_after_the_retries::StockError;
        use super::*;
        use failfast::Error;
        use std::sync::Mutex;

        static CALLS: AtomicU32 = AtomicU32::new(0);
        static GIVEN: Mutex<Vec<(u32, Error<StockError>)>> = Mutex::new(Vec::new());

        async fn cached(sku: u32, error: Error<StockError>) -> Result<u32, StockError> {
            tokio::task::yield_now().await;
            GIVEN.lock().unwrap().push((sku, error));
            Ok(0)
        }

        #[retry(attempts = 3, backoff = "100ms")]
        #[circuit_breaker(threshold = 10, name = "retry::async_fallback", fallback = cached)]
        async fn stock(sku: u32) -> Result<u32, StockError> {
            tokio::task::yield_now().await;
            let _ = sku;
            Err(StockError::Down(CALLS.fetch_add(1, Ordering::SeqCst) + 1))
        }

        #[tokio::test(start_paused = true)]
        async fn is_awaited_once_with_the_last_error() {
            let start = Instant::now();
            assert_eq!(stock(7).await, Ok(0));
            assert_eq!(CALLS.load(Ordering::SeqCst), 3);
            assert_eq!(start.elapsed(), Duration::from_millis(200), "two waits");
            assert_eq!(
                *GIVEN.lock().unwrap(),
                [(7, Error::Failed(StockError::Down(3)))]
            );
            // Forced open: the rejection goes to the fallback at once.
            registry::get("retry::async_fallback")
                .unwrap()
                .set_mode(Mode::ForcedOpen);
            let start = Instant::now();
            assert_eq!(stock(8).await, Ok(0));
            assert_eq!(start.elapsed(), Duration::ZERO, "not retried");
            assert_eq!(CALLS.load(Ordering::SeqCst), 3, "the body did not run");
            let given = GIVEN.lock().unwrap();
            assert_eq!(given.len(), 2);
            assert_eq!(given[1].0, 8);
            assert!(
                matches!(given[1].1, failfast::Error::Rejected(_)),
                "{given:?}"
            );
        }

        static HANGS: AtomicU32 = AtomicU32::new(0);
        static TIMED_OUT: Mutex<Vec<Error<StockError>>> = Mutex::new(Vec::new());

        #[retry(attempts = 3, backoff = "100ms")]
        #[circuit_breaker(
            threshold = 100,
            timeout = "50ms",
            name = "retry::async_fallback_timeout",
            fallback = |error| async {
                TIMED_OUT.lock().unwrap().push(error);
                Ok(0)
            }
        )]
        async fn hangs() -> Result<u32, StockError> {
            HANGS.fetch_add(1, Ordering::SeqCst);
            std::future::pending().await
        }

        #[tokio::test(start_paused = true)]
        async fn a_timeout_is_retried_then_given_to_the_fallback() {
            let start = Instant::now();
            assert_eq!(hangs().await, Ok(0));
            assert_eq!(HANGS.load(Ordering::SeqCst), 3);
            // Three 50 ms limits, and two waits of 100 ms.
            assert_eq!(start.elapsed(), Duration::from_millis(350));
            let given = TIMED_OUT.lock().unwrap();
            assert_eq!(given.len(), 1, "{given:?}");
            assert!(matches!(given[0], failfast::Error::Timeout(_)), "{given:?}");
        }
    }
}
