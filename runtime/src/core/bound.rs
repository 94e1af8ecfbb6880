//! A fixed concurrency limit kept in front of a breaker: `max_concurrent =
//! N` is a bulkhead (the `policy` layer's) beside the breaker's `static`,
//! and the breaker, which holds the settings in force, tells it the limit
//! and the wait each time they change (`Breaker::bound_by`).

use std::time::Duration;

/// What holds a breaker's fixed concurrency limit: told the limit and the
/// wait in force when it is attached and each time the settings change,
/// under the breaker's right to publish settings (so the last settings
/// published are the last it is told). Unwind-safe, as the breaker that
/// holds it is.
pub(crate) trait Bound:
    Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe + std::fmt::Debug
{
    /// `max` places, and calls waiting `wait` at most for one.
    fn bound(&self, max: u32, wait: Duration);
}

/// A `static` one, as `#[circuit_breaker]` declares it.
impl<T: Bound + ?Sized> Bound for &'static T {
    fn bound(&self, max: u32, wait: Duration) {
        (**self).bound(max, wait);
    }
}
