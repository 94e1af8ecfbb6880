//! Generated code must not trip lints in the user's crate.
//!
//! The inner attribute below denies every warning, `clippy::all` and
//! `clippy::pedantic` for this whole module, which uses every key and
//! every function shape of `#[circuit_breaker]` and of `#[retry]` (module
//! `retried`). `cargo test` proves the
//! expansion is warning-free for rustc; `cargo clippy --all-targets -- -D
//! warnings` (run by CI) proves it for clippy, because clippy lints this file
//! like any user crate. A lint firing in generated code fails CI here first.
//! Besides the default set, the strict rustc lints that users commonly deny
//! are denied too. `tests/calls/lint_guard.rs` covers every body shape under every
//! key combination with `clippy::nursery` denied as well.
#![deny(warnings, clippy::all, clippy::pedantic)]
#![deny(
    rust_2018_idioms,
    unused_qualifications,
    unused_results,
    unreachable_pub,
    trivial_casts,
    unused_lifetimes,
    single_use_lifetimes,
    unsafe_code
)]

use std::error::Error as StdError;
use std::fmt;

use failfast::{Error, Rejected, TimedOut, circuit_breaker};

#[derive(Debug, PartialEq)]
enum ApiError {
    Down,
    Timeout { after_ms: u64 },
    Status(u16),
    Rejected,
}

impl ApiError {
    fn is_transient(&self) -> bool {
        matches!(self, ApiError::Timeout { .. } | ApiError::Status(500..=599))
    }
}

impl From<Rejected> for ApiError {
    fn from(_: Rejected) -> Self {
        ApiError::Rejected
    }
}

impl From<TimedOut> for ApiError {
    fn from(timed_out: TimedOut) -> Self {
        ApiError::Timeout {
            after_ms: u64::try_from(timed_out.limit().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

fn is_client_error(error: &ApiError) -> bool {
    matches!(error, ApiError::Status(400..=499))
}

#[derive(Debug)]
struct DependencyDown;

impl fmt::Display for DependencyDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dependency down")
    }
}

impl StdError for DependencyDown {}

type BoxError = Box<dyn StdError + Send + Sync>;

#[allow(clippy::unnecessary_wraps, clippy::needless_pass_by_value)]
fn stock_unknown(_sku: &str, _error: Error<ApiError>) -> Result<u32, ApiError> {
    Ok(0)
}

#[circuit_breaker(
    failure_rate = 0.5,
    window = 20,
    min_calls = 10,
    slow = "2s",
    slow_rate = 0.8,
    recovery = "30s..1h 30m",
    jitter = 0.2,
    trial_calls = 3,
    success_threshold = 2,
    counts = ApiError::Down | ApiError::Timeout { .. } | ApiError::Status(500..=599),
    ignores = is_client_error,
    fallback = stock_unknown,
    name = "lints::every_key",
    crate = ::failfast,
)]
fn every_key(sku: &str) -> Result<u32, ApiError> {
    if sku.is_empty() {
        return Err(ApiError::Status(400));
    }
    Ok(1)
}

#[allow(clippy::needless_pass_by_value)]
fn unavailable(rejected: Rejected) -> String {
    rejected.to_string()
}

#[circuit_breaker(threshold = 3, max_concurrent = 2, reject_with = unavailable)]
fn rejects_with(n: u32) -> Result<u32, String> {
    Ok(n)
}

#[circuit_breaker(threshold = 3, recovery = "250ms", counts = |e: &ApiError| e.is_transient())]
fn closure(sku: &str) -> Result<&str, ApiError> {
    Ok(sku)
}

#[circuit_breaker(window = "1m", slow = "10s", counts = ApiError::is_transient)]
fn time_window(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[circuit_breaker(counts = DependencyDown)]
fn by_type(fail: bool) -> Result<u32, BoxError> {
    if fail {
        return Err(Box::new(DependencyDown));
    }
    Ok(1)
}

#[circuit_breaker]
fn generic<T: fmt::Debug>(value: &T) -> Result<String, ApiError> {
    Ok(format!("{value:?}"))
}

#[circuit_breaker]
fn impl_trait(items: &[u32]) -> Result<impl Iterator<Item = &u32> + '_, ApiError> {
    Ok(items.iter())
}

#[circuit_breaker]
fn io_alias(path: &str) -> anyhow::Result<usize> {
    Ok(path.len())
}

struct Client {
    base: String,
}

impl Client {
    #[circuit_breaker(threshold = 2)]
    fn base(&self) -> Result<&str, ApiError> {
        Ok(&self.base)
    }

    #[circuit_breaker(threshold = 2)]
    fn push(&mut self, c: char) -> Result<usize, ApiError> {
        self.base.push(c);
        Ok(self.base.len())
    }

