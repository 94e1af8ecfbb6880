//! What a caller gets back when the breaker refuses or the call fails.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

use crate::core::clock::RetryAt;
use crate::core::name::Name;

/// The state of a breaker, as callers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum State {
    /// Calls pass through; outcomes are counted by the trip rule.
    Closed,
    /// Calls are rejected at once without touching the dependency.
    Open,
    /// A limited number of trial calls probe whether the dependency has recovered.
    HalfOpen,
}

impl State {
    /// A short lowercase name: `closed`, `open`, `half-open` (as `Display`
    /// writes it).
    #[must_use]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Why a call was refused; see [`Rejected::reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The breaker is open: the dependency looked sick, and the open period
    /// has not passed yet.
    Open,
    /// The breaker is half-open and every trial slot is taken: the trials in
    /// flight decide whether it closes.
    TrialsInFlight,
    /// The breaker is forced open by hand
    /// ([`Breaker::set_mode`](crate::Breaker::set_mode)).
    ForcedOpen,
    /// As many calls as `max_concurrent` (or
    /// [`Builder::adaptive_concurrency`](crate::Builder::adaptive_concurrency))
    /// allows are already running. Not evidence against the dependency: it
    /// moves no counter of the breaker.
    ConcurrencyLimit,
    /// Graded shedding (`shed`) refused the call at random: the breaker is
    /// closed, and more of the window's calls failed than its multiplier
    /// allows. Not evidence against the dependency: it moves no counter of
    /// the breaker but `shed`.
    Shed,
}

impl Reason {
    /// A short lowercase description: `open`, `half-open trials in flight`,
    /// `forced open`, `concurrency limit`, `shed` (as `Display` writes it).
    #[must_use]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Reason::Open => "open",
            Reason::TrialsInFlight => "half-open trials in flight",
            Reason::ForcedOpen => "forced open",
            Reason::ConcurrencyLimit => "concurrency limit",
            Reason::Shed => "shed",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A call refused by an open (or busy half-open) breaker, or at its
/// concurrency limit (`max_concurrent`). The protected code did not run;
/// [`reason`](Rejected::reason) says which.
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
    name: Name,
    state: State,
    reason: Reason,
    retry_at: RetryAt,
}

impl Rejected {
    /// A refusal by the breaker itself. Its reason follows from what the
    /// breaker reports: only a breaker forced open rejects in `Open` without
    /// a known time for the next trial, and a half-open breaker rejects only
    /// when its trial slots are taken.
    pub(crate) fn new(name: Name, state: State, retry_at: RetryAt) -> Self {
        let reason = match (state, retry_at) {
            (State::HalfOpen, _) => Reason::TrialsInFlight,
            (_, RetryAt::UNKNOWN) => Reason::ForcedOpen,
            _ => Reason::Open,
        };
        Self {
            name,
            state,
            reason,
            retry_at,
        }
    }

    /// A refusal by a full bulkhead in front of breaker `name`, in `state`.
    pub(crate) fn concurrency_limit(name: Name, state: State) -> Self {
        Self {
            name,
            state,
            reason: Reason::ConcurrencyLimit,
            retry_at: RetryAt::UNKNOWN,
        }
    }

    /// A call of breaker `name` refused by graded shedding, in `Closed`.
    pub(crate) fn shed(name: Name) -> Self {
        Self {
            name,
            state: State::Closed,
            reason: Reason::Shed,
            retry_at: RetryAt::UNKNOWN,
        }
    }

    /// The name of the breaker that refused the call.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The breaker's state when it refused: [`State::Open`], or
    /// [`State::HalfOpen`] when every trial permit was taken. For a refusal
    /// at the concurrency limit, the state the breaker had admitted the call
    /// in (`Closed`, or `HalfOpen` for a trial, whose slot is given back).
    /// For a call shed, `Closed`.
    #[must_use]
    pub fn state(&self) -> State {
        self.state
    }

