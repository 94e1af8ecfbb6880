//! The outcome of a request whose response head the classifier counted as a
//! success, decided at the end of its body.
//!
//! The response goes back to the caller with its body wrapped in
//! [`Watched`], which owns the request's [`Verdict`]: its permit, its
//! host's breaker and lease, its place under the host's concurrency limit.
//! The body decides, on the poll that shows it:
//!
//! - an error (the connection closed before `Content-Length` bytes, a
//!   reqwest timeout) is a failure;
//! - the end (the last frame, or the poll after it) is a success;
//! - a poll that panics is a failure, recorded on the spot, as the
//!   protected body's panic is (`crate::core::body`): the drop that the unwinding
//!   makes is not a verdict;
//! - dropped before its end (the response dropped unread or half read), the
//!   body is a success: the host answered well as far as anyone looked.
//!
//! Each is recorded when it happens, so the slow-call rule times the
//! request to the end of its body (or its error, or its drop).
//!
//! A dropped body is not neutral, as a dropped request is (the middleware's
//! `Held`, tower's `OwnedPermit`): a dropped request never got an answer,
//! but a dropped body's host did answer, with a success. Neutral would
//! make a client that reads only statuses count its failures and none of
//! its successes: a consecutive-failure count that nothing resets, a
//! failure rate over the failures alone, a half-open breaker that never
//! closes.

use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use reqwest::{Response, ResponseBuilderExt};

use super::Guard;
use crate::core::breaker::{Detached, Outcome};

/// A request let through, with its outcome still to record: the permit, the
/// guard that holds its breaker (a host's, leased so that the family does
/// not evict it), and whether it holds a place under the host's concurrency
/// limit. Dropped undecided, a success.
pub(super) struct Verdict {
    permit: Option<Detached>,
    place: bool,
    guard: Guard,
}

impl Verdict {
    /// `permit`, detached from `guard`'s breaker, which admitted it; with
    /// `place`, a place kept (`BulkheadPermit::keep`) under `guard`'s concurrency
    /// limit, given back with the verdict.
    pub(super) fn new(guard: Guard, permit: Detached, place: bool) -> Self {
        Self {
            permit: Some(permit),
            place,
            guard,
        }
    }

    /// Records `outcome`, once: nothing after the first verdict.
    pub(super) fn decide(&mut self, outcome: Outcome) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        permit.attach(self.guard.breaker()).record(outcome);
        if self.place {
            if let Some(bulkhead) = self.guard.bulkhead() {
                bulkhead.leave();
            }
        }
    }

    /// `response`, with the verdict left to the end of its body. An empty
    /// body (`HEAD`, 204, 304, `Content-Length: 0`) has ended already: a
    /// success now, and the response as it was.
    pub(super) fn at_end_of_body(mut self, response: Response) -> Response {
        if response.content_length() == Some(0) {
            self.decide(Outcome::Success);
            return response;
        }
        let url = response.url().clone();
        let (mut parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
        // reqwest keeps a response's URL in an extension of its own, which
        // the conversion to an `http::Response` leaves out: put it back, or
        // the response made from the `http::Response` would have
        // `http://no.url.provided.local/` for its URL.
        let mut with_url = http::response::Builder::new().url(url);
        if let Some(url) = with_url.extensions_mut() {
            parts.extensions.extend(std::mem::take(url));
        }
        let body = reqwest::Body::wrap(Watched {
            body,
            verdict: Some(self),
        });
        Response::from(http::Response::from_parts(parts, body))
    }
}

impl Drop for Verdict {
    fn drop(&mut self) {
        self.decide(Outcome::Success);
    }
}

pin_project_lite::pin_project! {
    /// A response body that records its request's [`Verdict`] when it ends,
    /// fails or is dropped (see the [module docs](self)). Its frames, size
    /// and end are the wrapped body's.
    pub(super) struct Watched<B> {
        #[pin]
        body: B,
        // `None` once decided.
        verdict: Option<Verdict>,
    }
}

