//! `#[retry]` around `#[circuit_breaker]`: the breaker's verdict on each
//! attempt, the delay before the next one and the timers it waits on.

use std::future::Future;
use std::time::Duration;

use super::answers::FromRejected;
use crate::core::breaker::Breaker;
use crate::core::error::Rejected;

// `#[retry]` above `#[circuit_breaker]`: each attempt is one breaker call,
// and the retry loop must know how the breaker judged it (a rejection, a
// neutral error and a success are never retried; after a counted failure
// the breaker may have just opened). The breaker's generated code, expanded
// by `#[retry]` in its reporting form, leaves its verdict in a thread-local
// right before it returns, and the retry loop takes it right after the
// attempt returns. Both happen in the same poll (an async attempt that
// completes returns `Ready` into the loop without yielding), so no other
// task can run on the thread in between. A breaker without `#[retry]` above
// it reports nothing and pays nothing.

pub use crate::policy::retry::{Attempts, Retry};

/// How the breaker below `#[retry]` ended an attempt.
#[derive(Clone, Copy, Debug, Default)]
pub enum Verdict {
    /// Nothing reported: `Ok`, or an outcome the breaker's code does not
    /// report (never retried).
    #[default]
    Unreported,
    /// A counted failure; the breaker's state right after it: `Some(time
    /// until the next trial)` if it is open. See [`failure`].
    Failure(Option<Option<Duration>>),
    /// An error that `counts`/`ignores` left neutral.
    Neutral,
    /// The breaker refused the call: the body did not run.
    Rejected,
}

thread_local! {
    static VERDICT: std::cell::Cell<Verdict> = const { std::cell::Cell::new(Verdict::Unreported) };
}

/// The verdict of a counted failure just recorded on `breaker`.
#[cold]
pub fn failure(breaker: &Breaker) -> Verdict {
    Verdict::Failure(crate::policy::retry::open_for(breaker))
}

/// Leaves the verdict for the retry loop around this breaker call.
#[inline]
pub fn report(verdict: Verdict) {
    VERDICT.set(verdict);
}

/// The verdict of the attempt that just returned, cleared for the next one.
#[inline]
pub fn take_verdict() -> Verdict {
    VERDICT.replace(Verdict::Unreported)
}

/// [`rejected`](super::answers::rejected), reporting the rejection to the retry loop first.
#[inline]
pub fn rejected_reported<E: FromRejected>(rejected: Rejected) -> E {
    report(Verdict::Rejected);
    E::from_rejected(rejected)
}

/// After an attempt through the breaker ended in an error that `retry_on`
/// matched: the delay before the next attempt, or `None` to return the error
/// now. Only a counted failure is retried.
#[inline]
pub fn next_delay(attempts: &mut Attempts<'_>, verdict: Verdict) -> Option<std::time::Duration> {
    match verdict {
        Verdict::Failure(open) => attempts.next_delay_if_open(open),
        // Every `Err` path of the breaker's code reports; an error that was
        // not reported is not known to be a failure, and is not retried.
        Verdict::Unreported | Verdict::Neutral | Verdict::Rejected => None,
    }
}

/// Sleeps the thread between the attempts of a sync function.
#[inline]
pub fn sleep(delay: std::time::Duration) {
    std::thread::sleep(delay);
}

/// The timer an async retry waits on: tokio's, with the `tokio` feature.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` on an `async fn` waits between attempts on tokio's timer, which needs failfast's `tokio` feature",
    label = "this `async fn` is retried",
    note = "enable it where failfast is a dependency: `failfast = {{ version = \"0.1\", features = [\"tokio\"] }}` (it is on by default)"
)]
pub trait AsyncTimer {
    /// The future of one delay.
    type Sleep: Future<Output = ()> + Send;
    /// Waits `delay`.
    fn sleep(self, delay: std::time::Duration) -> Self::Sleep;
}

/// The async timer of this build.
pub struct Timer;

#[cfg(feature = "tokio")]
impl AsyncTimer for Timer {
    type Sleep = crate::core::timer::Sleep;
    fn sleep(self, delay: std::time::Duration) -> Self::Sleep {
        crate::core::timer::sleep(delay)
    }
}

/// Waits `delay` on `timer` between the attempts of an async function.
#[inline]
pub fn sleep_async<T: AsyncTimer>(timer: T, delay: std::time::Duration) -> T::Sleep {
    timer.sleep(delay)
}

/// Values `#[async_trait]` moves into each attempt's future.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` gives each attempt its own `{Self}`, but `{Self}` is not `Clone`",
    label = "`#[async_trait]` moves this argument into each attempt",
    note = "take it by reference (`&{Self}`), or implement `Clone` for it"
)]
pub trait Again: Sized {
    /// A copy for the next attempt.
    fn again(&self) -> Self;
}

impl<T: Clone> Again for T {
    #[inline]
    fn again(&self) -> Self {
        self.clone()
    }
}

/// A copy of an argument for the next attempt.
#[inline]
pub fn again<T: Again>(value: &T) -> T {
    value.again()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::ConstConfig;

    static BREAKER: Breaker = Breaker::from_config(
        ConstConfig::new("private::verdicts")
            .threshold(100)
            .into_config(),
    );

    /// Only a counted failure the breaker reported is retried.
    #[test]
    fn only_a_reported_failure_is_retried() {
        let retry = Retry::new(10).backoff(Duration::from_nanos(1), Duration::from_nanos(1));
        let mut attempts = retry.begin();
        for verdict in [Verdict::Unreported, Verdict::Neutral, Verdict::Rejected] {
            assert_eq!(next_delay(&mut attempts, verdict), None, "{verdict:?}");
        }
        assert_eq!(
            next_delay(&mut attempts, failure(&BREAKER)),
            Some(Duration::from_nanos(1))
        );
    }

    #[test]
    fn the_verdict_is_taken_once() {
        report(Verdict::Neutral);
        assert!(matches!(take_verdict(), Verdict::Neutral));
        assert!(matches!(take_verdict(), Verdict::Unreported));
    }
}
