//! Behaviour of `#[circuit_breaker]` through every function shape it accepts:
//! the breaker trips, rejects without running the body, hands the right
//! arguments and errors to fallbacks, and classifies errors as `counts` and
//! `ignores` say. Each test names the breaker it uses, so tests running in
//! parallel never share one.

use std::error::Error as StdError;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use failfast::{Error, Rejected, State, circuit_breaker, registry};

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
    registry::get(name)
        .unwrap_or_else(|| panic!("breaker {name} is registered after its first call"))
        .state()
}

mod method_breaker {
    use super::*;

    struct Client {
        calls: AtomicU32,
        healthy: bool,
    }

    impl Client {
        #[circuit_breaker(threshold = 3, recovery = "60s", name = "shapes::method")]
        fn fetch(&self, id: u32) -> Result<u32, ApiError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.healthy {
                Ok(id)
            } else {
                Err(ApiError::Down)
            }
        }

        #[circuit_breaker(threshold = 2, recovery = "60s", name = "shapes::method_mut")]
        fn bump(&mut self) -> Result<&mut AtomicU32, ApiError> {
            *self.calls.get_mut() += 1;
            if self.healthy {
                Ok(&mut self.calls)
            } else {
                Err(ApiError::Down)
            }
        }

        #[circuit_breaker(threshold = 1, recovery = "60s", name = "shapes::method_owned")]
        fn into_calls(self) -> Result<u32, ApiError> {
            if self.healthy {
                Ok(self.calls.into_inner())
            } else {
                Err(ApiError::Down)
            }
        }
    }

    #[test]
    fn a_method_breaker_trips_for_all_instances_and_rejects_without_running_the_body() {
        let sick = Client {
            calls: AtomicU32::new(0),
            healthy: false,
        };
        for _ in 0..2 {
            assert_eq!(sick.fetch(1), Err(ApiError::Down));
        }
        assert_eq!(state("shapes::method"), State::Closed, "2 of 3 failures");
        assert_eq!(sick.fetch(1), Err(ApiError::Down));
        assert_eq!(state("shapes::method"), State::Open);

        // Another instance, healthy: the breaker belongs to the method.
        let healthy = Client {
            calls: AtomicU32::new(0),
            healthy: true,
        };
        assert_eq!(healthy.fetch(1), Err(ApiError::Rejected(State::Open)));
        assert_eq!(healthy.calls.load(Ordering::SeqCst), 0, "body must not run");
        assert_eq!(sick.calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn mut_self_and_self_methods_trip() {
        let mut client = Client {
            calls: AtomicU32::new(0),
            healthy: false,
        };
        assert!(client.bump().is_err());
        assert!(client.bump().is_err());
        assert_eq!(client.bump().unwrap_err(), ApiError::Rejected(State::Open));
        assert_eq!(*client.calls.get_mut(), 2);

        let owned = Client {
            calls: AtomicU32::new(0),
            healthy: false,
        };
        assert_eq!(owned.into_calls(), Err(ApiError::Down));
        let owned = Client {
            calls: AtomicU32::new(0),
            healthy: true,
        };
        assert_eq!(owned.into_calls(), Err(ApiError::Rejected(State::Open)));
    }
}

mod generic {
    use super::*;

    static RUNS: AtomicU32 = AtomicU32::new(0);

    #[circuit_breaker(threshold = 2, recovery = "60s", name = "shapes::generic")]
    fn send<T: fmt::Debug>(payload: T, healthy: bool) -> Result<String, ApiError> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        if healthy {
            Ok(format!("{payload:?}"))
        } else {
            Err(ApiError::Down)
        }
    }

    #[test]
    fn instantiations_share_one_breaker() {
        assert_eq!(send(1u8, true).unwrap(), "1");
        assert!(send(2u8, false).is_err());
        assert!(send("two", false).is_err());
        // Two failures through two instantiations tripped the one breaker.
        assert_eq!(send(3.5f64, true), Err(ApiError::Rejected(State::Open)));
        assert_eq!(RUNS.load(Ordering::SeqCst), 3);
    }
}

mod fallback {
    use super::*;

