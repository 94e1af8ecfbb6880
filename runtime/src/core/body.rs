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
//!
//! The body owns the permit while it runs and hands it back with its output.
//! The function's future then holds the permit in one place, with no flag
//! saying whether it is still there, and the body needs no `Drop` of its own:
//! a permit marked as watched that is dropped without an outcome is an
//! abandoned call (`Permit`'s `Drop`). It is measured by the `async fn`
//! cases of `benches/targets.rs`.
//!
//! [`Breaker::call_async`]'s future (`Call`) watches its body the same
//! way, with the permit taken on its first poll.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::core::breaker::{Breaker, Permit};
use crate::core::error::Error;

pin_project_lite::pin_project! {
    /// The protected body of a call admitted by a [`Permit`]; see
    /// [`__private::body`](crate::__private::body). It owns the permit while
    /// the body runs, and its output is the body's output with the permit, to
    /// record the outcome with.
    ///
    /// It needs no flag of its own, and no `Drop`: the permit is marked as
    /// watched (`Permit::track_body`), and a watched permit dropped without
    /// an outcome is an abandoned call. A body dropped before it finished
    /// drops its permit with it.
    #[must_use = "futures do nothing unless awaited"]
    pub struct Body<'b, F> {
        // `None` once the body has finished (or was timed out).
        permit: Option<Permit<'b>>,
        #[pin]
        future: F,
    }
}

impl<'b, F: Future> Body<'b, F> {
    #[inline(always)]
    pub(crate) fn new(mut permit: Permit<'b>, future: F) -> Self {
        permit.track_body();
        Self {
            permit: Some(permit),
            future,
        }
    }
}

impl<F> Body<'_, F> {
    /// The body ran out of time: a failure, recorded now; dropping the body
    /// afterwards records nothing more. Nothing, once the body has finished
    /// (its permit handed back) or was timed out already.
    pub(crate) fn time_out(self: Pin<&mut Self>) {
        if let Some(mut permit) = self.project().permit.take() {
            permit.timed_out();
        }
    }
}

impl<'b, F: Future> Future for Body<'b, F> {
    type Output = (F::Output, Permit<'b>);

    // Always inlined: its output holds the permit (see
    // `__private::acquire`).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let guard = PanicGuard(this.permit);
        let polled = this.future.poll(cx);
        // Not dropped: the poll returned.
        let mut guard = ManuallyDrop::new(guard);
        match polled {
            Poll::Ready(output) => match guard.0.take() {
                Some(permit) => Poll::Ready((output, permit)),
                None => finished(),
            },
            Poll::Pending => Poll::Pending,
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`Breaker::call_async`]: admitted on its first
    /// poll, then the body's polls watched as [`Body`] watches them. The
    /// caller's future stays where it was put when the call was made, so it
    /// is never copied once it runs (an `async fn` would copy it into its
    /// state at the first poll, a copy that costs a store-forwarding stall
    /// when the future is small).
    #[must_use = "futures do nothing unless awaited"]
    pub(crate) struct Call<'b, C, F> {
        breaker: &'b Breaker,
        // Admitted and running; `None` before the first poll and once done.
        permit: Option<Permit<'b>>,
        // `None` once the call has finished.
        counts: Option<C>,
        #[pin]
        future: F,
    }
}

impl<'b, C, F> Call<'b, C, F> {
    pub(crate) fn new(breaker: &'b Breaker, counts: C, future: F) -> Self {
        Self {
            breaker,
            permit: None,
            counts: Some(counts),
            future,
        }
    }
}

impl<'b, T, E, C, F> Future for Call<'b, C, F>
where
    C: FnOnce(&E) -> bool,
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.permit.is_some() {
            return watch(this.permit, this.counts, this.future, cx);
        }
        if this.counts.is_none() {
            finished();
        }
        // The first poll: the permit lives here, in registers, unless the
        // body has to wait. Stored in the future at once and read back as
        // it finishes, its three words would be loaded with one wider load
        // that cannot be forwarded from the three stores.
        let mut permit = match this.breaker.acquire() {
            Ok(mut permit) => {
                permit.track_body();
                Some(permit)
            }
            Err(rejected) => {
                *this.counts = None;
                return Poll::Ready(Err(Error::Rejected(rejected)));
            }
        };
        let polled = watch(&mut permit, this.counts, this.future, cx);
        if polled.is_pending() {
            *this.permit = permit;
        }
        polled
    }
}

#[cfg(feature = "tokio")]
pin_project_lite::pin_project! {
    /// The future of [`Breaker::call_async`]: a [`Call`], or for a breaker
    /// with a time limit the timed call, boxed so that the untimed one
    /// stays its own size.
    #[project = MaybeTimedProj]
    pub(crate) enum MaybeTimed<P, T> {
        Plain { #[pin] call: P },
        Timed { call: Pin<Box<T>> },
    }
}

#[cfg(feature = "tokio")]
impl<P: Future, T: Future<Output = P::Output>> Future for MaybeTimed<P, T> {
    type Output = P::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            MaybeTimedProj::Plain { call } => call.poll(cx),
            MaybeTimedProj::Timed { call } => call.as_mut().poll(cx),
        }
    }
}

/// One poll of `future` under `permit`, recording the outcome with `counts`
/// once it is ready. `Body`'s poll with the record added, written out: built
/// on `Body`'s, handing the permit back in a tuple and taking it apart
/// again, `Breaker::call_async` read 12.4 ns against 8.2.
#[inline(always)]
fn watch<T, E, C, F>(
    permit: &mut Option<Permit<'_>>,
    counts: &mut Option<C>,
    future: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, Error<E>>>
where
    C: FnOnce(&E) -> bool,
    F: Future<Output = Result<T, E>>,
{
    let guard = PanicGuard(permit);
    let polled = future.poll(cx);
    // Not dropped: the poll returned.
    let mut guard = ManuallyDrop::new(guard);
    match polled {
        Poll::Ready(result) => match (guard.0.take(), counts.take()) {
            (Some(permit), Some(counts)) => {
                permit.resolve(&result, counts);
                Poll::Ready(result.map_err(Error::Failed))
            }
            _ => finished(),
        },
        Poll::Pending => Poll::Pending,
    }
}

#[cold]
#[inline(never)]
fn finished() -> ! {
    panic!("a protected call was polled after it finished")
}

/// Dropped only while a poll of the body unwinds.
struct PanicGuard<'g, 'b>(&'g mut Option<Permit<'b>>);

impl Drop for PanicGuard<'_, '_> {
    fn drop(&mut self) {
        if let Some(permit) = self.0 {
            body_panicked(permit);
        }
    }
}

/// Out of line, so that the landing pad in every body's poll is one call.
#[cold]
#[inline(never)]
fn body_panicked(permit: &mut Permit<'_>) {
    permit.failed_now();
}
