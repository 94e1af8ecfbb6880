//! Rejections as gRPC statuses (feature `tonic`), and timeouts as
//! `DEADLINE_EXCEEDED`. A rejection is `UNAVAILABLE`, the code
//! gRPC clients treat as "try again later", with the time until the next
//! trial in `grpc-retry-pushback-ms` metadata (the key gRPC's retry policy
//! honours) when the breaker knows it, rounded up to a whole millisecond so
//! a client that waits exactly that long is not refused again.
//!
//! A service or client method returning `Result<T, tonic::Status>` can then be
//! guarded without a `fallback`.
//!
//! # Which statuses count
//!
//! Without `counts = …`, the attribute counts a `tonic::Status` as a failure
//! only when [`grpc_failure`](crate::integrations::classify::grpc_failure) does: the codes
//! that say the server is sick or overloaded (`UNAVAILABLE`,
//! `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNKNOWN`). Every
//! other code is the caller's (`INVALID_ARGUMENT`, `NOT_FOUND`,
//! `PERMISSION_DENIED`, …): neutral, so three bad requests do not open the
//! breaker, and `#[retry]` does not repeat them. An explicit `counts`
//! replaces this rule; for any other error type, every `Err` counts.
//!
//! tonic's own time limits, `Endpoint::timeout` and `Request::set_timeout`
//! (`grpc-timeout`), do not surface as `DEADLINE_EXCEEDED`: the caller gets
//! `CANCELLED` with the message `Timeout expired`. The default counts that
//! status, telling it from a cancellation of the caller's own (also
//! `CANCELLED`, not counted) by the message alone, since tonic gives the two
//! no other difference. The attribute's own `timeout = "…"` does not depend
//! on tonic's text: a call past it is a counted failure whatever `counts`
//! says, and is answered `DEADLINE_EXCEEDED` (below).
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

use std::time::Duration;

use tonic::Status;
use tonic::metadata::MetadataValue;

use crate::{Rejected, TimedOut};

/// `grpc-retry-pushback-ms`: the time to the next trial in whole
/// milliseconds, rounded up (1.5 ms is 2, 0.2 ms is 1), so a client that
/// waits that long finds the trial admitted instead of being refused again.
fn pushback_millis(after: Duration) -> u64 {
    let millis = after.as_millis() + u128::from(after.subsec_nanos() % 1_000_000 > 0);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

/// `UNAVAILABLE`, the rejection's message, and `grpc-retry-pushback-ms`
/// (rounded up to the next millisecond) when the time to the next trial is
/// known.
impl From<Rejected> for Status {
    fn from(rejected: Rejected) -> Self {
        let pushback = rejected.retry_after();
        let mut status = Status::unavailable(rejected.to_string());
        if let Some(after) = pushback {
            let millis = pushback_millis(after);
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
    use crate::{Breaker, ManualClock};

    /// The pushback of a breaker that opened with `recovery` just now.
    fn pushback(recovery: Duration) -> String {
        let breaker = Breaker::builder()
            .name("pushback-grpc")
            .threshold(1)
            .recovery(recovery)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let _ = breaker.call(|| Err::<(), _>("down"));
        let rejected = breaker.acquire().unwrap_err();
        assert_eq!(rejected.retry_after(), Some(recovery));
        let status = Status::from(rejected);
        let value = status.metadata().get("grpc-retry-pushback-ms").unwrap();
        value.to_str().unwrap().to_owned()
    }

    #[test]
    fn the_pushback_rounds_a_part_of_a_millisecond_up() {
        assert_eq!(pushback(Duration::from_micros(1_500)), "2");
        assert_eq!(pushback(Duration::from_micros(200)), "1");
        assert_eq!(pushback(Duration::from_nanos(1)), "1");
        assert_eq!(pushback(Duration::from_millis(3)), "3");
        assert_eq!(pushback(Duration::from_nanos(3_000_001)), "4");
        assert_eq!(pushback_millis(Duration::ZERO), 0);
        assert_eq!(pushback_millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn a_forced_open_breaker_gives_no_pushback() {
        let breaker = Breaker::builder().name("forced-grpc").build().unwrap();
        breaker.set_mode(crate::Mode::ForcedOpen);
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
