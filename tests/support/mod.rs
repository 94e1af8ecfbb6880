//! What the hang and overload tests' functions return.

use failfast::{Rejected, TimedOut};

/// The upstream's own error, or what the breaker said instead of calling it.
#[allow(dead_code)] // not every test binary uses every item
#[derive(Debug)]
pub enum Fault<U> {
    Upstream(U),
    TimedOut(TimedOut),
    Rejected(Rejected),
}

impl<U> From<TimedOut> for Fault<U> {
    fn from(timed_out: TimedOut) -> Self {
        Fault::TimedOut(timed_out)
    }
}

impl<U> From<Rejected> for Fault<U> {
    fn from(rejected: Rejected) -> Self {
        Fault::Rejected(rejected)
    }
}

/// A call that failed, or was refused with the time until the next trial.
#[allow(dead_code)] // not every test binary uses every item
#[derive(Debug, PartialEq)]
pub enum Down {
    Failed,
    Refused(Option<std::time::Duration>),
}

impl From<Rejected> for Down {
    fn from(rejected: Rejected) -> Self {
        Down::Refused(rejected.retry_after())
    }
}

/// `Err(Down::Failed)` when `fail`, else `Ok(())`.
#[allow(dead_code)]
pub fn outcome(fail: bool) -> Result<(), Down> {
    if fail { Err(Down::Failed) } else { Ok(()) }
}

/// `configure::reload` remembers what the previous reload named, process-wide,
/// and sets back to declared whatever the next one no longer names: the tests
/// of one binary that reload take turns.
#[allow(dead_code)]
pub fn reload_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
