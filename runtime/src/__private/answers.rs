//! What the caller gets: the function's `Result` taken apart and built
//! again, a refusal or a timeout turned into its error type, a fallback's
//! future; each with the compile error a user reads when it cannot be.

use std::future::IntoFuture;

use crate::core::error::{Rejected, TimedOut};

/// What an async function's closure fallback returns: a future.
#[diagnostic::on_unimplemented(
    message = "an async function's fallback returns a future, not `{Self}`",
    label = "this fallback returns `{Self}`",
    note = "write the closure's body as a future: `|error| async move {{ … }}`"
)]
pub trait FallbackFuture: IntoFuture {}

impl<F: IntoFuture> FallbackFuture for F {}

/// Error types a timeout can be turned into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a timeout of the call",
    label = "this error type has no `From<failfast::TimedOut>`",
    note = "with `timeout`, implement `From<failfast::TimedOut>` for `{Self}` if it is your own type; for another crate's (the orphan rule does not allow that impl), give the attribute a `fallback = …` that answers when the call times out, or return an error type of your own that wraps `{Self}`"
)]
pub trait FromTimedOut {
    /// Converts the timeout.
    fn from_timed_out(timed_out: TimedOut) -> Self;
}

impl<E: From<TimedOut>> FromTimedOut for E {
    fn from_timed_out(timed_out: TimedOut) -> Self {
        E::from(timed_out)
    }
}

/// `E::from(timed_out)`, with a readable compile error when `E` can't.
#[inline]
pub fn timed_out<E: FromTimedOut>(timed_out: TimedOut) -> E {
    E::from_timed_out(timed_out)
}

/// A function's return type that is `Result<T, E>` under any name
/// (`io::Result<T>`, `type ApiResult<T> = Result<T, ApiError>`), so that
/// generated code can take what the body returned apart and build it again.
/// Implemented for `Result` only: a function returning anything else gets the
/// message below, once, at its return type.
#[diagnostic::on_unimplemented(
    message = "`#[circuit_breaker]` and `#[retry]` guard functions that return a `Result`, but this one returns `{Self}`",
    label = "not a `Result<T, E>`",
    note = "an `Err` is how a call tells the breaker (or the retries) it failed: return `Result<T, E>` or an alias of it under any name (`std::io::Result<T>`, `type Outcome<T> = Result<T, ApiError>`)"
)]
pub trait ResultParts<T, E>: Sized {
    /// The value as a plain `Result`.
    fn into_result(self) -> Result<T, E>;
    /// The plain `Result` as the function's return type.
    fn from_result(result: Result<T, E>) -> Self;
}

impl<T, E> ResultParts<T, E> for Result<T, E> {
    #[inline]
    fn into_result(self) -> Self {
        self
    }
    #[inline]
    fn from_result(result: Self) -> Self {
        result
    }
}

/// Error types a rejection can be turned into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a circuit breaker rejection",
    label = "this error type has no `From<failfast::Rejected>`",
    note = "if `{Self}` is your own type, implement `From<failfast::Rejected>` for it",
    note = "if `{Self}` comes from another crate, that impl is not allowed (the orphan rule): give the attribute a `fallback = …` that answers when the breaker refuses, or return an error type of your own that wraps `{Self}` and implements `From<failfast::Rejected>` (`reject_with = path` fits only an error type you can build from a refusal, such as `String`)"
)]
pub trait FromRejected {
    /// Converts the rejection.
    fn from_rejected(rejected: Rejected) -> Self;
}

impl<E: From<Rejected>> FromRejected for E {
    fn from_rejected(rejected: Rejected) -> Self {
        E::from(rejected)
    }
}

/// `E::from(rejected)`, with a readable compile error when `E` can't.
#[inline]
pub fn rejected<E: FromRejected>(rejected: Rejected) -> E {
    E::from_rejected(rejected)
}
