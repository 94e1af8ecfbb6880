//! `Breaker::call_async`'s future, polled by hand: admitted on its first
//! poll, the permit kept across the polls that wait, the outcome recorded
//! once, and a poll after the end refused rather than admitted again.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, Error, State};

/// Pending `waits` times, then `answer`.
struct After<T> {
    waits: u32,
    answer: Option<T>,
}

impl<T: Unpin> Future for After<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<T> {
        if self.waits > 0 {
            self.waits -= 1;
            return Poll::Pending;
        }
        Poll::Ready(self.answer.take().expect("polled after it answered"))
    }
}

fn after<T>(waits: u32, answer: T) -> After<T> {
    After {
        waits,
        answer: Some(answer),
    }
}

fn poll<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn breaker(threshold: u32) -> Breaker {
    Breaker::builder()
        .threshold(threshold)
        .recovery(Duration::from_secs(3600))
        .build()
        .unwrap()
}

#[test]
fn nothing_is_admitted_before_the_first_poll() {
    let b = breaker(1);
    let call = b.call_async(after(0, Err::<(), _>("down")));
    assert_eq!(b.snapshot().calls, 0);
    drop(call);
    assert_eq!((b.snapshot().calls, b.state()), (0, State::Closed));
}

#[test]
fn a_call_that_waits_keeps_its_permit_and_records_its_outcome_once() {
    let b = breaker(2);
    let mut failing = pin!(b.call_async(after(2, Err::<(), _>("down"))));
    assert!(poll(failing.as_mut()).is_pending());
    assert!(poll(failing.as_mut()).is_pending());
    assert_eq!(b.snapshot().failures, 0, "nothing recorded while it waits");
    assert!(matches!(
        poll(failing.as_mut()),
        Poll::Ready(Err(Error::Failed("down")))
    ));
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures, s.consecutive_failures), (1, 1, 1));

    // A success after a wait clears the count: the permit it recorded with
    // is the one it was admitted with.
    let mut passing = pin!(b.call_async(after(1, Ok::<u32, &str>(7))));
    assert!(poll(passing.as_mut()).is_pending());
    assert!(matches!(poll(passing.as_mut()), Poll::Ready(Ok(7))));
    let s = b.snapshot();
    assert_eq!((s.successes, s.consecutive_failures), (1, 0));
}

#[test]
fn a_call_that_answers_at_once_records_its_outcome() {
    let b = breaker(1);
    let mut call = pin!(b.call_async(after(0, Err::<(), _>("down"))));
    assert!(matches!(
        poll(call.as_mut()),
        Poll::Ready(Err(Error::Failed("down")))
    ));
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_poll_after_the_end_panics_and_records_nothing() {
    let b = breaker(2);
    let mut call = pin!(b.call_async(after(0, Err::<(), _>("down"))));
    assert!(poll(call.as_mut()).is_ready());
    let again = catch_unwind(AssertUnwindSafe(|| poll(call.as_mut())));
    let message = again.expect_err("polled after it finished");
    assert_eq!(
        message.downcast_ref::<&str>(),
        Some(&"a protected call was polled after it finished")
    );
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures, s.state), (1, 1, State::Closed));
}

#[test]
fn a_refused_call_polled_again_panics_and_is_not_admitted() {
    let b = breaker(1);
    b.set_mode(Mode::ForcedOpen);
    let mut call = pin!(b.call_async(after(0, Ok::<(), &str>(()))));
    assert!(matches!(
        poll(call.as_mut()),
        Poll::Ready(Err(Error::Rejected(_)))
    ));
    b.set_mode(Mode::Normal);
    assert!(catch_unwind(AssertUnwindSafe(|| poll(call.as_mut()))).is_err());
    let s = b.snapshot();
    assert_eq!(
        (s.calls, s.rejected, s.successes),
        (1, 1, 0),
        "the refused call is not admitted later"
    );
}
