//! A time limit around the protected body (`timeout = "3s"`).
//!
//! The limit starts when the call is admitted. If the body has not finished
//! when it passes, the body's future is dropped and the call is recorded as a
//! failure (and, with the slow-call rule, as slow: it ran longer than `slow`,
//! which must be shorter than the limit), whatever the error classification
//! says: a dependency that does not answer is sick. A half-open trial that
//! runs out of time is a failed trial, recorded on the spot, so its slot is
//! never lost.
//!
//! The timer is tokio's (the `tokio` feature); without it the types exist so
//! that generated code type-checks, and `__private::timeout` refuses to
//! compile with one error naming the feature.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::core::body::Body;
use crate::core::breaker::{Breaker, Permit};
use crate::core::error::TimedOut;
use crate::core::name::Name;

#[cfg(not(feature = "tokio"))]
use self::no_timer::{Sleep, elapsed, sleep};
#[cfg(feature = "tokio")]
use crate::core::timer::{Sleep, elapsed, sleep};

pin_project_lite::pin_project! {
    /// The protected body of a call admitted by a [`Permit`], with a time
    /// limit; see [`__private::timeout`](crate::__private::timeout).
    #[must_use = "futures do nothing unless awaited"]
    pub struct Timeout<'b, F> {
        #[pin]
        body: Body<'b, F>,
        #[pin]
        sleep: Sleep,
        timed_out: TimedOut,
        breaker: &'b Breaker,
    }

    impl<'b, F> PinnedDrop for Timeout<'b, F> {
        fn drop(this: Pin<&mut Self>) {
            // Dropped from outside after the limit passed, before this future
            // was polled again to notice: the call timed out all the same
            // (unless the body had finished: then there is nothing to time out).
            let this = this.project();
            if elapsed(&this.sleep) {
                this.body.time_out();
            }
            this.breaker.count_timed(true);
        }
    }
}

impl<'b, F: Future> Timeout<'b, F> {
    /// Starts the clock on `future` (for `name`'s breaker) now; the call
    /// is counted as started under a time limit, and as ended when this is
    /// dropped (the breaker's `timed_started` and `timed_ended`).
    pub(crate) fn new(permit: Permit<'b>, name: Name, limit: Duration, future: F) -> Self {
        let breaker = permit.breaker();
        breaker.count_timed(false);
        Self {
            breaker,
            body: Body::new(permit, future),
            sleep: sleep(limit),
            timed_out: TimedOut::new(name, limit),
        }
    }
}

impl<'b, F: Future> Future for Timeout<'b, F> {
    type Output = Result<(F::Output, Permit<'b>), TimedOut>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(output) = this.body.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if this.sleep.poll(cx).is_ready() {
            this.body.time_out();
            return Poll::Ready(Err(this.timed_out.clone()));
        }
        Poll::Pending
    }
}

/// Without a timer: never fires. Unreachable from generated code, which
/// does not compile without the `tokio` feature.
#[cfg(not(feature = "tokio"))]
mod no_timer {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    pub(crate) struct Sleep;

    impl Future for Sleep {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Pending
        }
    }

    pub(crate) fn sleep(_: Duration) -> Sleep {
        Sleep
    }

    pub(crate) fn elapsed(_: &Sleep) -> bool {
        false
    }
}

#[cfg(test)]
#[cfg(all(feature = "tokio", not(loom)))]
mod tests {
    use crate::Breaker;
    use std::time::Duration;

    fn timed(b: &Breaker) -> (u64, u64) {
        let s = b.snapshot();
        (s.timed_started, s.timed_ended)
    }

    /// Calls under a time limit are counted as they start and as they end,
    /// whichever way they end: hung ones show as started and not ended
    /// until their limit; calls without a limit are in neither count.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn calls_under_a_time_limit_are_counted_as_they_start_and_end() {
        let limit = Duration::from_secs(1);
        let b: &'static Breaker = Box::leak(Box::new(
            Breaker::builder()
                .threshold(10)
                .timeout(limit)
                .build()
                .unwrap(),
        ));
        b.call(|| Ok::<(), ()>(())).unwrap();
        assert_eq!(timed(b), (0, 0), "a call not async: no limit, not counted");
        b.call_async(async { Ok::<_, ()>(1) }).await.unwrap();
        assert_eq!(timed(b), (1, 1));
        let hung: Vec<_> = (0..3)
            .map(|_| tokio::spawn(b.call_async(std::future::pending::<Result<(), ()>>())))
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(timed(b), (4, 1), "three hanging");
        let dropped = tokio::spawn(b.call_async(std::future::pending::<Result<(), ()>>()));
        tokio::task::yield_now().await;
        assert_eq!(timed(b), (5, 1));
        dropped.abort();
        let _ = dropped.await;
        assert_eq!(timed(b), (5, 2), "a dropped call ended");
        for h in hung {
            assert!(h.await.unwrap().is_err(), "timed out");
        }
        assert_eq!(timed(b), (5, 5));
        assert_eq!(b.snapshot().timeouts, 3);
    }
}