impl<B: Body> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let mut this = self.project();
        let guard = PanicGuard(this.verdict);
        let polled = this.body.as_mut().poll_frame(cx);
        // Not dropped: the poll returned.
        let mut guard = ManuallyDrop::new(guard);
        let outcome = match &polled {
            Poll::Pending => return polled,
            Poll::Ready(Some(Ok(_))) if !this.body.is_end_stream() => return polled,
            Poll::Ready(Some(Err(_))) => Outcome::Failure,
            // The end: the last frame, or the poll after it.
            Poll::Ready(_) => Outcome::Success,
        };
        if let Some(mut verdict) = guard.0.take() {
            verdict.decide(outcome);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Dropped only while a poll of the body unwinds.
struct PanicGuard<'a>(&'a mut Option<Verdict>);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if let Some(verdict) = self.0 {
            verdict.decide(Outcome::Failure);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Breaker, ManualClock, State};
    use std::task::Waker;
    use std::time::Duration;

    /// A body that yields `frames` one poll at a time, then ends, fails or
    /// panics as `then` says. A `sized` one knows when its last frame is
    /// out (`is_end_stream`), as a body with a `Content-Length` does.
    struct Script {
        frames: u32,
        then: Then,
        sized: bool,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Then {
        End,
        Fail,
        Panic,
    }

    impl Body for Script {
        type Data = &'static [u8];
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            if self.frames > 0 {
                self.frames -= 1;
                return Poll::Ready(Some(Ok(Frame::data(b"0123456789"))));
            }
            Poll::Ready(match self.then {
                Then::End => None,
                Then::Fail => Some(Err(std::io::ErrorKind::UnexpectedEof.into())),
                Then::Panic => panic!("the body's own panic"),
            })
        }

        fn is_end_stream(&self) -> bool {
            self.sized && self.frames == 0 && self.then == Then::End
        }
    }

    fn watched(breaker: &'static Breaker, frames: u32, then: Then) -> Watched<Script> {
        let permit = breaker.acquire().unwrap().detach();
        let guard = Guard::One(crate::ops::registry::BreakerRef::Static(breaker));
        Watched {
            body: Script {
                frames,
                then,
                sized: false,
            },
            verdict: Some(Verdict::new(guard, permit, false)),
        }
    }

    /// Polls `body` to its end (or error), as a caller reading it would.
    fn read(body: &mut Watched<Script>) -> Result<u32, std::io::Error> {
        let mut cx = Context::from_waker(Waker::noop());
        let mut frames = 0;
        loop {
            match Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(_))) => frames += 1,
                Poll::Ready(Some(Err(error))) => return Err(error),
                Poll::Ready(None) => return Ok(frames),
                Poll::Pending => unreachable!("the script never waits"),
            }
        }
    }

    fn breaker(name: &'static str, clock: &ManualClock) -> &'static Breaker {
        Box::leak(Box::new(
            Breaker::builder()
                .name(name)
                .threshold(1)
                .slow(Duration::from_millis(50))
                .clock(clock.clone())
                .build()
                .unwrap(),
        ))
    }

    /// The watched body ends where the wrapped one does: a caller that asks
    /// before reading (a proxy passing the body on) reads it all.
    #[test]
    fn the_watched_body_ends_where_the_wrapped_one_does() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-end-stream", &clock);
        let mut body = watched(breaker, 2, Then::End);
        body.body.sized = true;
        assert!(!body.is_end_stream(), "two frames to come");
        assert_eq!(read(&mut body).unwrap(), 2);
        assert!(body.is_end_stream());
    }

    /// Nothing is recorded while the body is read; its end is a success,
    /// timed to the end: slow, when the body took longer than `slow`.
    #[test]
    fn the_end_of_the_body_is_a_success_timed_to_the_end() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-end", &clock);
        let mut body = watched(breaker, 3, Then::End);
        clock.advance(Duration::from_secs(1));
        assert_eq!(breaker.snapshot().successes, 0, "not decided yet");
        assert_eq!(read(&mut body).unwrap(), 3);
        let s = breaker.snapshot();
        assert_eq!((s.successes, s.slow, s.failures), (1, 1, 0), "{s:?}");
        drop(body);
        assert_eq!(breaker.snapshot().calls, 1, "one verdict, not two");
    }

    /// An error of the body is a failure; dropping it afterwards records
    /// nothing more.
    #[test]
    fn an_error_of_the_body_is_a_failure() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-error", &clock);
        let mut body = watched(breaker, 1, Then::Fail);
        assert!(read(&mut body).is_err());
        drop(body);
        let s = breaker.snapshot();
        assert_eq!((s.state, s.failures, s.successes), (State::Open, 1, 0));
    }

    /// A body dropped before its end is a success, timed to the drop.
    #[test]
    fn a_body_dropped_before_its_end_is_a_success_timed_to_the_drop() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-dropped", &clock);
        drop(watched(breaker, 5, Then::End));
        let s = breaker.snapshot();
        assert_eq!((s.successes, s.slow, s.neutral), (1, 0, 0), "{s:?}");
        let body = watched(breaker, 5, Then::End);
        clock.advance(Duration::from_secs(1));
        drop(body);
        let s = breaker.snapshot();
        assert_eq!((s.successes, s.slow, s.neutral), (2, 1, 0), "{s:?}");
    }

    /// A poll that panics is a failure, not the success its drop would be.
    #[test]
    fn a_poll_of_the_body_that_panics_is_a_failure() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-panic", &clock);
        let mut body = watched(breaker, 1, Then::Panic);
        let unwound =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(&mut body).is_ok()));
        assert!(unwound.is_err());
        drop(body);
        let s = breaker.snapshot();
        assert_eq!((s.failures, s.successes), (1, 0), "{s:?}");
    }

    /// The last frame of a body that knows it is the last decides: a
    /// reader may never make the poll after it.
    #[test]
    fn a_sized_body_is_decided_on_its_last_frame() {
        let clock = ManualClock::new();
        let breaker = breaker("verdict-last-frame", &clock);
        let mut body = watched(breaker, 2, Then::End);
        body.body.sized = true;
        let mut cx = Context::from_waker(Waker::noop());
        let mut poll = || {
            matches!(
                Pin::new(&mut body).poll_frame(&mut cx),
                Poll::Ready(Some(Ok(_)))
            )
        };
        assert!(poll());
        assert_eq!(breaker.snapshot().successes, 0, "a frame to go");
        assert!(poll());
        assert_eq!(breaker.snapshot().successes, 1, "the last frame");
        assert!(!poll(), "then the end, which records nothing more");
        drop(body);
        assert_eq!(breaker.snapshot().calls, 1);
    }
}
