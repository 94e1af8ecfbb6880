//! A circuit breaker as a tower [`Layer`] (feature `tower`), for axum, tonic,
//! hyper and any other [`Service`].
//!
//! [`CircuitBreakerLayer`] wraps a service in [`CircuitBreaker`]: every
//! request asks the breaker first; a refused request never reaches the inner
//! service, and the outcome of an admitted one is decided by a classifier
//! ([`Classify`](crate::classify::Classify)) from the `Result<Response,
//! Error>` the inner service produced: success, failure or neutral.
//!
//! ```
//! use failfast_runtime::tower::CircuitBreakerLayer;
//! use failfast_runtime::{Breaker, Rejected};
//! use std::convert::Infallible;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! let breaker = Breaker::builder().name("inventory").threshold(2).build()?;
//! let layer = CircuitBreakerLayer::new(breaker);
//! let mut service = layer.layer(service_fn(|_: ()| async {
//!     Ok::<_, Infallible>(http::Response::builder().status(502).body(String::new()).unwrap())
//! }));
//!
//! for _ in 0..2 {
//!     let response = service.ready().await?.call(()).await?;
//!     assert_eq!(response.status(), 502); // a failure: 5xx
//! }
//! let refused = service.ready().await?.call(()).await.unwrap_err();
//! assert!(refused.downcast_ref::<Rejected>().is_some());
//! # Ok(())
//! # }
//! ```
//!
//! # Where it sits in a stack
//!
//! Put the breaker *outside* `tower::timeout::TimeoutLayer`
//! (`ServiceBuilder::new().layer(breaker).layer(timeout)`): the timeout's
//! error then reaches the classifier, and [`HttpClassifier`] counts it as a
//! failure, so a hanging dependency trips the breaker. Put it inside a
//! `tower::limit::ConcurrencyLimitLayer` or outside, as you like: only
//! [`call`](Service::call) asks the breaker, so a request waiting for a
//! place in the limit holds no trial.
//!
//! # Readiness never takes a trial
//!
//! [`poll_ready`](Service::poll_ready) only asks the inner service: the
//! breaker is asked in [`call`](Service::call). A half-open breaker admits
//! `trial_calls` requests at once; a permit taken at readiness would be held
//! by a caller that may never call (readiness is polled speculatively by
//! balancers, buffers and `ServiceExt::ready` before a request exists), and
//! the trial would wait for it while every other request is refused. An open
//! breaker stays ready, and answers a call at once with the refusal.
//!
//! # Outcomes
//!
//! - The response future's output is classified by the layer's [`Classify`]:
//!   [`HttpClassifier`] by default, [`GrpcClassifier`], or a closure
//!   `Fn(&Result<Response, Error>) -> Outcome`. Both classifiers take the
//!   refusal of another breaker further down the stack, which never
//!   reached the dependency, as neutral, whichever way that layer answers
//!   it: an error that is or carries a [`Rejected`](crate::Rejected)
//!   ([`RefuseWithError`]), a `tonic::Status` made of one
//!   (`RefuseWithStatus`), a `503` made of one ([`RefuseWithResponse`]).
//!   The dependency's own `503` or `UNAVAILABLE` counts (see
//!   [`classify`](crate::classify#refusals-of-breakers-further-down)).
//! - The outcome is decided when the inner service's future finishes: for
//!   HTTP, when the response's head is ready. A body streamed after it is
//!   not watched: its errors are not failures, and the slow-call rule
//!   measures the time to the head.
//! - A panic while the inner service's future (or its `call`) runs is a
//!   failure; the panic goes on unwinding.
//! - A response future dropped before it finished (a client that went away,
//!   an outer timeout) is neutral, or a slow call once it has run longer than
//!   the breaker's `slow` (see [`Builder::slow`](crate::Builder::slow)): the
//!   rules of an abandoned `#[circuit_breaker]` call. Either way a half-open
//!   trial gets its slot back.
//!
//! # Refusals
//!
//! By default the service's error is a boxed error (`tower::BoxError`), as
//! tower's own `timeout` and `limit` do: a refusal is a boxed
//! [`Rejected`](crate::Rejected) that callers downcast, and the inner
//! service's errors are boxed as they are. With
//! [`on_rejected(RefuseWithResponse)`](CircuitBreakerLayer::on_rejected), an
//! HTTP service answers a refusal itself with `503 Service Unavailable` and
//! `Retry-After` (the `http` conversion of [`Rejected`](crate::Rejected),
//! `http::Response::from(rejected)`) and keeps its own error type, which is
//! what axum's `Router` needs (its services never fail). Behind axum's
//! `HandleErrorLayer`, the handler downcasts the boxed error and answers a
//! `Rejected` with `http::Response::from(rejected)`.
//!
//! # Which breaker
//!
//! A layer is built from a [`Breaker`](crate::Breaker) (put in an `Arc`), an `Arc<Breaker>`,
//! a `&'static Breaker`, or a [`BreakerRef`](crate::ops::registry::BreakerRef) from the registry. Each call
//! clones the handle into its response future: free for a `&'static
//! Breaker` (a `static`, or a leaked `Box`), one reference-count increment
//! for an `Arc`. The layer registers its breaker when it is made
//! ([`registry::register`](crate::ops::registry::register)),
//! and a keyed layer its family,
//! so that [`registry::all`](crate::ops::registry::all) and
//! [`registry::families`](crate::ops::registry::families) list them.
//!
//! With the `keyed` feature, a layer can also guard each request with the
//! breaker of its key in a [`Family`](crate::Family) (the service is then a
//! `CircuitBreaker<S, C, R, PerKey<K, KF>>`):
//! [`CircuitBreakerLayer::per_key`] keys requests by a function of the
//! request, or by authority with [`ByAuthority`] (one breaker per upstream
//! host). A sick host's breaker then opens alone. A family
//! built with [`max_concurrent`](crate::FamilyBuilder::max_concurrent) limits
//! each key's requests in flight: past the limit a request is refused like an
//! open breaker's ([`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit)),
//! and its place is given back when its response future is dropped. The
//! layer holds the key's member by an `Arc` (one reference-count increment
//! per request, shared by the requests of that key), since the layer owns its
//! family rather than borrowing a `'static` one.
//!
//! # On the server side
//!
//! Around a server's handlers, the layer guards the handler, and
//! [`HttpClassifier`] counts every 5xx the handler answers as a failure:
//! also a `503` it answers on purpose (shedding load, or passing on the
//! refusal of a breaker it calls as a status code). A refusal passed on as
//! `http::Response::from(rejected)` keeps the [`Rejected`](crate::Rejected)
//! in its extensions, and is neutral; leave the others out with a closure:
//!
//! ```
//! use axum::{body::Body, http::StatusCode, routing::get, Router};
//! use failfast_runtime::tower::{CircuitBreakerLayer, RefuseWithResponse};
//! use failfast_runtime::{Breaker, Outcome};
//! use std::convert::Infallible;
//!
//! // The handler's own 503 is neutral; other 5xx fail, 4xx are neutral.
//! let server_side = |result: &Result<http::Response<Body>, Infallible>| match result {
//!     Ok(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE => Outcome::Neutral,
//!     Ok(r) if r.status().is_server_error() => Outcome::Failure,
//!     Ok(r) if r.status().is_client_error() => Outcome::Neutral,
//!     Ok(_) => Outcome::Success,
//!     Err(never) => match *never {},
//! };
//! let breaker = Breaker::builder().name("checkout-handler").build()?;
//! let app: Router = Router::new()
//!     .route("/checkout", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
//!     .layer(CircuitBreakerLayer::new(breaker).classifier(server_side).on_rejected(RefuseWithResponse));
//! # let _ = app;
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

#[cfg(doc)]
use crate::classify::{Classify, GrpcClassifier, HttpClassifier};
#[cfg(doc)]
use tower_layer::Layer;
#[cfg(doc)]
use tower_service::Service;

mod future;
mod layer;
#[cfg(feature = "keyed")]
mod per_key;
mod refuse;

pub use future::ResponseFuture;
pub use layer::{CircuitBreaker, CircuitBreakerLayer};
#[cfg(feature = "keyed")]
pub use per_key::{ByAuthority, PerKey};
#[cfg(feature = "tonic")]
pub use refuse::RefuseWithStatus;
pub use refuse::{OnRejected, RefuseWithError, RefuseWithResponse};
