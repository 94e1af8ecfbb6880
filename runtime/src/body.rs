//! Watching the protected body's polls, so that only a panic raised by the body
//! itself counts as its failure.
//!
//! A permit held across an `.await` can be dropped while something else
//! panics: a sibling future of `join!` unwinding through the task, or a task
//! torn down after its panic was caught. `std::thread::panicking()` cannot tell
//! those apart from the body's own panic. Here the body's future is polled
//! with a guard on the stack: if its poll unwinds, the guard records the
//! failure on the spot, and the permit is told to treat any later drop as
//! neutral.

use std::future::{poll_fn, Future};
use std::mem;
use std::pin::pin;

use crate::breaker::Permit;

/// Awaits `future` as the protected body of `permit`'s call.
pub(crate) async fn body<F: Future>(permit: &mut Permit<'_>, future: F) -> F::Output {
    permit.track_body();
    let mut future = pin!(future);
    poll_fn(|cx| {
        let guard = PanicGuard(&mut *permit);
        let polled = future.as_mut().poll(cx);
        mem::forget(guard);
        polled
    })
    .await
}

/// Dropped only while a poll of the body unwinds.
struct PanicGuard<'p, 'b>(&'p mut Permit<'b>);

impl Drop for PanicGuard<'_, '_> {
    fn drop(&mut self) {
        self.0.body_panicked();
    }
}
