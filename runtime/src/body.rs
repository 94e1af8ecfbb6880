//! Watching the protected body's polls, so that only a panic raised by the body
//! itself counts as its failure, and a body dropped before it finished is
//! judged by how long it ran.
//!
//! A permit held across an `.await` can be dropped while something else
//! panics: a sibling future of `join!`, unwinding through the task, or a task
//! torn down after its panic was caught. `std::thread::panicking()` cannot tell
//! those apart from the body's own panic. Here the body's future is polled
//! with a guard on the stack: if its poll unwinds, the guard records the
//! failure on the spot, and the permit is told to treat any later drop as
//! neutral.
//!
//! A body dropped from outside before it finished (a call-site
//! `tokio::time::timeout`, `select!`, a client that disconnected and took its
//! handler's future with it) is neutral when it was dropped early, and a slow
//! call once it has run longer than `slow`: a caller that gives up on a hanging
//! dependency still teaches the breaker that it hangs.

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::breaker::Permit;

pin_project_lite::pin_project! {
    /// The protected body of a call admitted by a [`Permit`]; see
    /// [`__private::body`](crate::__private::body).
    #[must_use = "futures do nothing unless awaited"]
    pub struct Body<'p, 'b, F> {
        permit: &'p mut Permit<'b>,
        done: bool,
        #[pin]
        future: F,
    }

    impl<'p, 'b, F> PinnedDrop for Body<'p, 'b, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !*this.done {
                this.permit.abandoned();
            }
        }
    }
}

impl<'p, 'b, F: Future> Body<'p, 'b, F> {
    pub(crate) fn new(permit: &'p mut Permit<'b>, future: F) -> Self {
        permit.track_body();
        Self {
            permit,
            done: false,
            future,
        }
    }
}

impl<F> Body<'_, '_, F> {
    /// The body ran out of time: a failure, recorded now; dropping the body
    /// afterwards records nothing more.
    pub(crate) fn time_out(self: Pin<&mut Self>) {
        let this = self.project();
        *this.done = true;
        this.permit.timed_out();
    }

    /// Whether the body has finished (or was timed out).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }
}

impl<F: Future> Future for Body<'_, '_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let guard = PanicGuard(this.permit);
        let polled = this.future.poll(cx);
        mem::forget(guard);
        if polled.is_ready() {
            *this.done = true;
        }
        polled
    }
}

/// Dropped only while a poll of the body unwinds.
struct PanicGuard<'g, 'p, 'b>(&'g mut &'p mut Permit<'b>);

impl Drop for PanicGuard<'_, '_, '_> {
    fn drop(&mut self) {
        self.0.failed_now();
    }
}
