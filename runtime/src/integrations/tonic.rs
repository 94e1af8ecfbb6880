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
//! # A refusal carries its `Rejected`
//!
//! The status made of a refusal has the [`Rejected`] as its `source`
//! (`std::error::Error::source(&status)`, then `downcast_ref::<Rejected>()`):
//! a caller finds the breaker, the reason and the time to the next trial,
//! and every default rule of failfast takes a status that carries one as
//! neutral (`grpc_failure`, so the attribute's default; `GrpcClassifier`
//! and `HttpClassifier`, so the tower layer's). A breaker further up the
//! same process then does not count the refusal of one further down:
//! nothing was sent, and the failures that opened the lower breaker were
//! counted by the upper one as they happened. Without it, an outer
//! `#[circuit_breaker]` function calling an inner one with `?` would count
//! each of the inner breaker's refusals as one more `UNAVAILABLE`, and open
//! on one failure of the server. The same holds for a status tonic makes of
//! a refusal in its own way (the `UNKNOWN` a tonic client makes of a tower
//! layer's boxed `Rejected`, whose source it is too).
//!
//! The mark stays in the process: a source is not written into an answer
//! sent over the wire. A server that answers a refusal of its own breaker
//! answers its client a plain `UNAVAILABLE` (with the pushback), which the
//! client's breaker counts: to the client, that server is unavailable.
//! Neither can a server's answer pass for a refusal. A server's own
//! `UNAVAILABLE` counts at every level, as before.
//!
//! A timeout (`DEADLINE_EXCEEDED`, below) carries no mark: the call reached
//! the dependency and waited for it in vain, one sign of sickness that each
//! breaker on the way counts once, as it does a server's `UNAVAILABLE`.
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

use std::sync::Arc;
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
/// known. The rejection itself is the status's `source`
/// (`std::error::Error::source(&status)`, then `downcast_ref::<Rejected>()`),
/// which makes the status neutral to every breaker above it in the process:
/// see [`grpc_failure`](crate::integrations::classify::grpc_failure).
/// tonic's `Display` of the status names it too (`…, source: Rejected {
/// breaker: …, reason: …, … }`).
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
        status.set_source(Arc::new(rejected));
        status
    }
}

/// `DEADLINE_EXCEEDED`: the dependency did not answer within `timeout`.
/// Not marked as a refusal is: the breakers above count it.
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

    /// A refusal's status carries it as its source, found by a downcast
    /// and kept by a clone; a timeout's carries nothing.
    #[test]
    fn a_refusal_is_the_source_of_its_status_and_a_timeout_has_none() {
        let breaker = Breaker::builder().name("source-grpc").build().unwrap();
        breaker.set_mode(crate::Mode::ForcedOpen);
        let status = Status::from(breaker.acquire().unwrap_err()).clone();
        let source = std::error::Error::source(&status).expect("the refusal");
        let rejected = source.downcast_ref::<Rejected>().expect("a Rejected");
        assert_eq!(rejected.name(), "source-grpc");
        assert_eq!(rejected.reason(), crate::Reason::ForcedOpen);

        let timed_out = TimedOut::new(breaker.shared_name(), Duration::from_secs(1));
        let status = Status::from(timed_out);
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        assert!(std::error::Error::source(&status).is_none());
    }
}