    #[circuit_breaker(fallback = Self::cached)]
    async fn fetch(&self, id: u32) -> Result<String, ApiError> {
        tokio::task::yield_now().await;
        Ok(format!("{}{id}", self.base))
    }

    async fn cached(&self, id: u32, error: Error<ApiError>) -> Result<String, ApiError> {
        tokio::task::yield_now().await;
        Ok(format!(
            "{}{id}{}",
            self.base,
            matches!(error, Error::Rejected(_))
        ))
    }

    #[circuit_breaker(counts = ApiError::Down)]
    fn into_base(self) -> Result<String, ApiError> {
        Ok(self.base)
    }
}

#[async_trait::async_trait]
trait Inventory {
    async fn stock(&self, sku: &str) -> Result<u32, ApiError>;
}

#[async_trait::async_trait]
impl Inventory for Client {
    #[circuit_breaker(threshold = 2)]
    async fn stock(&self, sku: &str) -> Result<u32, ApiError> {
        tokio::task::yield_now().await;
        u32::try_from(sku.len() + self.base.len()).map_err(|_| ApiError::Down)
    }
}

#[circuit_breaker(threshold = 2)]
async fn free_async(fail: bool) -> Result<u32, BoxError> {
    if fail {
        return Err(Box::new(DependencyDown));
    }
    Ok(1)
}

#[cfg(feature = "tokio")]
#[circuit_breaker(slow = "1s", timeout = "2s", max_concurrent = 8, fallback = stock_unknown_async)]
async fn hangs_and_overload(sku: &str) -> Result<u32, ApiError> {
    tokio::task::yield_now().await;
    Ok(u32::try_from(sku.len()).unwrap_or(u32::MAX))
}

#[cfg(feature = "tokio")]
#[allow(clippy::unused_async)]
async fn stock_unknown_async(sku: &str, error: Error<ApiError>) -> Result<u32, ApiError> {
    stock_unknown(sku, error)
}