    /// Why the call was refused: the breaker is open, its half-open trials
    /// are in flight, it is forced open, or (with `max_concurrent`) the
    /// concurrency limit is reached.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Reason};
    ///
    /// let breaker = Breaker::builder().build()?;
    /// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
    /// assert_eq!(breaker.acquire().unwrap_err().reason(), Reason::ForcedOpen);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[must_use]
    pub fn reason(&self) -> Reason {
        self.reason
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
///     r#"Rejected { breaker: "payments", state: Open, reason: Open, retry_after: Some(20s) }"#
/// );
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("breaker", &self.name)
            .field("state", &self.state)
            .field("reason", &self.reason)
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            Reason::ConcurrencyLimit => {
                return write!(
                    f,
                    "circuit breaker `{}` is at its concurrency limit: call not attempted",
                    self.name
                );
            }
            Reason::Shed => {
                return write!(
                    f,
                    "circuit breaker `{}` is shedding load: call not attempted",
                    self.name
                );
            }
            _ => {}
        }
        write!(f, "circuit breaker `{}` is {}", self.name, self.state)?;
        match self.reason {
            Reason::TrialsInFlight => f.write_str(": its trial calls are in flight")?,
            _ => f.write_str(": call not attempted")?,
        }
        if let Some(after) = self.retry_after() {
            write!(f, "; next trial in {after:.3?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejected {}

/// A function returning `std::io::Result<T>` can be guarded without a
/// `fallback`: the refusal becomes an [`io::Error`](std::io::Error) whose
/// message is the rejection's and whose inner error is the [`Rejected`]
/// itself. Its kind is
/// [`ResourceBusy`](std::io::ErrorKind::ResourceBusy) for a refusal at the
/// concurrency limit or by graded shedding, and
/// [`ConnectionRefused`](std::io::ErrorKind::ConnectionRefused) otherwise
/// (the dependency is known to be down, so no connection was attempted).
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
        let kind = if matches!(rejected.reason, Reason::ConcurrencyLimit | Reason::Shed) {
            std::io::ErrorKind::ResourceBusy
        } else {
            std::io::ErrorKind::ConnectionRefused
        };
        std::io::Error::new(kind, rejected)
    }
}

/// A call that ran out of its time limit (`timeout = "3s"`): the protected
/// future was dropped at the deadline, and the breaker counted a failure.
///
/// Functions annotated with `#[circuit_breaker(timeout = ..)]` and no
/// `fallback` return `Err(E::from(timed_out))`, so their error type
/// implements `From<TimedOut>`:
///
/// ```
/// use failfast_runtime::{Rejected, TimedOut};
///
/// #[derive(Debug)]
/// enum InventoryError {
///     Unavailable(Rejected),
///     TimedOut(TimedOut),
///     Http(u16),
/// }
///
/// impl From<TimedOut> for InventoryError {
///     fn from(timed_out: TimedOut) -> Self {
///         InventoryError::TimedOut(timed_out)
///     }
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimedOut {
    name: Name,
    limit: Duration,
}

impl TimedOut {
    pub(crate) fn new(name: Name, limit: Duration) -> Self {
        Self { name, limit }
    }

    /// The name of the breaker the call went through.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The time limit the call ran out of.
    #[must_use]
    pub fn limit(&self) -> Duration {
        self.limit
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "call through circuit breaker `{}` timed out after {:?}",
            self.name, self.limit
        )
    }
}

impl std::error::Error for TimedOut {}

/// A timed-out call of a function returning `std::io::Result<T>`: an
/// [`io::Error`](std::io::Error) of kind
/// [`TimedOut`](std::io::ErrorKind::TimedOut) with the [`TimedOut`] inside.
impl From<TimedOut> for std::io::Error {
    fn from(timed_out: TimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, timed_out)
    }
}