    type Seen = Mutex<Vec<(String, u8, &'static str)>>;
    static SEEN: Seen = Mutex::new(Vec::new());
    static RUNS: AtomicU32 = AtomicU32::new(0);

    fn kind(error: &Error<ApiError>) -> &'static str {
        match error {
            Error::Rejected(_) => "rejected",
            Error::Failed(ApiError::Down) => "failed: down",
            Error::Failed(_) => "failed: other",
            // `Error` is non-exhaustive (a `Timeout` variant is planned).
            _ => "other",
        }
    }

    #[allow(clippy::unnecessary_wraps)]
    fn cached(sku: &str, warehouse: u8, error: Error<ApiError>) -> Result<u32, ApiError> {
        SEEN.lock()
            .unwrap()
            .push((sku.to_owned(), warehouse, kind(&error)));
        Ok(0)
    }

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = ApiError::Down, fallback = cached, name = "shapes::fallback")]
    fn stock(sku: &str, warehouse: u8) -> Result<u32, ApiError> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        match sku {
            "bad" => Err(ApiError::BadRequest),
            "down" => Err(ApiError::Down),
            _ => Ok(u32::from(warehouse)),
        }
    }

    #[test]
    fn fallback_receives_the_same_arguments_and_the_failure_or_rejection() {
        assert_eq!(stock("ok", 7), Ok(7));
        // A neutral error reaches the caller unchanged; no fallback.
        assert_eq!(stock("bad", 1), Err(ApiError::BadRequest));
        assert!(SEEN.lock().unwrap().is_empty());

        // Counted failures are answered by the fallback.
        assert_eq!(stock("down", 2), Ok(0));
        assert_eq!(stock("down", 3), Ok(0));
        assert_eq!(state("shapes::fallback"), State::Open);
        // Rejected: the body does not run, the fallback answers.
        assert_eq!(stock("ok", 4), Ok(0));
        assert_eq!(RUNS.load(Ordering::SeqCst), 4);
        assert_eq!(
            *SEEN.lock().unwrap(),
            [
                ("down".to_owned(), 2, "failed: down"),
                ("down".to_owned(), 3, "failed: down"),
                ("ok".to_owned(), 4, "rejected"),
            ]
        );
    }

    struct Service {
        name: String,
    }

    impl Service {
        #[circuit_breaker(threshold = 1, recovery = "60s", fallback = Self::degraded, name = "shapes::async_fallback")]
        async fn fetch(&self, id: u32) -> Result<String, ApiError> {
            tokio::task::yield_now().await;
            if id == 0 {
                return Err(ApiError::Down);
            }
            Ok(format!("{}:{id}", self.name))
        }

        async fn degraded(&self, id: u32, error: Error<ApiError>) -> Result<String, ApiError> {
            // Awaited: this only completes if the caller awaits the fallback.
            tokio::task::yield_now().await;
            let why = if matches!(error, failfast::Error::Rejected(_)) {
                "rejected"
            } else {
                "failed"
            };
            Ok(format!("{}:{id}:{why}", self.name))
        }
    }

    #[tokio::test]
    async fn async_fallback_is_awaited_with_the_same_arguments() {
        let service = Service { name: "inv".into() };
        assert_eq!(service.fetch(1).await.unwrap(), "inv:1");
        assert_eq!(service.fetch(0).await.unwrap(), "inv:0:failed");
        assert_eq!(service.fetch(2).await.unwrap(), "inv:2:rejected");
    }
}

mod neutral {
    use super::*;

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = ApiError::Down, name = "shapes::neutral")]
    fn call(fail_with: Option<ApiError>) -> Result<(), ApiError> {
        fail_with.map_or(Ok(()), Err)
    }

    #[test]
    fn neutral_errors_reach_the_caller_unchanged_and_never_trip() {
        for _ in 0..20 {
            assert_eq!(call(Some(ApiError::BadRequest)), Err(ApiError::BadRequest));
        }
        assert_eq!(state("shapes::neutral"), State::Closed);
        assert_eq!(call(None), Ok(()));
        assert_eq!(call(Some(ApiError::Down)), Err(ApiError::Down));
        assert_eq!(call(Some(ApiError::BadRequest)), Err(ApiError::BadRequest));
        assert_eq!(call(Some(ApiError::Down)), Err(ApiError::Down));
        assert_eq!(
            state("shapes::neutral"),
            State::Open,
            "neutral errors do not reset the count"
        );
    }
}

mod classify {
    use super::*;

    #[derive(Debug)]
    struct DependencyDown;

