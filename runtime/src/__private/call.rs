//! The guarded call: what `#[circuit_breaker]`'s expansion calls to admit a
//! call, poll its body, bound it in time and take a bulkhead's place.

use std::future::Future;
use std::time::Duration;

use crate::core::body::Body;
use crate::core::breaker::{Breaker, Permit};
use crate::core::error::Rejected;
use crate::core::timeout::Timeout;
use crate::policy::bulkhead::{Bulkhead, BulkheadPermit};

/// Admits (or refuses) a call through a `static` breaker, registering it on
/// first use.
///
/// Always inlined, as are [`Breaker::acquire`] and [`body`]: every protected
/// function calls them, and the compiler stops inlining a small function
/// once it has many callers. Returned from a call, the permit comes back
/// through memory and is read back with one wider load that the store buffer
/// cannot forward: in a crate with sixteen protected functions an `async fn`
/// read 19.3–20.0 ns a call instead of 12.1–12.4 (`benches/call_sites.rs`).
#[inline(always)]
pub fn acquire(breaker: &'static Breaker) -> Result<Permit<'static>, Rejected> {
    if !breaker.is_registered() {
        crate::ops::registry::register_static(breaker);
    }
    breaker.acquire_refusing::<true>()
}

/// Polls `future` as the protected body, which owns `permit` while it runs
/// and gives it back with its output: a panic raised while `future` is being
/// polled records a failure on `permit` at once; afterwards the permit's drop
/// is neutral, whatever else is panicking.
#[inline(always)]
pub fn body<'b, F: Future>(permit: Permit<'b>, future: F) -> Body<'b, F> {
    Body::new(permit, future)
}

/// Takes a place in `bulkhead`, if one is free. Returned as an `Option` (a
/// pointer in a register), the refusal being built out of line by
/// [`concurrency_limit`].
#[inline]
pub fn enter(bulkhead: &'static Bulkhead) -> Option<BulkheadPermit<'static>> {
    scoped(bulkhead).try_enter()
}

/// The bulkhead `bulkhead` in a test scope (`testing::isolate`), or itself.
#[inline]
fn scoped(bulkhead: &'static Bulkhead) -> &'static Bulkhead {
    #[cfg(feature = "testing")]
    if let Some(own) = crate::core::scope::stand_in(bulkhead) {
        return own;
    }
    bulkhead
}

/// Takes a place in `bulkhead` (`max_concurrent` with `max_wait`), waiting
/// on this thread up to its `max_wait`, for the call `permit` admitted:
/// its time starts once the wait is over.
#[inline]
pub fn enter_waiting(
    bulkhead: &'static Bulkhead,
    permit: &mut Permit<'_>,
) -> Option<BulkheadPermit<'static>> {
    scoped(bulkhead).enter_waiting_with(Some(permit))
}

/// The timer `max_wait` on an `async fn` waits with: tokio's.
pub struct WaitTimer;

/// `WaitTimer`, once failfast's `tokio` feature is on.
#[diagnostic::on_unimplemented(
    message = "`max_wait` on an `async fn` needs failfast's `tokio` feature: the wait is on tokio's timer",
    label = "an `async fn` waits for a place with `tokio::time`",
    note = "enable it where failfast is a dependency: `failfast = {{ version = \"0.1\", features = [\"tokio\"] }}` (it is on by default)"
)]
pub trait WaitTimerFeature {}

#[cfg(feature = "tokio")]
impl WaitTimerFeature for WaitTimer {}

/// Takes a place in `bulkhead` (`max_concurrent` with `max_wait`), waiting
/// as a future up to its `max_wait`, for the call `permit` admitted: its
/// time starts once the wait is over.
pub async fn enter_waiting_async<T: WaitTimerFeature>(
    _timer: T,
    bulkhead: &'static Bulkhead,
    permit: &mut Permit<'_>,
) -> Option<BulkheadPermit<'static>> {
    #[cfg(feature = "tokio")]
    return scoped(bulkhead)
        .enter_waiting_async_with(Some(permit))
        .await;
    #[cfg(not(feature = "tokio"))]
    {
        let _ = permit;
        scoped(bulkhead).try_enter()
    }
}

/// The refusal of a call `breaker` admitted with `permit`, at the
/// concurrency limit; see [`Bulkhead::enter`].
#[cold]
#[inline(never)]
pub fn concurrency_limit(breaker: &Breaker, permit: &mut Permit<'_>) -> Rejected {
    crate::policy::bulkhead::concurrency_limit(breaker, permit)
}

/// The timer `timeout = ..` uses: tokio's.
pub struct Tokio;

/// `Tokio`, once failfast's `tokio` feature is on.
#[diagnostic::on_unimplemented(
    message = "`timeout` needs failfast's `tokio` feature: the time limit is a tokio timer",
    label = "`timeout` is enforced with `tokio::time`",
    note = "enable it where failfast is a dependency: `failfast = {{ version = \"0.1\", features = [\"tokio\"] }}` (it is on by default)"
)]
pub trait TokioFeature {}

#[cfg(feature = "tokio")]
impl TokioFeature for Tokio {}

/// The breaker a function uses: its own `static`, or one declared with
/// `failfast::breaker!` (`breaker = NAME`). With the `testing` feature,
/// inside a scope of `testing::isolate`, the scope's breaker for it.
#[inline]
pub fn breaker<B: SharedBreaker>(breaker: &'static B) -> &'static Breaker {
    #[cfg(feature = "testing")]
    if let Some(own) = crate::core::scope::stand_in(breaker.breaker()) {
        return own;
    }
    breaker.breaker()
}

/// What `breaker = NAME` can name without `key`: a breaker declared with
/// `failfast::breaker!` without `max_keys`.
#[diagnostic::on_unimplemented(
    message = "`breaker = …` names a breaker declared with `failfast::breaker!`, but this is a `{Self}`",
    label = "not a single shared breaker",
    note = "declare it with `failfast::breaker!(static NAME = threshold = 5, recovery = \"30s\");`; a family declared with `max_keys` needs `key = …` next to `breaker = …`"
)]
pub trait SharedBreaker: Sync {
    /// The breaker.
    fn breaker(&'static self) -> &'static Breaker;
}

impl SharedBreaker for Breaker {
    #[inline]
    fn breaker(&'static self) -> &'static Breaker {
        self
    }
}

/// Polls `future` as the protected body, as [`body`] does, for at most the
/// breaker's time limit in force, read now (its `timeout`, which can change
/// at run time), or `limit`, the function's own, when the breaker has none
/// (a shared breaker, `breaker = NAME`): past it the body is dropped, a
/// failure is recorded on `permit`, and the output is `Err(TimedOut)`;
/// before it, `Ok` with the body's output and the permit.
#[inline]
pub fn timeout<'b, T: TokioFeature, F: Future>(
    _timer: T,
    permit: Permit<'b>,
    limit: Duration,
    future: F,
) -> Timeout<'b, F> {
    let breaker = permit.breaker();
    // Compared in nanoseconds with the limit written, a constant once
    // inlined: while it is in force the timer is set from that constant,
    // with no conversion from nanoseconds.
    let live = breaker.time_limit();
    let limit = if live == 0 || live == crate::core::config::nanos(limit) {
        limit
    } else {
        Duration::from_nanos(live)
    };
    Timeout::new(permit, breaker.carried_name(), limit, future)
}

/// Calls `f` once. Passing the body as an `FnOnce` keeps borrows it returns
/// valid (a closure called in place would be inferred `Fn`).
#[inline]
pub fn run<R>(f: impl FnOnce() -> R) -> R {
    f()
}
