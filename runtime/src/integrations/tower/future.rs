//! The response future of a guarded service, which settles the call's
//! permit.

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::refuse::OnRejected;
use crate::Rejected;
use crate::core::breaker::{Breaker, Detached, Outcome};
use crate::integrations::classify::Classify;
use crate::ops::registry::BreakerRef;

/// The breaker a response future's permit belongs to: a layer's one
/// [`BreakerRef`], or the member (and bulkhead place) of a keyed layer's
/// call (feature `keyed`).
#[derive(Debug)]
pub(super) enum Handle {
    One(BreakerRef),
    #[cfg(feature = "keyed")]
    Member(MemberSlot),
}

impl Handle {
    #[inline]
    fn breaker(&self) -> &Breaker {
        match self {
            Handle::One(breaker) => breaker,
            #[cfg(feature = "keyed")]
            Handle::Member(slot) => slot.breaker(),
        }
    }
}

/// A permit owned together with a handle to its breaker, so a `'static`
/// future can hold it. Dropped unresolved, it is an abandoned call.
#[derive(Debug)]
pub(super) struct OwnedPermit {
    pub(super) breaker: Handle,
    pub(super) detached: Option<Detached>,
}

impl OwnedPermit {
    #[inline]
    fn record(&mut self, outcome: Outcome) {
        if let Some(detached) = self.detached.take() {
            detached.attach(self.breaker.breaker()).record(outcome);
        }
    }

    /// The inner future panicked: a failure, recorded now.
    fn failed_now(&mut self) {
        if let Some(detached) = self.detached.take() {
            detached.attach(self.breaker.breaker()).failed_now();
        }
    }
}

impl Drop for OwnedPermit {
    #[inline]
    fn drop(&mut self) {
        if let Some(detached) = self.detached.take() {
            detached.attach(self.breaker.breaker()).abandoned();
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`CircuitBreaker`]: the inner service's
    /// future and the call's permit, or the refusal. The permit is resolved
    /// when the inner future finishes; dropped before that, the call is
    /// abandoned (neutral, or slow past `slow`).
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::Breaker;
    /// use std::sync::Arc;
    /// use tower::{service_fn, Layer, Service};
    ///
    /// let breaker = Arc::new(Breaker::builder().build()?);
    /// let layer = CircuitBreakerLayer::new(breaker.clone());
    /// let mut service = layer.layer(service_fn(|_: ()| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// }));
    /// let future = service.call(()); // the permit is taken here
    /// drop(future); // an abandoned call: neutral
    /// assert_eq!(breaker.snapshot().neutral, 1);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<F, C, R> {
        #[pin]
        pub(super) kind: Kind<F>,
        pub(super) state: State,
        pub(super) classifier: C,
        pub(super) on_rejected: R,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    pub(super) enum Kind<F> {
        Admitted { #[pin] future: F },
        Refused,
    }
}

/// The call's permit, or the refusal to answer with. Kept apart from the
/// inner future (rather than in `Kind`'s variants): with the inner future
/// alone in `Kind`, the compiler builds it in place, where a variant holding
/// the permit too cost the `benches/tower.rs` loop about 3 ns more per call
/// in copies of the response.
#[derive(Debug)]
pub(super) enum State {
    Admitted(OwnedPermit),
    Refused(Option<Rejected>),
}

impl<F, C, R> std::fmt::Debug for ResponseFuture<F, C, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Admitted(permit) if permit.detached.is_some() => "admitted",
            State::Admitted(_) => "finished",
            State::Refused(_) => "refused",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl<F, C, R, Res, E> Future for ResponseFuture<F, C, R>
where
    F: Future<Output = Result<Res, E>>,
    C: Classify<Res, E>,
    R: OnRejected<Res, E>,
{
    type Output = Result<Res, R::Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match (this.kind.project(), this.state) {
            (KindProj::Admitted { future }, State::Admitted(permit)) => {
                let guard = PanicGuard(&mut *permit);
                let polled = future.poll(cx);
                mem::forget(guard);
                let Poll::Ready(result) = polled else {
                    return Poll::Pending;
                };
                permit.record(this.classifier.classify(&result));
                Poll::Ready(result.map_err(|e| this.on_rejected.error(e)))
            }
            (_, State::Refused(rejected)) => {
                let rejected = rejected
                    .take()
                    .expect("a refused ResponseFuture polled after it finished");
                Poll::Ready(this.on_rejected.rejected(rejected))
            }
            (KindProj::Refused, State::Admitted(_)) => {
                unreachable!("a refused call holds no permit")
            }
        }
    }
}

/// Dropped only while a poll of the inner future unwinds.
pub(super) struct PanicGuard<'a>(pub(super) &'a mut OwnedPermit);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        self.0.failed_now();
    }
}

#[cfg(feature = "keyed")]
/// A key's member owned by a keyed layer's response future, with the
/// place the call holds in the member's bulkhead when the family has
/// [`max_concurrent`](crate::FamilyBuilder::max_concurrent), given back
/// when the future is dropped.
#[derive(Debug)]
pub(super) struct MemberSlot {
    pub(super) member: std::sync::Arc<crate::Member>,
    /// Whether a place in `member`'s bulkhead is held.
    pub(super) holds_slot: bool,
    /// The lease stripe this call holds the member on (see
    /// `Member::hold`): the family does not evict it meanwhile.
    pub(super) stripe: usize,
}

#[cfg(feature = "keyed")]
impl MemberSlot {
    #[inline]
    pub(super) fn breaker(&self) -> &Breaker {
        self.member.breaker()
    }
}

#[cfg(feature = "keyed")]
impl Drop for MemberSlot {
    fn drop(&mut self) {
        self.member.release(self.stripe);
        if let (true, Some(bulkhead)) = (self.holds_slot, self.member.bulkhead()) {
            bulkhead.leave();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::super::CircuitBreakerLayer;
    use crate::Breaker;
    use tower::Layer;

    /// A panic inside the inner service's future is a failure of the call
    /// (the permit is settled by the guard around the poll); the panic goes
    /// on unwinding to the caller.
    #[tokio::test]
    async fn a_panic_in_the_inner_future_is_counted_as_a_failure() {
        use tower::{ServiceExt, service_fn};

        let breaker = Breaker::builder()
            .name("tower-unit-panic")
            .threshold(5)
            .build()
            .unwrap();
        let layer = CircuitBreakerLayer::new(breaker);
        let service = layer.layer(service_fn(|fail: bool| async move {
            assert!(!fail, "the inner future panics");
            Ok::<_, Infallible>(http::Response::new(()))
        }));
        let panicked = tokio::spawn(service.clone().oneshot(true)).await;
        assert!(panicked.unwrap_err().is_panic());
        service.clone().oneshot(false).await.unwrap();
        let s = layer.breaker.snapshot();
        assert_eq!((s.failures, s.successes, s.neutral), (1, 1, 0), "{s:?}");
    }
}