/// The error of a call through a breaker: the breaker refused it, the
/// protected code ran and failed, or it ran out of its time limit; with
/// `counts_ok`, also an `Ok` counted as a failure.
///
/// This is what [`Breaker::call`](crate::Breaker::call) returns, and what a
/// `fallback` receives. It is `#[non_exhaustive]`, so a `match` needs a `_`
/// arm; `matches!(error, Error::Rejected(_))` asks which it is.
///
/// `T` is the type of the values the function returns in `Ok`: it is
/// carried only by [`Error::CountedOk`], the `Ok` a `#[circuit_breaker(counts_ok
/// = …)]` counted as a failure. Without `counts_ok` it is left to its
/// default, [`Infallible`](std::convert::Infallible): `Error<E>` is
/// `Error<E, Infallible>`, and a fallback's parameter is written
/// `failfast::Error<E>`. With `counts_ok`, the fallback takes
/// `failfast::Error<E, T>` and answers the counted `Ok` too:
///
/// ```
/// use failfast_runtime::Error;
///
/// #[derive(Debug)]
/// struct Reply { status: u16 }
///
/// fn answer(error: Error<std::io::Error, Reply>) -> Result<Reply, std::io::Error> {
///     match error {
///         // the dependency answered, and `counts_ok` judged it sick:
///         // here the answer is passed on, after the breaker counted it
///         Error::CountedOk(reply) => Ok(reply),
///         Error::Failed(e) => Err(e),
///         _ => Ok(Reply { status: 503 }),
///     }
/// }
/// assert_eq!(answer(Error::CountedOk(Reply { status: 502 })).unwrap().status, 502);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error<E, T = Infallible> {
    /// The breaker refused the call; the protected code did not run.
    Rejected(Rejected),
    /// The protected code ran and returned this error.
    Failed(E),
    /// The protected code ran past its time limit and was dropped; the
    /// breaker counted it as a failure.
    Timeout(TimedOut),
    /// The protected code ran and returned `Ok` with this value, which the
    /// attribute's `counts_ok` counted as a failure (an HTTP 503 answered
    /// as `Ok(response)`).
    CountedOk(T),
}

impl<E, T> From<TimedOut> for Error<E, T> {
    fn from(timed_out: TimedOut) -> Self {
        Error::Timeout(timed_out)
    }
}

impl<E, T> From<Rejected> for Error<E, T> {
    fn from(rejected: Rejected) -> Self {
        Error::Rejected(rejected)
    }
}

/// A counted `Ok` shows as what it is, whatever its value's type: the
/// value is the caller's to read (`Error::CountedOk(value)`).
impl<E: fmt::Display, T> fmt::Display for Error<E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rejected(r) => fmt::Display::fmt(r, f),
            Error::Failed(e) => fmt::Display::fmt(e, f),
            Error::Timeout(t) => fmt::Display::fmt(t, f),
            Error::CountedOk(_) => {
                f.write_str("the call returned `Ok` with a value `counts_ok` counts as a failure")
            }
        }
    }
}

impl<E: std::error::Error + 'static, T: fmt::Debug> std::error::Error for Error<E, T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Failed(e) => e.source(),
            Error::Rejected(_) | Error::Timeout(_) | Error::CountedOk(_) => None,
        }
    }
}

/// Settings that cannot work: which breaker (or family), which key, why.
///
/// Returned by [`Builder::build`](crate::Builder::build) (nothing was
/// built), and by a change at run time
/// ([`Breaker::reconfigure`](crate::Breaker::reconfigure),
/// [`configure`](crate::configure)): nothing of that change was applied;
/// nor, from [`configure::from_env`](crate::configure::from_env), anything
/// else.
///
/// Its message names what is at fault: `` breaker `search`: `threshold` … ``
/// for a key, `` `inventory` matches no registered breaker or family `` for a
/// name.
///
/// ```
/// use failfast_runtime::Breaker;
///
/// let error = Breaker::builder().name("payments").jitter(1.5).build().unwrap_err();
/// assert_eq!((error.name(), error.key()), ("payments", "jitter"));
/// assert_eq!(error.to_string(), "breaker `payments`: `jitter` is 1.5, outside [0, 1)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    breaker: String,
    key: Cow<'static, str>,
    reason: String,
}

impl ConfigError {
    /// A setting that breaks its rule, for a breaker named later
    /// ([`of`](Self::of)).
    pub(crate) fn new(key: &'static str, reason: impl Into<String>) -> Self {
        Self {
            breaker: String::new(),
            key: Cow::Borrowed(key),
            reason: reason.into(),
        }
    }

