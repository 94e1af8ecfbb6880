//! What the hang and overload tests' functions return.

use failfast::{Rejected, TimedOut};

/// The upstream's own error, or what the breaker said instead of calling it.
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