    impl fmt::Display for DependencyDown {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("dependency down")
        }
    }

    impl StdError for DependencyDown {}

    /// An error that wraps another one, as HTTP clients do.
    #[derive(Debug)]
    struct Request {
        source: Option<Box<dyn StdError + Send + Sync>>,
    }

    impl fmt::Display for Request {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("request failed")
        }
    }

    impl StdError for Request {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.source
                .as_deref()
                .map(|e| e as &(dyn StdError + 'static))
        }
    }

    type BoxError = Box<dyn StdError + Send + Sync>;

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = DependencyDown, name = "shapes::by_type")]
    fn by_type(error: Option<BoxError>) -> Result<(), BoxError> {
        error.map_or(Ok(()), Err)
    }

    fn deep_down() -> BoxError {
        Box::new(Request {
            source: Some(Box::new(Request {
                source: Some(Box::new(DependencyDown)),
            })),
        })
    }

    #[test]
    fn counts_by_type_looks_along_the_source_chain_of_a_boxed_error() {
        // Not in the chain: neutral, however often.
        for _ in 0..5 {
            let error = by_type(Some(Box::new(Request { source: None }))).unwrap_err();
            assert_eq!(error.to_string(), "request failed");
        }
        assert_eq!(state("shapes::by_type"), State::Closed);
        // Two levels down the chain: counted.
        assert!(by_type(Some(deep_down())).is_err());
        assert!(by_type(Some(Box::new(DependencyDown))).is_err());
        assert_eq!(state("shapes::by_type"), State::Open);
        let rejected = by_type(None).unwrap_err();
        assert!(rejected.downcast_ref::<Rejected>().is_some(), "{rejected}");
    }

    impl From<Rejected> for Request {
        fn from(rejected: Rejected) -> Self {
            Request {
                source: Some(Box::new(rejected)),
            }
        }
    }

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = DependencyDown, name = "shapes::by_type_concrete")]
    fn by_type_concrete(error: Option<Request>) -> Result<(), Request> {
        error.map_or(Ok(()), Err)
    }

    /// The same search from an error of a concrete type (not boxed), whose
    /// own `source()` starts the chain.
    #[test]
    fn counts_by_type_looks_along_the_source_chain_of_a_concrete_error() {
        // Not in the chain: neutral, however often.
        for _ in 0..5 {
            assert!(by_type_concrete(Some(Request { source: None })).is_err());
        }
        assert_eq!(state("shapes::by_type_concrete"), State::Closed);
        for _ in 0..2 {
            let wrapped = Request {
                source: Some(Box::new(DependencyDown)),
            };
            assert!(by_type_concrete(Some(wrapped)).is_err());
        }
        assert_eq!(state("shapes::by_type_concrete"), State::Open);
        let refused = by_type_concrete(None).unwrap_err();
        assert!(refused.source().unwrap().is::<Rejected>());
    }

    fn is_down(error: &ApiError) -> bool {
        *error == ApiError::Down
    }

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = is_down, name = "shapes::predicate_fn")]
    fn by_predicate_fn(error: ApiError) -> Result<(), ApiError> {
        Err(error)
    }

    #[circuit_breaker(threshold = 2, recovery = "60s", counts = |e: &ApiError| *e == ApiError::Down, name = "shapes::closure")]
    fn by_closure(error: ApiError) -> Result<(), ApiError> {
        Err(error)
    }

    #[test]
    fn counts_by_predicate_fn_and_by_closure() {
        for call in [
            by_predicate_fn as fn(ApiError) -> Result<(), ApiError>,
            by_closure,
        ] {
            for _ in 0..5 {
                assert_eq!(call(ApiError::BadRequest), Err(ApiError::BadRequest));
            }
        }
        assert_eq!(state("shapes::predicate_fn"), State::Closed);
        assert_eq!(state("shapes::closure"), State::Closed);
        for call in [
            by_predicate_fn as fn(ApiError) -> Result<(), ApiError>,
            by_closure,
        ] {
            assert_eq!(call(ApiError::Down), Err(ApiError::Down));
            assert_eq!(call(ApiError::Down), Err(ApiError::Down));
            assert_eq!(call(ApiError::Down), Err(ApiError::Rejected(State::Open)));
        }
    }

    #[circuit_breaker(
        threshold = 2,
        recovery = "60s",
        counts = ApiError::Down | ApiError::BadRequest,
        ignores = ApiError::BadRequest,
        name = "shapes::ignores"
    )]
    fn ignores_wins(error: ApiError) -> Result<(), ApiError> {
        Err(error)
    }

    #[test]
    fn ignores_wins_over_counts() {
        for _ in 0..5 {
            assert_eq!(
                ignores_wins(ApiError::BadRequest),
                Err(ApiError::BadRequest)
            );
        }
        assert_eq!(state("shapes::ignores"), State::Closed);
        assert_eq!(ignores_wins(ApiError::Down), Err(ApiError::Down));
        assert_eq!(ignores_wins(ApiError::Down), Err(ApiError::Down));
        assert_eq!(state("shapes::ignores"), State::Open);
    }

    #[circuit_breaker(threshold = 1, recovery = "60s", ignores = |e: &BoxError| e.is::<DependencyDown>(), name = "shapes::only_ignores")]
    fn only_ignores(error: BoxError) -> Result<(), BoxError> {
        Err(error)
    }

    #[test]
    fn ignores_alone_counts_every_other_error() {
        assert!(only_ignores(Box::new(DependencyDown)).is_err());
        assert_eq!(state("shapes::only_ignores"), State::Closed);
        assert!(only_ignores("other".into()).is_err());
        assert_eq!(state("shapes::only_ignores"), State::Open);
    }
}