#[cfg(feature = "tokio")]
#[circuit_breaker(timeout = "2s", max_concurrent = 1)]
async fn timeout_without_fallback(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[circuit_breaker(max_concurrent = 1, fallback = |_error| Ok(0))]
fn bulkhead_sync(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[circuit_breaker(max_concurrent = 1, max_wait = "10ms", fallback = |_error| Ok(0))]
fn bulkhead_waiting_sync(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[circuit_breaker(shed = 2, fallback = |_error| Ok(0))]
fn graded_sync(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[circuit_breaker(shed = 1.5, threshold = 3, window = "5s", shed_window = "5s")]
async fn graded_async(shard: u32) -> Result<u32, ApiError> {
    Ok(shard)
}

#[cfg(feature = "tokio")]
#[circuit_breaker(timeout = "2s", max_concurrent = 2, max_wait = "10ms", key = shard)]
async fn bulkhead_waiting_async(shard: u32) -> Result<u32, ApiError> {
    Ok(shard)
}

#[allow(clippy::unnecessary_wraps, clippy::needless_pass_by_value)]
fn counted_ok_answer(_sku: &str, error: Error<ApiError, u32>) -> Result<u32, ApiError> {
    match error {
        Error::CountedOk(n) => Ok(n + 1),
        _ => Ok(0),
    }
}

#[circuit_breaker(counts_ok = 500..=599, fallback = counted_ok_answer)]
fn counts_ok_pattern(sku: &str) -> Result<u32, ApiError> {
    Ok(u32::try_from(sku.len()).unwrap_or(0))
}

#[circuit_breaker(counts_ok = |n: &u32| *n > 9, ignores = is_client_error, timeout = "1s")]
async fn counts_ok_predicate(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[cfg(feature = "http")]
#[circuit_breaker(counts_ok = failfast::classify::HttpClassifier, fallback = |_error| Ok(http::Response::new(())))]
fn counts_ok_classifier(status: u16) -> Result<http::Response<()>, ApiError> {
    let mut response = http::Response::new(());
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    Ok(response)
}

#[tokio::test]
async fn every_shape_compiles_without_warnings_and_runs() {
    assert_eq!(counts_ok_pattern("ab"), Ok(2));
    assert_eq!(counts_ok_predicate(3).await, Ok(3));
    #[cfg(feature = "http")]
    assert_eq!(
        counts_ok_classifier(204).map(|r| r.status().as_u16()),
        Ok(204)
    );
    #[cfg(feature = "tokio")]
    {
        assert_eq!(hangs_and_overload("ab").await, Ok(2));
        assert_eq!(timeout_without_fallback(3).await, Ok(3));
        assert_eq!(bulkhead_waiting_async(5).await, Ok(5));
    }
    assert_eq!(bulkhead_sync(4), Ok(4));
    assert_eq!(graded_sync(6), Ok(6));
    assert_eq!(graded_async(7).await, Ok(7));
    assert_eq!(bulkhead_waiting_sync(4), Ok(4));
    assert_eq!(every_key("a"), Ok(1));
    assert_eq!(rejects_with(2), Ok(2));
    assert_eq!(closure("a"), Ok("a"));
    assert_eq!(time_window(2), Ok(2));
    assert!(by_type(false).is_ok());
    assert_eq!(generic(&1).unwrap(), "1");
    assert_eq!(impl_trait(&[1, 2]).unwrap().count(), 2);
    assert_eq!(io_alias("ab").unwrap(), 2);
    let mut client = Client { base: "x".into() };
    assert_eq!(client.base(), Ok("x"));
    assert_eq!(client.push('y'), Ok(2));
    assert_eq!(client.fetch(1).await.unwrap(), "xy1");
    assert_eq!(client.stock("a").await, Ok(3));
    assert_eq!(client.into_base(), Ok("xy".to_owned()));
    assert_eq!(free_async(false).await.unwrap(), 1);
    let _ = ApiError::Timeout { after_ms: 1 };
}

/// `#[retry]`, alone and above `#[circuit_breaker]`, under the same lints:
/// every key and every shape.
mod retried {
    use super::{ApiError, BoxError, DependencyDown, circuit_breaker, fmt};
    use failfast::retry;

    #[retry(
        attempts = 4,
        backoff = "1ms..1h 30m",
        jitter = 0.5,
        retry_on = ApiError::Down | ApiError::Status(502..=504),
        budget = 0.1,
        crate = ::failfast,
    )]
    #[circuit_breaker(threshold = 3, counts = ApiError::is_transient, counts_ok = 7, name = "lints::retried")]
    pub(super) fn every_key(sku: &str) -> Result<u32, ApiError> {
        match sku {
            "" => Err(ApiError::Status(400)),
            "down" => Err(ApiError::Status(503)),
            _ => Ok(1),
        }
    }

    #[retry(retry_on = |e: &ApiError| e.is_transient())]
    pub(super) fn closure(sku: &str) -> Result<&str, ApiError> {
        Ok(sku)
    }

    #[retry(retry_on = DependencyDown)]
    #[circuit_breaker(counts = DependencyDown)]
    pub(super) fn by_type(fail: bool) -> Result<u32, BoxError> {
        if fail {
            return Err(Box::new(DependencyDown));
        }
        Ok(1)
    }

    #[retry(attempts = 1)]
    #[circuit_breaker]
    pub(super) fn generic<T: fmt::Debug>(value: &T) -> Result<String, ApiError> {
        Ok(format!("{value:?}"))
    }

    #[retry]
    #[circuit_breaker]
    pub(super) fn impl_trait(items: &[u32]) -> Result<impl Iterator<Item = &u32> + '_, ApiError> {
        Ok(items.iter())
    }

    pub(super) struct Client {
        pub(super) base: String,
    }

    impl Client {
        #[retry]
        #[circuit_breaker(threshold = 2)]
        pub(super) fn base(&self) -> Result<&str, ApiError> {
            Ok(&self.base)
        }

        #[retry]
        #[circuit_breaker(threshold = 2)]
        pub(super) fn push(&mut self, c: char) -> Result<usize, ApiError> {
            self.base.push(c);
            Ok(self.base.len())
        }

        #[retry]
        pub(super) fn len(self) -> Result<usize, ApiError> {
            Ok(self.base.len())
        }
    }

    #[cfg(feature = "tokio")]
    #[retry(backoff = "1ms")]
    #[circuit_breaker(threshold = 2)]
    pub(super) async fn stock(sku: &str) -> Result<usize, ApiError> {
        tokio::task::yield_now().await;
        Ok(sku.len())
    }

    #[cfg(feature = "tokio")]
    #[retry(backoff = "1ms", retry_on = ApiError::Down)]
    pub(super) async fn alone(n: u32) -> Result<u32, ApiError> {
        Ok(n)
    }
}

#[tokio::test]
async fn retried_shapes_compile_without_warnings_and_run() {
    assert_eq!(retried::every_key("a"), Ok(1));
    assert_eq!(retried::every_key(""), Err(ApiError::Status(400)));
    assert_eq!(retried::every_key("down"), Err(ApiError::Status(503)));
    assert_eq!(retried::closure("a"), Ok("a"));
    assert!(retried::by_type(false).is_ok());
    assert_eq!(retried::generic(&1).as_deref(), Ok("1"));
    assert_eq!(retried::impl_trait(&[1, 2]).map(Iterator::count), Ok(2));
    let mut client = retried::Client { base: "x".into() };
    assert_eq!(client.base(), Ok("x"));
    assert_eq!(client.push('y'), Ok(2));
    assert_eq!(client.len(), Ok(2));
    #[cfg(feature = "tokio")]
    {
        assert_eq!(retried::stock("ab").await, Ok(2));
        assert_eq!(retried::alone(3).await, Ok(3));
    }
}
