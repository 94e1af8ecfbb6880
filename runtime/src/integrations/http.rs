//! Rejections and timeouts as HTTP responses (feature `http`): `503 Service
//! Unavailable`, with `Retry-After` when the breaker knows when it will try
//! again, and `504 Gateway Timeout` for a call that ran out of `timeout`.
//!
//! A handler or client function returning `Result<T, http::StatusCode>` or
//! `Result<T, http::Response<B>>` can then be guarded without a `fallback`.
//!
//! The `Response` made of a refusal carries the [`Rejected`] as an extension
//! (`response.extensions().get::<Rejected>()`), which `HttpClassifier` and
//! `GrpcClassifier` take as neutral: a tower layer over another layer that
//! answers its refusals with this response (`RefuseWithResponse`), or over a
//! handler that passes on a refusal this way, does not count what never
//! reached the dependency, and still counts the dependency's own 503.
//! Extensions are not sent over the wire: a client of this server sees a
//! plain 503 with `Retry-After`, and counts it. A `StatusCode` carries
//! nothing but its number: a refusal converted to one is any 503, and
//! `StatusCode::is_server_error` counts it. A timeout (504) carries no mark: the call
//! waited for the dependency in vain, which every breaker on the way counts.
//!
//! ```
//! # use failfast_runtime::{Breaker, ManualClock};
//! # use std::time::Duration;
//! let clock = ManualClock::new();
//! let breaker = Breaker::builder().name("search").threshold(1)
//!     .recovery(Duration::from_secs(30)).clock(clock.clone()).build()?;
//! let _ = breaker.call(|| Err::<(), _>("down"));
//! clock.advance(Duration::from_millis(20_500));
//!
//! let response = http::Response::<String>::from(breaker.acquire().unwrap_err());
//! assert_eq!(response.status(), http::StatusCode::SERVICE_UNAVAILABLE);
//! assert_eq!(response.headers()["retry-after"], "10");
//! assert!(response.body().contains("`search` is open"));
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

use http::header::{HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};

use crate::{Rejected, TimedOut};

/// `Retry-After` in whole seconds, rounded up so a client that waits that
/// long finds the trial admitted.
pub(crate) fn retry_after_seconds(rejected: &Rejected) -> Option<u64> {
    rejected.retry_after().map(|after| {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        seconds.max(1)
    })
}

/// `503 Service Unavailable`. A status code has no room for the refusal:
/// an outer breaker counting with `StatusCode::is_server_error` counts it
/// as any 503.
impl From<Rejected> for StatusCode {
    fn from(_: Rejected) -> Self {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

/// `503 Service Unavailable`, `Retry-After` in seconds when known, and the
/// rejection's message as the body (for any body type built from a
/// `String`). The rejection itself is an extension of the response
/// (`response.extensions().get::<Rejected>()`, not sent over the wire),
/// which makes it neutral to the classifiers of the tower layers above:
/// see [`HttpClassifier`](crate::integrations::classify::HttpClassifier).
impl<B: From<String>> From<Rejected> for Response<B> {
    fn from(rejected: Rejected) -> Self {
        let retry_after = retry_after_seconds(&rejected);
        let mut response = Response::new(B::from(rejected.to_string()));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        response.extensions_mut().insert(rejected);
        response
    }
}

/// `504 Gateway Timeout`: the dependency did not answer within `timeout`.
impl From<TimedOut> for StatusCode {
    fn from(_: TimedOut) -> Self {
        StatusCode::GATEWAY_TIMEOUT
    }
}

/// `504 Gateway Timeout`, with the timeout's message as the body.
impl<B: From<String>> From<TimedOut> for Response<B> {
    fn from(timed_out: TimedOut) -> Self {
        let mut response = Response::new(B::from(timed_out.to_string()));
        *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Breaker, ManualClock};
    use std::time::Duration;

    fn rejected_after(elapsed: Duration, recovery: Duration) -> Rejected {
        let clock = ManualClock::new();
        let breaker = Breaker::builder()
            .name("http-test")
            .threshold(1)
            .recovery(recovery)
            .clock(clock.clone())
            .build()
            .unwrap();
        let _ = breaker.call(|| Err::<(), _>("down"));
        clock.advance(elapsed);
        breaker.acquire().unwrap_err()
    }

    #[test]
    fn retry_after_rounds_up_to_a_whole_second_and_is_never_zero() {
        let secs = |ms| {
            retry_after_seconds(&rejected_after(
                Duration::from_millis(ms),
                Duration::from_secs(30),
            ))
        };
        assert_eq!(secs(0), Some(30));
        assert_eq!(secs(1), Some(30));
        assert_eq!(secs(999), Some(30));
        assert_eq!(secs(1_000), Some(29));
        assert_eq!(secs(29_999), Some(1));
    }

    #[test]
    fn a_timeout_is_gateway_timeout() {
        let breaker = Breaker::builder().name("slow").build().unwrap();
        let timed_out = crate::TimedOut::new(breaker.shared_name(), Duration::from_secs(3));
        assert_eq!(
            StatusCode::from(timed_out.clone()),
            StatusCode::GATEWAY_TIMEOUT
        );
        let response = Response::<String>::from(timed_out);
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(
            response.body().contains("`slow` timed out after 3s"),
            "{}",
            response.body()
        );
    }

    #[test]
    fn a_status_code_is_service_unavailable() {
        let rejected = rejected_after(Duration::ZERO, Duration::from_secs(5));
        assert_eq!(StatusCode::from(rejected), StatusCode::SERVICE_UNAVAILABLE);
    }

    /// The response made of a refusal carries it; a timeout's carries
    /// nothing.
    #[test]
    fn a_refusal_is_an_extension_of_its_response_and_a_timeout_has_none() {
        let response =
            Response::<String>::from(rejected_after(Duration::ZERO, Duration::from_secs(5)));
        let rejected = response
            .extensions()
            .get::<Rejected>()
            .expect("the refusal");
        assert_eq!(rejected.name(), "http-test");
        assert_eq!(rejected.retry_after(), Some(Duration::from_secs(5)));

        let breaker = Breaker::builder().name("slow").build().unwrap();
        let timed_out = crate::TimedOut::new(breaker.shared_name(), Duration::from_secs(3));
        let response = Response::<String>::from(timed_out);
        assert!(response.extensions().get::<Rejected>().is_none());
    }

    #[test]
    fn a_forced_open_breaker_has_no_retry_after() {
        let breaker = Breaker::builder().name("forced").build().unwrap();
        breaker.set_mode(crate::Mode::ForcedOpen);
        let response = Response::<String>::from(breaker.acquire().unwrap_err());
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.headers().get(RETRY_AFTER).is_none());
        assert!(response.body().contains("`forced`"), "{}", response.body());
    }
}
