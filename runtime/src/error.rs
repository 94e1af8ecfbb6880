//! What a caller gets back when the breaker refuses or the call fails.

use std::fmt;
use std::time::Duration;

use crate::clock::RetryAt;

/// The state of a breaker, as callers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls pass through; outcomes are counted by the trip rule.
    Closed,
    /// Calls are rejected at once without touching the dependency.
    Open,
    /// A limited number of trial calls probe whether the dependency has recovered.
    HalfOpen,
}

impl State {
    /// A short lowercase name: `closed`, `open`, `half-open`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call refused by an open (or busy half-open) breaker. The protected code did
/// not run.
///
/// Functions annotated with `#[circuit_breaker]` and no `fallback` return
/// `Err(E::from(rejected))`, so their error type implements `From<Rejected>`:
///
/// ```
/// use failfast_runtime::Rejected;
///
/// #[derive(Debug)]
/// enum InventoryError {
///     Unavailable(Rejected),
///     Http(u16),
/// }
///
/// impl From<Rejected> for InventoryError {
///     fn from(rejected: Rejected) -> Self {
///         InventoryError::Unavailable(rejected)
///     }
/// }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Rejected {
    name: &'static str,
    state: State,
    retry_at: RetryAt,
}

impl Rejected {
    pub(crate) fn new(name: &'static str, state: State, retry_at: RetryAt) -> Self {
        Self {
            name,
            state,
            retry_at,
        }
    }

    /// The name of the breaker that refused the call.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The breaker's state when it refused: [`State::Open`], or
    /// [`State::HalfOpen`] when every trial permit was taken.
    #[must_use]
    pub fn state(&self) -> State {
        self.state
    }

    /// Time left until the breaker admits its next trial call, if known.
    ///
    /// Measured when you ask, so it counts down; `Some(Duration::ZERO)` means a trial
    /// is allowed now. `None` while the breaker is forced open or its trials are in
    /// flight (the next trial depends on how they end).
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_at.remaining()
    }
}

/// Shows what a log reader needs: the breaker, its state, and the time until
/// the next trial as a duration.
///
/// ```
/// # use failfast_runtime::{Breaker, ManualClock};
/// # use std::time::Duration;
/// let clock = ManualClock::new();
/// let breaker = Breaker::builder().name("payments").threshold(1)
///     .recovery(Duration::from_secs(30)).clock(clock.clone()).build()?;
/// let _ = breaker.call(|| Err::<(), _>("down"));
/// clock.advance(Duration::from_secs(10));
/// let rejected = breaker.acquire().unwrap_err();
/// assert_eq!(
///     format!("{rejected:?}"),
///     r#"Rejected { breaker: "payments", state: Open, retry_after: Some(20s) }"#
/// );
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("breaker", &self.name)
            .field("state", &self.state)
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "circuit breaker `{}` is {}", self.name, self.state)?;
        match self.state {
            State::HalfOpen => f.write_str(": its trial calls are in flight")?,
            State::Open | State::Closed => f.write_str(": call not attempted")?,
        }
        if let Some(after) = self.retry_after() {
            write!(f, "; next trial in {after:.3?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejected {}

/// A function returning `std::io::Result<T>` can be guarded without a
/// `fallback`: the refusal becomes an [`io::Error`](std::io::Error) of kind
/// [`ConnectionRefused`](std::io::ErrorKind::ConnectionRefused) (the
/// dependency is known to be down, so no connection was attempted), whose
/// message is the rejection's and whose inner error is the [`Rejected`]
/// itself.
///
/// ```
/// # use failfast_runtime::{Breaker, Rejected};
/// # use std::io;
/// let breaker = Breaker::builder().name("disk").threshold(1).build()?;
/// let _ = breaker.call(|| Err::<(), _>(io::Error::other("broken pipe")));
/// let error = io::Error::from(breaker.acquire().unwrap_err());
/// assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
/// let rejected = error.get_ref().and_then(|e| e.downcast_ref::<Rejected>()).unwrap();
/// assert_eq!(rejected.name(), "disk");
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
impl From<Rejected> for std::io::Error {
    fn from(rejected: Rejected) -> Self {
        std::io::Error::new(std::io::ErrorKind::ConnectionRefused, rejected)
    }
}

/// The error of a call through a breaker: either the breaker refused it, or the
/// protected code ran and failed.
///
/// This is what [`Breaker::call`](crate::Breaker::call) returns, and what a
/// `fallback` receives. It is `#[non_exhaustive]`: a `Timeout` variant will
/// join when breakers learn to time calls out, so a `match` needs a `_` arm
/// (or use [`is_rejected`](Error::is_rejected), [`failed`](Error::failed)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error<E> {
    /// The breaker refused the call; the protected code did not run.
    Rejected(Rejected),
    /// The protected code ran and returned this error.
    Failed(E),
}

impl<E> Error<E> {
    /// Whether the breaker refused the call.
    #[must_use]
    pub fn is_rejected(&self) -> bool {
        matches!(self, Error::Rejected(_))
    }

    /// Whether the protected code ran and failed.
    #[must_use]
    pub fn is_failed(&self) -> bool {
        matches!(self, Error::Failed(_))
    }

    /// The rejection, if the breaker refused the call.
    #[must_use]
    pub fn rejected(&self) -> Option<&Rejected> {
        match self {
            Error::Rejected(r) => Some(r),
            Error::Failed(_) => None,
        }
    }

    /// The protected code's error, if it ran and failed.
    #[must_use]
    pub fn failed(&self) -> Option<&E> {
        match self {
            Error::Failed(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }

    /// Takes the protected code's error, if it ran and failed.
    #[must_use]
    pub fn into_failed(self) -> Option<E> {
        match self {
            Error::Failed(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }

    /// Converts into the protected code's error type, turning a rejection into
    /// `E::from(rejected)`.
    pub fn into_inner(self) -> E
    where
        E: From<Rejected>,
    {
        match self {
            Error::Failed(e) => e,
            Error::Rejected(r) => E::from(r),
        }
    }
}

impl<E> From<Rejected> for Error<E> {
    fn from(rejected: Rejected) -> Self {
        Error::Rejected(rejected)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rejected(r) => fmt::Display::fmt(r, f),
            Error::Failed(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Rejected(_) => None,
            Error::Failed(e) => e.source(),
        }
    }
}

/// A breaker configuration that cannot work, returned by
/// [`Builder::build`](crate::Builder::build).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    setting: &'static str,
    problem: String,
}

impl ConfigError {
    pub(crate) fn new(setting: &'static str, problem: impl Into<String>) -> Self {
        Self {
            setting,
            problem: problem.into(),
        }
    }

    /// The builder setting at fault, named like the attribute key (`threshold`,
    /// `failure_rate`, …).
    #[must_use]
    pub fn setting(&self) -> &'static str {
        self.setting
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid circuit breaker setting `{}`: {}",
            self.setting, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}