    /// A change refused for the breaker or family `breaker`.
    pub(crate) fn refused(breaker: &str, key: &str, reason: impl Into<String>) -> Self {
        Self {
            breaker: breaker.to_owned(),
            key: Cow::Owned(key.to_owned()),
            reason: reason.into(),
        }
    }

    /// This error, for the breaker named `breaker`.
    pub(crate) fn of(mut self, breaker: &str) -> Self {
        breaker.clone_into(&mut self.breaker);
        self
    }

    /// The key of an error made by [`new`](Self::new) (a rule of the
    /// settings, never a name given at run time).
    pub(crate) fn static_key(&self) -> &'static str {
        match self.key {
            Cow::Borrowed(key) => key,
            Cow::Owned(_) => "",
        }
    }

    /// The breaker or family the settings were for, or the name that was
    /// refused.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.breaker
    }

    /// The setting at fault, named like the attribute key (`threshold`,
    /// `failure_rate`, …), or `name` when the name is.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Why it is refused.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.breaker.as_str(), &*self.key) {
            // The name is at fault, not a key: `inventory` matches no …
            (breaker, "name") => write!(f, "`{breaker}` {}", self.reason),
            ("", key) => write!(f, "`{key}` {}", self.reason),
            (breaker, "") => write!(f, "breaker `{breaker}`: {}", self.reason),
            (breaker, key) => write!(f, "breaker `{breaker}`: `{key}` {}", self.reason),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a cause, as a protected call might return.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("charge failed")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    fn name() -> Name {
        Name::new_static("payments")
    }

    fn timed_out() -> TimedOut {
        TimedOut::new(name(), Duration::from_millis(250))
    }

    #[test]
    fn a_timeout_names_its_breaker_and_limit() {
        let t = timed_out();
        assert_eq!(t.name(), "payments");
        assert_eq!(t.limit(), Duration::from_millis(250));
        assert_eq!(
            t.to_string(),
            "call through circuit breaker `payments` timed out after 250ms"
        );
        let e: Error<Outer> = Error::Timeout(t);
        assert_eq!(
            e.to_string(),
            "call through circuit breaker `payments` timed out after 250ms"
        );
    }

    #[test]
    fn a_failure_displays_and_chains_as_the_error_inside() {
        let e: Error<Outer> = Error::Failed(Outer(std::io::Error::other("connection reset")));
        assert_eq!(e.to_string(), "charge failed");
        let source = std::error::Error::source(&e).expect("the inner error's cause");
        assert_eq!(source.to_string(), "connection reset");
        let timeout: Error<Outer> = Error::Timeout(timed_out());
        assert!(std::error::Error::source(&timeout).is_none());
    }

    #[test]
    fn a_counted_ok_says_so_and_has_no_source() {
        let e: Error<Outer, u16> = Error::CountedOk(503);
        assert_eq!(
            e.to_string(),
            "the call returned `Ok` with a value `counts_ok` counts as a failure"
        );
        assert!(std::error::Error::source(&e).is_none());
        let failed: Error<Outer, u16> = Error::Failed(Outer(std::io::Error::other("reset")));
        assert_eq!(
            std::error::Error::source(&failed).unwrap().to_string(),
            "reset"
        );
    }

    #[test]
    fn a_config_error_says_what_is_wrong() {
        let e = ConfigError::new("jitter", "is 1.5, outside [0, 1)");
        assert_eq!((e.name(), e.key()), ("", "jitter"));
        assert_eq!(e.reason(), "is 1.5, outside [0, 1)");
        assert_eq!(e.to_string(), "`jitter` is 1.5, outside [0, 1)");
        let e = e.of("payments");
        assert_eq!(e.name(), "payments");
        assert_eq!(
            e.to_string(),
            "breaker `payments`: `jitter` is 1.5, outside [0, 1)"
        );
        let name = ConfigError::refused("invetory", "name", "matches nothing");
        assert_eq!(name.to_string(), "`invetory` matches nothing");
        let whole = ConfigError::refused("inventory", "", "is gone");
        assert_eq!(whole.to_string(), "breaker `inventory`: is gone");
    }
}
