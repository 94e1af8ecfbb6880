//! Rejections as gRPC statuses (feature `tonic`), and timeouts as
//! `DEADLINE_EXCEEDED`. A rejection is `UNAVAILABLE`, the code
//! gRPC clients treat as "try again later", with the time until the next
//! trial in `grpc-retry-pushback-ms` metadata (the key gRPC's retry policy
//! honours) when the breaker knows it.
//!
//! A service or client method returning `Result<T, tonic::Status>` can then be
//! guarded without a `fallback`.
//!
//! ```
//! # use failfast_runtime::{Breaker, ManualClock};
//! # use std::time::Duration;
//! let clock = ManualClock::new();
//! let breaker = Breaker::builder().name("ledger").threshold(1)
//!     .recovery(Duration::from_secs(30)).clock(clock.clone()).build()?;
//! let _ = breaker.call(|| Err::<(), _>("down"));
//! clock.advance(Duration::from_secs(10));
//!
//! let status = tonic::Status::from(breaker.acquire().unwrap_err());
//! assert_eq!(status.code(), tonic::Code::Unavailable);
//! assert_eq!(status.metadata().get("grpc-retry-pushback-ms").unwrap(), "20000");
//! assert!(status.message().contains("`ledger` is open"));
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

use tonic::metadata::MetadataValue;
use tonic::Status;

use crate::{Rejected, TimedOut};

/// `UNAVAILABLE`, the rejection's message, and `grpc-retry-pushback-ms` when
/// the time to the next trial is known.
impl From<Rejected> for Status {
    fn from(rejected: Rejected) -> Self {
        let pushback = rejected.retry_after();
        let mut status = Status::unavailable(rejected.to_string());
        if let Some(after) = pushback {
            let millis = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
            status
                .metadata_mut()
                .insert("grpc-retry-pushback-ms", MetadataValue::from(millis));
        }
        status
    }
}

/// `DEADLINE_EXCEEDED`: the dependency did not answer within `timeout`.
impl From<TimedOut> for Status {
    fn from(timed_out: TimedOut) -> Self {
        Status::deadline_exceeded(timed_out.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Breaker;

    #[test]
    fn a_forced_open_breaker_gives_no_pushback() {
        let breaker = Breaker::builder().name("forced-grpc").build().unwrap();
        breaker.force_open();
        let status = Status::from(breaker.acquire().unwrap_err());
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(status.metadata().get("grpc-retry-pushback-ms").is_none());
        assert!(
            status.message().contains("`forced-grpc`"),
            "{}",
            status.message()
        );
    }
}