mod panics {
    use super::*;

    #[circuit_breaker(threshold = 2, recovery = "60s", name = "shapes::panics")]
    fn explode(explode: bool) -> Result<(), ApiError> {
        assert!(!explode, "dependency client panicked");
        Ok(())
    }

    #[test]
    fn a_panic_in_the_body_counts_as_a_failure_and_keeps_unwinding() {
        for _ in 0..2 {
            let unwound = std::panic::catch_unwind(|| explode(true));
            assert!(unwound.is_err(), "the panic must reach the caller");
        }
        assert_eq!(state("shapes::panics"), State::Open);
        assert_eq!(explode(false), Err(ApiError::Rejected(State::Open)));
    }

    #[circuit_breaker(
        threshold = 1,
        recovery = "60s",
        counts = |_: &ApiError| -> bool { panic!("a bug in the predicate") },
        name = "shapes::predicate_panics"
    )]
    async fn judged_by_a_panicking_predicate() -> Result<(), ApiError> {
        tokio::task::yield_now().await;
        Err(ApiError::Down)
    }

    /// The protected future finished; the `counts` predicate that then
    /// judges its error panics. The dependency answered: the predicate's
    /// bug is not its failure.
    #[tokio::test]
    async fn a_panic_in_an_async_fns_counts_predicate_is_not_a_failure() {
        let task = tokio::spawn(judged_by_a_panicking_predicate());
        assert!(task.await.unwrap_err().is_panic());
        let s = registry::get("shapes::predicate_panics")
            .unwrap()
            .snapshot();
        assert_eq!(
            (s.state, s.consecutive_failures, s.failures),
            (State::Closed, 0, 0),
            "a predicate's panic was blamed on the dependency"
        );
    }
}

mod asynchronous {
    use super::*;

    struct Client {
        healthy: bool,
        polls: Arc<AtomicU32>,
    }

    impl Client {
        #[circuit_breaker(threshold = 2, recovery = "60s", name = "shapes::async_method")]
        async fn fetch(&self) -> Result<u32, ApiError> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            if self.healthy {
                Ok(1)
            } else {
                Err(ApiError::Down)
            }
        }
    }

    #[tokio::test]
    async fn an_async_method_breaker_trips_and_rejects_without_polling_the_body() {
        let polls = Arc::new(AtomicU32::new(0));
        let sick = Client {
            healthy: false,
            polls: polls.clone(),
        };
        assert_eq!(sick.fetch().await, Err(ApiError::Down));
        assert_eq!(sick.fetch().await, Err(ApiError::Down));
        let healthy = Client {
            healthy: true,
            polls: polls.clone(),
        };
        assert_eq!(healthy.fetch().await, Err(ApiError::Rejected(State::Open)));
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[async_trait::async_trait]
    trait Inventory {
        async fn stock(&self, sku: &str) -> Result<u32, ApiError>;
    }

    struct Remote {
        healthy: bool,
    }

    #[async_trait::async_trait]
    impl Inventory for Remote {
        #[circuit_breaker(threshold = 2, recovery = "60s", name = "shapes::async_trait")]
        async fn stock(&self, sku: &str) -> Result<u32, ApiError> {
            tokio::task::yield_now().await;
            if self.healthy {
                Ok(u32::try_from(sku.len()).unwrap_or(0))
            } else {
                Err(ApiError::Down)
            }
        }
    }

    #[tokio::test]
    async fn async_trait_methods_are_measured_by_their_future_not_its_creation() {
        let sick = Remote { healthy: false };
        // Futures created and dropped unpolled record nothing.
        for _ in 0..5 {
            drop(sick.stock("a"));
        }
        // If the breaker wrapped the creation of the box, each of these would
        // be a success and the breaker would never trip.
        assert_eq!(sick.stock("a").await, Err(ApiError::Down));
        assert_eq!(state("shapes::async_trait"), State::Closed);
        assert_eq!(sick.stock("a").await, Err(ApiError::Down));
        assert_eq!(state("shapes::async_trait"), State::Open);
        let healthy = Remote { healthy: true };
        assert_eq!(
            healthy.stock("a").await,
            Err(ApiError::Rejected(State::Open))
        );
    }

    // Long enough that a busy machine cannot deschedule the test past it
    // between a trip and the check that the breaker is open.
    #[circuit_breaker(threshold = 1, recovery = "300ms", name = "shapes::dropped")]
    async fn hang(hang: bool) -> Result<(), ApiError> {
        if hang {
            std::future::pending::<()>().await;
        }
        Err(ApiError::Down)
    }

    #[tokio::test]
    async fn a_trial_future_dropped_mid_flight_gives_the_trial_back() {
        assert_eq!(hang(false).await, Err(ApiError::Down));
        assert_eq!(state("shapes::dropped"), State::Open);
        tokio::time::sleep(std::time::Duration::from_millis(330)).await;
        // The trial hangs and is cancelled by the timeout.
        let cancelled =
            tokio::time::timeout(std::time::Duration::from_millis(20), hang(true)).await;
        assert!(cancelled.is_err());
        // A new trial is admitted (and fails, reopening the breaker).
        assert_eq!(hang(false).await, Err(ApiError::Down));
        assert_eq!(state("shapes::dropped"), State::Open);
    }
}

mod naming {
    use super::*;

    #[circuit_breaker]
    fn default_named() -> Result<(), ApiError> {
        Ok(())
    }

    #[test]
    fn the_default_name_is_the_module_path_and_the_function() {
        default_named().unwrap();
        let name = concat!(module_path!(), "::default_named");
        assert_eq!(
            registry::get(name).map(|b| b.name().to_owned()).as_deref(),
            Some(name)
        );
    }
}

mod slow_calls {
    use super::*;

    #[circuit_breaker(slow = "50ms", window = 2, recovery = "60s", name = "shapes::slow")]
    fn slow_but_fine(sleep_ms: u64) -> Result<(), ApiError> {
        std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
        Ok(())
    }

    #[test]
    fn slow_successes_trip_a_slow_call_rule_declared_in_the_attribute() {
        slow_but_fine(0).unwrap();
        slow_but_fine(60).unwrap();
        assert_eq!(
            state("shapes::slow"),
            State::Closed,
            "half the window is slow"
        );
        slow_but_fine(60).unwrap();
        assert_eq!(
            state("shapes::slow"),
            State::Open,
            "the whole window is slow"
        );
    }
}

#[cfg(feature = "anyhow")]
mod with_anyhow {
    use super::*;

    #[derive(Debug)]
    struct Refused;

    impl fmt::Display for Refused {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection refused")
        }
    }

    impl StdError for Refused {}

    #[circuit_breaker(threshold = 1, recovery = "60s", counts = Refused, name = "shapes::anyhow")]
    fn fetch(refused: bool) -> anyhow::Result<()> {
        if refused {
            return Err(anyhow::Error::new(Refused).context("fetching stock"));
        }
        anyhow::bail!("bad request")
    }

    #[test]
    fn counts_by_type_looks_inside_anyhow_contexts() {
        assert!(fetch(false).is_err());
        assert_eq!(state("shapes::anyhow"), State::Closed);
        assert!(fetch(true).is_err());
        assert_eq!(state("shapes::anyhow"), State::Open);
        let rejected = fetch(false).unwrap_err();
        assert!(rejected.downcast_ref::<Rejected>().is_some(), "{rejected}");
    }
}
