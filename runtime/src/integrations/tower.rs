//! A circuit breaker as a tower [`Layer`] (feature `tower`), for axum, tonic,
//! hyper and any other [`Service`].
//!
//! [`CircuitBreakerLayer`] wraps a service in [`CircuitBreaker`]: every
//! request asks the breaker first; a refused request never reaches the inner
//! service, and the outcome of an admitted one is decided by a classifier
//! ([`Classify`]) from the `Result<Response, Error>` the inner service
//! produced: success, failure or neutral.
//!
//! ```
//! use failfast_runtime::tower::CircuitBreakerLayer;
//! use failfast_runtime::{Breaker, Rejected};
//! use std::convert::Infallible;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), failfast_runtime::tower::BoxError> {
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
//!   `Fn(&Result<Response, Error>) -> Outcome`. Both classifiers take an
//!   error that is or carries a [`Rejected`] (the refusal of another
//!   breaker further down the stack, which never reached the dependency)
//!   as neutral.
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
//! By default the service's error is a [`BoxError`], as tower's own
//! `timeout` and `limit` do: a refusal is a boxed [`Rejected`] that callers
//! downcast, and the inner service's errors are boxed as they are. With
//! [`CircuitBreakerLayer::refuse_with_response`], an HTTP service answers a
//! refusal itself with `503 Service Unavailable` and `Retry-After` (the
//! `http` conversion of [`Rejected`]) and keeps its own error type, which is
//! what axum's `Router` needs (its services never fail). With axum's
//! `HandleErrorLayer`, [`error_response`] does the same for the boxed error.
//!
//! # Which breaker
//!
//! A layer is built from a [`Breaker`] (put in an `Arc`), an `Arc<Breaker>`,
//! a `&'static Breaker`, or a [`BreakerRef`] from the registry. Each call
//! clones the handle into its response future: free for a `&'static
//! Breaker` (a `static`, or a leaked `Box`), one reference-count increment
//! for an `Arc`. The layer registers its breaker when it is made
//! ([`registry::register`](crate::ops::registry::register), or `register_static`),
//! and a keyed layer its family ([`Family::register`](crate::Family::register)),
//! so that [`registry::all`](crate::ops::registry::all) and
//! [`registry::families`](crate::ops::registry::families) list them.
//!
//! With the `keyed` feature, a layer can also guard each request with the
//! breaker of its key in a [`Family`](crate::Family):
//! [`CircuitBreakerLayer::per_authority`] keys requests by authority (one
//! breaker per upstream host), [`CircuitBreakerLayer::per_key`] by a
//! function of the request. A sick host's breaker then opens alone. A family
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
//! refusal of a breaker it calls). Leave those out with a closure:
//!
//! ```
//! use axum::{body::Body, http::StatusCode, routing::get, Router};
//! use failfast_runtime::tower::CircuitBreakerLayer;
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
//!     .layer(CircuitBreakerLayer::new(breaker).classifier(server_side).refuse_with_response());
//! # let _ = app;
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use crate::integrations::classify::{Classify, GrpcClassifier, HttpClassifier};
pub use tower_layer::Layer;
pub use tower_service::Service;

use crate::Rejected;
use crate::core::breaker::{Breaker, Detached, Outcome};
use crate::ops::registry::BreakerRef;

/// tower's error type: what a [`CircuitBreaker`] service fails with by
/// default (the same as `tower::BoxError`).
///
/// ```
/// use failfast_runtime::tower::BoxError;
/// use failfast_runtime::{Breaker, Rejected};
///
/// let breaker = Breaker::builder().build()?;
/// breaker.force_open();
/// let error: BoxError = Box::new(breaker.acquire().unwrap_err());
/// assert!(error.is::<Rejected>());
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`CircuitBreaker`] answers when the breaker refuses a call, and
/// the error type that comes with it.
///
/// [`RefuseWithError`] (the default) and [`RefuseWithResponse`] are the two
/// answers; implement it for another, e.g. a service whose own error type
/// can carry the refusal:
///
/// ```
/// use failfast_runtime::tower::{CircuitBreakerLayer, OnRejected};
/// use failfast_runtime::{Breaker, Outcome, Rejected};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// #[derive(Debug)]
/// enum DbError { Connection, Refused(Rejected) }
///
/// #[derive(Clone)]
/// struct AsDbError;
///
/// impl<Res> OnRejected<Res, DbError> for AsDbError {
///     type Error = DbError;
///     fn rejected(&self, rejected: Rejected) -> Result<Res, DbError> {
///         Err(DbError::Refused(rejected))
///     }
///     fn error(&self, error: DbError) -> DbError {
///         error
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
/// let breaker = Breaker::builder().build()?;
/// breaker.force_open();
/// let service = CircuitBreakerLayer::new(breaker)
///     .classifier(|r: &Result<u64, DbError>| if r.is_ok() { Outcome::Success } else { Outcome::Failure })
///     .on_rejected(AsDbError)
///     .layer(service_fn(|_: ()| async { Err::<u64, _>(DbError::Connection) }));
/// assert!(matches!(service.oneshot(()).await, Err(DbError::Refused(_))));
/// # Ok(())
/// # }
/// ```
pub trait OnRejected<Res, E> {
    /// The service's error type.
    type Error;

    /// The answer to a refused call.
    ///
    /// # Errors
    ///
    /// The refusal as the service's error, when it is not answered with a
    /// response.
    fn rejected(&self, rejected: Rejected) -> Result<Res, Self::Error>;

    /// The inner service's error, as the service's error.
    fn error(&self, error: E) -> Self::Error;
}

/// A refusal is an error: a boxed [`Rejected`], which callers downcast
/// (`error.downcast_ref::<Rejected>()`); the inner service's errors are
/// boxed too. The default.
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithError};
/// use failfast_runtime::{Breaker, Rejected};
///
/// let breaker = Breaker::builder().build()?;
/// breaker.force_open();
/// let answer: Result<(), _> =
///     OnRejected::<(), std::io::Error>::rejected(&RefuseWithError, breaker.acquire().unwrap_err());
/// assert!(answer.unwrap_err().is::<Rejected>());
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithError;

impl<Res, E: Into<BoxError>> OnRejected<Res, E> for RefuseWithError {
    type Error = BoxError;

    fn rejected(&self, rejected: Rejected) -> Result<Res, BoxError> {
        Err(Box::new(rejected))
    }

    #[inline]
    fn error(&self, error: E) -> BoxError {
        error.into()
    }
}

/// A refusal is answered with `503 Service Unavailable` and `Retry-After`
/// (in whole seconds, when the breaker knows when it tries again), the
/// rejection's message as the body; the inner service's errors pass as they
/// are. See [`CircuitBreakerLayer::refuse_with_response`].
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithResponse};
/// use failfast_runtime::Breaker;
/// use std::convert::Infallible;
///
/// let breaker = Breaker::builder().build()?;
/// breaker.force_open();
/// let answer: Result<http::Response<String>, Infallible> =
///     RefuseWithResponse.rejected(breaker.acquire().unwrap_err());
/// assert_eq!(answer.unwrap().status(), 503);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithResponse;

impl<B: From<String>, E> OnRejected<http::Response<B>, E> for RefuseWithResponse {
    type Error = E;

    fn rejected(&self, rejected: Rejected) -> Result<http::Response<B>, E> {
        Ok(http::Response::from(rejected))
    }

    #[inline]
    fn error(&self, error: E) -> E {
        error
    }
}

/// A refusal is an error: a boxed `tonic::Status` (`UNAVAILABLE`, with the
/// time until the next trial in `grpc-retry-pushback-ms`: the `tonic`
/// conversion of [`Rejected`]), which a tonic client finds in the error of
/// its `Channel` and hands to the caller as that status; the inner service's
/// errors are boxed as they are. Feature `tonic`; see
/// [`CircuitBreakerLayer::refuse_with_status`].
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithStatus};
/// use failfast_runtime::Breaker;
///
/// let breaker = Breaker::builder().build()?;
/// breaker.force_open();
/// let answer: Result<(), _> = OnRejected::<(), std::io::Error>::rejected(
///     &RefuseWithStatus,
///     breaker.acquire().unwrap_err(),
/// );
/// let status = tonic::Status::from_error(answer.unwrap_err());
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[cfg(feature = "tonic")]
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithStatus;

#[cfg(feature = "tonic")]
impl<Res, E: Into<BoxError>> OnRejected<Res, E> for RefuseWithStatus {
    type Error = BoxError;

    fn rejected(&self, rejected: Rejected) -> Result<Res, BoxError> {
        Err(Box::new(tonic::Status::from(rejected)))
    }

    #[inline]
    fn error(&self, error: E) -> BoxError {
        error.into()
    }
}

/// The HTTP answer to a [`CircuitBreaker`] service's boxed error, for
/// axum's `HandleErrorLayer`: a refusal is `503 Service Unavailable` with
/// `Retry-After`; any other error (a tower timeout, a transport error) is
/// `500 Internal Server Error` with the error's message.
///
/// ```
/// use failfast_runtime::tower::{error_response, BoxError};
/// use failfast_runtime::Breaker;
///
/// let breaker = Breaker::builder().name("search").build()?;
/// breaker.force_open();
/// let refused: BoxError = Box::new(breaker.acquire().unwrap_err());
/// let response: http::Response<String> = error_response(refused);
/// assert_eq!(response.status(), 503);
///
/// let other: BoxError = "connection reset".into();
/// assert_eq!(error_response::<String>(other).status(), 500);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// With axum, `HandleErrorLayer` outside the breaker turns its errors into
/// responses (here with tower's timeout inside it, whose `Elapsed` becomes a
/// 500 and counts as a failure):
///
/// ```
/// use axum::error_handling::HandleErrorLayer;
/// use axum::{routing::get, Router};
/// use failfast_runtime::tower::{error_response, CircuitBreakerLayer};
/// use failfast_runtime::Breaker;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// let breaker = Breaker::builder().name("stock").build()?;
/// let app: Router = Router::new().route("/stock", get(|| async { "12" })).layer(
///     ServiceBuilder::new()
///         .layer(HandleErrorLayer::new(|e| async move {
///             error_response::<axum::body::Body>(e)
///         }))
///         .layer(CircuitBreakerLayer::new(breaker))
///         .timeout(Duration::from_secs(2)),
/// );
/// # let _ = app;
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
pub fn error_response<B: From<String>>(error: BoxError) -> http::Response<B> {
    match error.downcast::<Rejected>() {
        Ok(rejected) => http::Response::from(*rejected),
        Err(other) => {
            let mut response = http::Response::new(B::from(other.to_string()));
            *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

/// Wraps services in a [`CircuitBreaker`]. Cheap to clone: a handle to the
/// breaker, the classifier and the refusal's answer.
///
/// ```
/// use failfast_runtime::tower::CircuitBreakerLayer;
/// use failfast_runtime::Breaker;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// let breaker = Breaker::builder().name("payments").threshold(5)
///     .recovery(Duration::from_secs(30)).build()?;
/// let service = ServiceBuilder::new()
///     .layer(CircuitBreakerLayer::new(breaker))
///     .timeout(Duration::from_secs(2))
///     .service_fn(|_: ()| async { Ok::<_, std::io::Error>(http::Response::new(())) });
/// # let _ = service;
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// The breaker is one [`BreakerRef`] by default; with
/// [`per_key`](CircuitBreakerLayer::per_key) or
/// [`per_authority`](CircuitBreakerLayer::per_authority) it is a keyed
/// family's breaker of each request's key (`B` is then [`PerKey`]).
#[derive(Clone, Debug)]
pub struct CircuitBreakerLayer<C = HttpClassifier, R = RefuseWithError, B = BreakerRef> {
    breaker: B,
    classifier: C,
    on_rejected: R,
}

impl CircuitBreakerLayer {
    /// A layer guarding with `breaker` (a [`Breaker`], `Arc<Breaker>`,
    /// `&'static Breaker` or [`BreakerRef`]), classifying with
    /// [`HttpClassifier`], refusing with a boxed [`Rejected`].
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::{registry, Breaker};
    /// use std::sync::Arc;
    ///
    /// static SEARCH: std::sync::OnceLock<Breaker> = std::sync::OnceLock::new();
    /// let search = SEARCH.get_or_init(|| Breaker::builder().name("search").build().unwrap());
    /// let from_static = CircuitBreakerLayer::new(search);
    ///
    /// let shared = Arc::new(Breaker::builder().name("ledger").build()?);
    /// registry::register(&shared);
    /// let from_registry = CircuitBreakerLayer::new(registry::get("ledger").unwrap());
    /// # let _ = (from_static, from_registry);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn new(breaker: impl Into<BreakerRef>) -> Self {
        let breaker = breaker.into();
        register(&breaker);
        Self {
            breaker,
            classifier: HttpClassifier,
            on_rejected: RefuseWithError,
        }
    }
}

impl<C, R, B> CircuitBreakerLayer<C, R, B> {
    /// The same layer, deciding outcomes with `classifier`: a
    /// [`GrpcClassifier`], or a closure `Fn(&Result<Res, E>) -> Outcome`.
    ///
    /// ```
    /// use failfast_runtime::tower::{CircuitBreakerLayer, GrpcClassifier};
    /// use failfast_runtime::Breaker;
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().name("ledger").build()?)
    ///     .classifier(GrpcClassifier);
    /// # let _ = layer;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> CircuitBreakerLayer<C2, R, B> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier,
            on_rejected: self.on_rejected,
        }
    }

    /// The same layer, answering a refusal of an HTTP service with `503
    /// Service Unavailable` and `Retry-After` instead of an error, and
    /// keeping the inner service's error type: an axum handler behind it
    /// stays a service that never fails, as `Router` requires
    /// (`Router::new().route(..).layer(layer.refuse_with_response())`).
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::Breaker;
    /// use std::convert::Infallible;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
    /// let breaker = Breaker::builder().name("stock").build()?;
    /// breaker.force_open();
    /// let service = CircuitBreakerLayer::new(breaker)
    ///     .refuse_with_response()
    ///     .layer(service_fn(|_: ()| async { Ok::<_, Infallible>(http::Response::new(String::new())) }));
    /// let response = service.oneshot(()).await.unwrap();
    /// assert_eq!(response.status(), 503);
    /// # Ok(())
    /// # }
    /// ```
    pub fn refuse_with_response(self) -> CircuitBreakerLayer<C, RefuseWithResponse, B> {
        self.on_rejected(RefuseWithResponse)
    }

    /// The same layer, refusing a gRPC call with a boxed `tonic::Status`
    /// (`UNAVAILABLE` with `grpc-retry-pushback-ms`), for a layer on a
    /// tonic `Channel`: the client's caller gets that status rather than
    /// `UNKNOWN`. Feature `tonic`.
    ///
    /// ```
    /// use failfast_runtime::tower::{CircuitBreakerLayer, GrpcClassifier};
    /// use failfast_runtime::Breaker;
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().name("ledger").build()?)
    ///     .classifier(GrpcClassifier)
    ///     .refuse_with_status();
    /// // ServiceBuilder::new().layer(layer).service(channel)
    /// # let _ = layer;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[cfg(feature = "tonic")]
    pub fn refuse_with_status(self) -> CircuitBreakerLayer<C, RefuseWithStatus, B> {
        self.on_rejected(RefuseWithStatus)
    }

    /// The same layer, answering refusals with `on_rejected` (see
    /// [`OnRejected`] for an example).
    pub fn on_rejected<R2>(self, on_rejected: R2) -> CircuitBreakerLayer<C, R2, B> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier: self.classifier,
            on_rejected,
        }
    }
}

impl<C, R> CircuitBreakerLayer<C, R> {
    /// The breaker this layer guards with.
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::Breaker;
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().name("search").build()?);
    /// assert_eq!(layer.breaker().name(), "search");
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }
}

impl<S, C: Clone, R: Clone> Layer<S> for CircuitBreakerLayer<C, R, BreakerRef> {
    type Service = CircuitBreaker<S, C, R>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreaker {
            inner,
            breaker: self.breaker.clone(),
            classifier: self.classifier.clone(),
            on_rejected: self.on_rejected.clone(),
        }
    }
}

/// A service guarded by a circuit breaker; made by [`CircuitBreakerLayer`].
#[derive(Clone, Debug)]
pub struct CircuitBreaker<S, C = HttpClassifier, R = RefuseWithError> {
    inner: S,
    breaker: BreakerRef,
    classifier: C,
    on_rejected: R,
}

impl<S, C, R> CircuitBreaker<S, C, R> {
    /// The breaker guarding this service.
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::{Breaker, State};
    /// use tower::{service_fn, Layer};
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().build()?);
    /// let service = layer.layer(service_fn(|_: ()| async { Ok::<_, std::io::Error>(()) }));
    /// assert_eq!(service.breaker().state(), State::Closed);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The inner service.
    ///
    /// ```
    /// # use failfast_runtime::tower::CircuitBreakerLayer;
    /// # use failfast_runtime::Breaker;
    /// # use tower::{service_fn, Layer};
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().build()?);
    /// let service = layer.layer(service_fn(|_: ()| async { Ok::<_, std::io::Error>(()) }));
    /// let _inner = service.get_ref();
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// ```
    /// # use failfast_runtime::tower::CircuitBreakerLayer;
    /// # use failfast_runtime::Breaker;
    /// # use tower::{service_fn, Layer};
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().build()?);
    /// let mut service = layer.layer(service_fn(|_: ()| async { Ok::<_, std::io::Error>(()) }));
    /// let _inner = service.get_mut();
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    ///
    /// ```
    /// # use failfast_runtime::tower::CircuitBreakerLayer;
    /// # use failfast_runtime::Breaker;
    /// # use tower::{service_fn, Layer};
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().build()?);
    /// let service = layer.layer(service_fn(|_: ()| async { Ok::<_, std::io::Error>(()) }));
    /// let _inner = service.into_inner();
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Req, C, R> Service<Req> for CircuitBreaker<S, C, R>
where
    S: Service<Req>,
    C: Classify<S::Response, S::Error> + Clone,
    R: OnRejected<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S::Future, C, R>;

    /// The inner service's readiness; the breaker is not asked (see the
    /// [module documentation](self#readiness-never-takes-a-trial)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        inner_ready(&mut self.inner, &self.on_rejected, cx)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        match self.breaker.acquire() {
            // The inner future is built in its place in the response future,
            // and the permit lives while the inner `call` runs: a panic there
            // drops it while unwinding, a failure.
            Ok(permit) => ResponseFuture {
                kind: Kind::Admitted {
                    future: self.inner.call(request),
                },
                state: State::Admitted(OwnedPermit {
                    breaker: self.breaker.clone(),
                    detached: Some(permit.detach()),
                }),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            },
            Err(rejected) => ResponseFuture {
                kind: Kind::Refused,
                state: State::Refused(Some(rejected)),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            },
        }
    }
}

/// Registers the breaker of a [`CircuitBreakerLayer::new`]; a keyed
/// family's member is found through its family.
fn register(breaker: &BreakerRef) {
    match breaker {
        BreakerRef::Static(breaker) => crate::ops::registry::register_static(breaker),
        BreakerRef::Shared(breaker) => crate::ops::registry::register(breaker),
        #[cfg(feature = "keyed")]
        BreakerRef::Member(_) => {}
    }
}

/// The inner service's readiness, its error answered by `on_rejected`.
#[inline]
fn inner_ready<S, Req, R>(
    inner: &mut S,
    on_rejected: &R,
    cx: &mut Context<'_>,
) -> Poll<Result<(), R::Error>>
where
    S: Service<Req>,
    R: OnRejected<S::Response, S::Error>,
{
    match inner.poll_ready(cx) {
        Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
        Poll::Ready(Err(e)) => Poll::Ready(Err(on_rejected.error(e))),
        Poll::Pending => Poll::Pending,
    }
}

/// A handle to a breaker that a response future can own: a [`BreakerRef`],
/// or a keyed family's `Arc<Member>` or [`MemberSlot`] (feature `keyed`).
pub trait BreakerHandle {
    /// The breaker.
    fn breaker(&self) -> &Breaker;
}

impl BreakerHandle for BreakerRef {
    #[inline]
    fn breaker(&self) -> &Breaker {
        self
    }
}

/// A permit owned together with a handle to its breaker, so a `'static`
/// future can hold it. Dropped unresolved, it is an abandoned call.
#[derive(Debug)]
struct OwnedPermit<H: BreakerHandle> {
    breaker: H,
    detached: Option<Detached>,
}

impl<H: BreakerHandle> OwnedPermit<H> {
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

impl<H: BreakerHandle> Drop for OwnedPermit<H> {
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
    /// use tower::{service_fn, Layer, Service};
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().build()?);
    /// let mut service = layer.layer(service_fn(|_: ()| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// }));
    /// let future = service.call(()); // the permit is taken here
    /// assert_eq!(service.breaker().snapshot().trials_in_flight, 0);
    /// drop(future); // an abandoned call: neutral
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<F, C, R, H: BreakerHandle = BreakerRef> {
        #[pin]
        kind: Kind<F>,
        state: State<H>,
        classifier: C,
        on_rejected: R,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<F> {
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
enum State<H: BreakerHandle> {
    Admitted(OwnedPermit<H>),
    Refused(Option<Rejected>),
}

impl<F, C, R, H: BreakerHandle> std::fmt::Debug for ResponseFuture<F, C, R, H> {
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

impl<F, C, R, H, Res, E> Future for ResponseFuture<F, C, R, H>
where
    H: BreakerHandle,
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
struct PanicGuard<'a, H: BreakerHandle>(&'a mut OwnedPermit<H>);

impl<H: BreakerHandle> Drop for PanicGuard<'_, H> {
    fn drop(&mut self) {
        self.0.failed_now();
    }
}

#[cfg(feature = "keyed")]
pub use per_key::{ByAuthority, KeyOf, KeyedCircuitBreaker, MemberSlot, PerKey};

/// A breaker per key of the request (feature `keyed`).
#[cfg(feature = "keyed")]
mod per_key {
    use std::borrow::Cow;
    use std::hash::Hash;
    use std::sync::Arc;

    use super::*;
    use crate::{Bulkhead, Family, Key, Member};

    impl BreakerHandle for Arc<Member> {
        #[inline]
        fn breaker(&self) -> &Breaker {
            Member::breaker(self)
        }
    }

    /// A key's member owned by a keyed layer's response future, with the
    /// place the call holds in the member's bulkhead when the family has
    /// [`max_concurrent`](crate::FamilyBuilder::max_concurrent), given back
    /// when the future is dropped.
    #[derive(Debug)]
    pub struct MemberSlot {
        member: Arc<Member>,
        /// Whether a place in `member`'s bulkhead is held.
        holds_slot: bool,
        /// The lease stripe this call holds the member on (see
        /// `Member::hold`): the family does not evict it meanwhile.
        stripe: usize,
    }

    impl BreakerHandle for MemberSlot {
        #[inline]
        fn breaker(&self) -> &Breaker {
            self.member.breaker()
        }
    }

    impl Drop for MemberSlot {
        fn drop(&mut self) {
            self.member.release(self.stripe);
            if let (true, Some(bulkhead)) = (self.holds_slot, self.member.bulkhead()) {
                bulkhead.leave();
            }
        }
    }

    /// Finds the breaker of a request in a [`Family`]: the key function of
    /// a [`CircuitBreakerLayer::per_key`] layer.
    ///
    /// Implemented by [`ByAuthority`] and by every closure `Fn(&Req) -> K`
    /// returning an owned key (a `String`, an integer, a tuple of them).
    pub trait KeyOf<Req, K> {
        /// The breaker of `request`'s key in `family`, made if the key is
        /// new.
        fn member(&self, family: &Family<K>, request: &Req) -> Arc<Member>;
    }

    impl<Req, K, F> KeyOf<Req, K> for F
    where
        F: Fn(&Req) -> K,
        K: Key<Owned = K> + Clone + Eq + Send + Sync + 'static,
    {
        #[inline]
        fn member(&self, family: &Family<K>, request: &Req) -> Arc<Member> {
            family.get(&self(request))
        }
    }

    /// Keys an `http::Request` by its authority, `host` or `host:port` as the
    /// request names it: the URI's (a client's absolute-form request, or
    /// HTTP/2's `:authority`), else the `Host` header, else `""`. User
    /// information (`user:password@`) is left out, so it never reaches a
    /// breaker's name. One key however the host is spelled: the name in
    /// lower case, without a trailing dot, and without the scheme's default
    /// port when the URI names its scheme (`http://Inventory.:80` is
    /// `inventory`). Looked up without allocating, unless the spelling
    /// needed that.
    ///
    /// ```
    /// use failfast_runtime::tower::{ByAuthority, KeyOf};
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// let hosts: Family<String> = Family::builder(Breaker::builder().name("upstream")).build()?;
    /// let request = http::Request::get("http://user:secret@inventory:8080/stock").body(())?;
    /// assert_eq!(ByAuthority.member(&hosts, &request).name(), "upstream[inventory:8080]");
    /// let request = http::Request::get("/stock").header("host", "search").body(())?;
    /// assert_eq!(ByAuthority.member(&hosts, &request).name(), "upstream[search]");
    /// let request = http::Request::get("/stock").header("host", "Search.").body(())?;
    /// assert_eq!(ByAuthority.member(&hosts, &request).name(), "upstream[search]");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[derive(Clone, Copy, Debug, Default)]
    pub struct ByAuthority;

    impl<B> KeyOf<http::Request<B>, String> for ByAuthority {
        fn member(&self, family: &Family<String>, request: &http::Request<B>) -> Arc<Member> {
            let authority = match request.uri().authority() {
                Some(authority) => authority.as_str(),
                None => request
                    .headers()
                    .get(http::header::HOST)
                    .and_then(|host| host.to_str().ok())
                    .unwrap_or(""),
            };
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let default_port = match request.uri().scheme_str() {
                Some("http") => Some("80"),
                Some("https") => Some("443"),
                _ => None,
            };
            match one_spelling(host, default_port) {
                Cow::Borrowed(host) => family.get(host),
                Cow::Owned(host) => family.get(host.as_str()),
            }
        }
    }

    /// `authority` (`host` or `host:port`) in lower case, without a
    /// trailing dot after the host, and without the port when it is
    /// `default_port` (or empty).
    fn one_spelling<'a>(authority: &'a str, default_port: Option<&str>) -> Cow<'a, str> {
        // An IPv6 address (`[::1]`) holds colons of its own.
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (host, Some(port)),
            _ => (authority, None),
        };
        let kept_port = port.filter(|port| !port.is_empty() && Some(*port) != default_port);
        let name = match host.strip_suffix('.') {
            Some(name) if !name.is_empty() => name,
            _ => host,
        };
        let lower = !name.bytes().any(|b| b.is_ascii_uppercase());
        if lower && name.len() == host.len() && kept_port == port {
            return Cow::Borrowed(authority);
        }
        let mut key = name.to_ascii_lowercase();
        if let Some(port) = kept_port {
            key.push(':');
            key.push_str(port);
        }
        Cow::Owned(key)
    }

    /// The breakers of a [`CircuitBreakerLayer::per_key`] layer: a family
    /// and the key function that picks a request's member.
    #[derive(Debug)]
    pub struct PerKey<K, KF> {
        family: Family<K>,
        key: KF,
    }

    impl<K, KF: Clone> Clone for PerKey<K, KF> {
        fn clone(&self) -> Self {
            PerKey {
                family: self.family.clone(),
                key: self.key.clone(),
            }
        }
    }

    impl CircuitBreakerLayer {
        /// A layer guarding each request with the breaker of its key in
        /// `family`, found by `key` (a closure `Fn(&Req) -> K`, or
        /// [`ByAuthority`]); a key's breaker is made on its first request.
        /// The family is registered ([`Family::register`]).
        ///
        /// ```
        /// use failfast_runtime::tower::CircuitBreakerLayer;
        /// use failfast_runtime::{Breaker, Family};
        ///
        /// // One breaker per tenant, named "search[TENANT]".
        /// let tenants: Family<String> = Family::builder(Breaker::builder().name("search"))
        ///     .max_keys(256)
        ///     .build()?;
        /// let layer = CircuitBreakerLayer::per_key(tenants, |request: &http::Request<String>| {
        ///     let tenant = request.headers().get("x-tenant").and_then(|t| t.to_str().ok());
        ///     tenant.unwrap_or("anonymous").to_owned()
        /// });
        /// # let _ = layer;
        /// # Ok::<(), failfast_runtime::ConfigError>(())
        /// ```
        pub fn per_key<K, KF>(
            family: Family<K>,
            key: KF,
        ) -> CircuitBreakerLayer<HttpClassifier, RefuseWithError, PerKey<K, KF>>
        where
            K: Clone + Hash + Eq + Send + Sync + 'static,
        {
            family.register();
            CircuitBreakerLayer {
                breaker: PerKey { family, key },
                classifier: HttpClassifier,
                on_rejected: RefuseWithError,
            }
        }

        /// A layer guarding each request with the breaker of its authority
        /// ([`ByAuthority`]) in `family`: one breaker per upstream host of a
        /// client stack, or per virtual host of a server, named
        /// `family[host:port]`.
        ///
        /// ```
        /// use failfast_runtime::tower::CircuitBreakerLayer;
        /// use failfast_runtime::{Breaker, Family};
        /// use std::time::Duration;
        /// use tower::ServiceBuilder;
        ///
        /// let hosts = Family::builder(Breaker::builder().name("upstream").threshold(5)).build()?;
        /// let client = ServiceBuilder::new()
        ///     .layer(CircuitBreakerLayer::per_authority(hosts))
        ///     .timeout(Duration::from_secs(2))
        ///     .service_fn(|_: http::Request<()>| async {
        ///         Ok::<_, std::io::Error>(http::Response::new(()))
        ///     });
        /// # let _ = client;
        /// # Ok::<(), failfast_runtime::ConfigError>(())
        /// ```
        pub fn per_authority(
            family: Family<String>,
        ) -> CircuitBreakerLayer<HttpClassifier, RefuseWithError, PerKey<String, ByAuthority>>
        {
            Self::per_key(family, ByAuthority)
        }
    }

    impl<C, R, K, KF> CircuitBreakerLayer<C, R, PerKey<K, KF>> {
        /// The family whose breakers this layer guards with.
        ///
        /// ```
        /// use failfast_runtime::tower::CircuitBreakerLayer;
        /// use failfast_runtime::{Breaker, Family};
        ///
        /// let hosts = Family::builder(Breaker::builder().name("upstream")).build()?;
        /// let layer = CircuitBreakerLayer::per_authority(hosts);
        /// assert_eq!(layer.family().name(), "upstream");
        /// # Ok::<(), failfast_runtime::ConfigError>(())
        /// ```
        pub fn family(&self) -> &Family<K> {
            &self.breaker.family
        }
    }

    impl<S, C: Clone, R: Clone, K, KF: Clone> Layer<S> for CircuitBreakerLayer<C, R, PerKey<K, KF>> {
        type Service = KeyedCircuitBreaker<S, K, KF, C, R>;

        fn layer(&self, inner: S) -> Self::Service {
            KeyedCircuitBreaker {
                inner,
                breakers: self.breaker.clone(),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            }
        }
    }

    /// A service guarded by the breaker of each request's key; made by
    /// [`CircuitBreakerLayer::per_key`] and
    /// [`CircuitBreakerLayer::per_authority`].
    #[derive(Clone, Debug)]
    pub struct KeyedCircuitBreaker<S, K, KF, C = HttpClassifier, R = RefuseWithError> {
        inner: S,
        breakers: PerKey<K, KF>,
        classifier: C,
        on_rejected: R,
    }

    impl<S, K, KF, C, R> KeyedCircuitBreaker<S, K, KF, C, R> {
        /// The family whose breakers guard this service.
        ///
        /// ```
        /// use failfast_runtime::tower::CircuitBreakerLayer;
        /// use failfast_runtime::{Breaker, Family};
        /// use tower::{service_fn, Layer};
        ///
        /// let hosts = Family::builder(Breaker::builder().name("upstream")).build()?;
        /// let service = CircuitBreakerLayer::per_authority(hosts)
        ///     .layer(service_fn(|_: http::Request<()>| async { Ok::<_, std::io::Error>(http::Response::new(())) }));
        /// assert!(service.family().is_empty());
        /// # Ok::<(), failfast_runtime::ConfigError>(())
        /// ```
        pub fn family(&self) -> &Family<K> {
            &self.breakers.family
        }
    }

    impl<S, Req, K, KF, C, R> Service<Req> for KeyedCircuitBreaker<S, K, KF, C, R>
    where
        S: Service<Req>,
        KF: KeyOf<Req, K>,
        C: Classify<S::Response, S::Error> + Clone,
        R: OnRejected<S::Response, S::Error> + Clone,
    {
        type Response = S::Response;
        type Error = R::Error;
        type Future = ResponseFuture<S::Future, C, R, MemberSlot>;

        /// The inner service's readiness; no breaker is asked (see the
        /// [module documentation](super#readiness-never-takes-a-trial)).
        #[inline]
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            inner_ready(&mut self.inner, &self.on_rejected, cx)
        }

        fn call(&mut self, request: Req) -> Self::Future {
            let refused = |rejected| ResponseFuture {
                kind: Kind::Refused,
                state: State::Refused(Some(rejected)),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            };
            let member = self.breakers.key.member(&self.breakers.family, &request);
            let mut admitted = match member.breaker().acquire() {
                Ok(permit) => permit,
                Err(rejected) => return refused(rejected),
            };
            // The family's `max_concurrent`, per key: a place in the key's
            // bulkhead once the breaker has admitted the call, held until
            // the response future is dropped.
            let holds_slot = match member.bulkhead().map(Bulkhead::try_enter) {
                None => false,
                Some(Some(slot)) => {
                    slot.keep();
                    true
                }
                Some(None) => {
                    let rejected =
                        crate::policy::bulkhead::concurrency_limit(member.breaker(), &mut admitted);
                    drop(admitted);
                    return refused(rejected);
                }
            };
            let detached = admitted.detach();
            let mut permit = OwnedPermit {
                breaker: MemberSlot {
                    stripe: member.hold(),
                    member,
                    holds_slot,
                },
                detached: Some(detached),
            };
            // A panic in the inner `call` is a failure.
            let guard = PanicGuard(&mut permit);
            let future = self.inner.call(request);
            mem::forget(guard);
            ResponseFuture {
                kind: Kind::Admitted { future },
                state: State::Admitted(permit),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let service =
            CircuitBreakerLayer::new(breaker).layer(service_fn(|fail: bool| async move {
                assert!(!fail, "the inner future panics");
                Ok::<_, Infallible>(http::Response::new(()))
            }));
        let panicked = tokio::spawn(service.clone().oneshot(true)).await;
        assert!(panicked.unwrap_err().is_panic());
        service.clone().oneshot(false).await.unwrap();
        let s = service.breaker().snapshot();
        assert_eq!((s.failures, s.successes, s.neutral), (1, 1, 0), "{s:?}");
    }

    #[cfg(feature = "tonic")]
    #[tokio::test]
    async fn a_refusal_with_status_reaches_a_grpc_caller_as_unavailable_with_pushback() {
        use tower::{ServiceExt, service_fn};

        let clock = crate::ManualClock::new();
        let breaker = Breaker::builder()
            .name("ledger")
            .threshold(1)
            .recovery(std::time::Duration::from_secs(30))
            .clock(clock.clone())
            .build()
            .unwrap();
        let service = CircuitBreakerLayer::new(breaker)
            .classifier(GrpcClassifier)
            .refuse_with_status()
            .layer(service_fn(|code: &'static str| async move {
                let response = http::Response::builder().header("grpc-status", code);
                Ok::<_, Infallible>(response.body(()).unwrap())
            }));

        let invalid = service.clone().oneshot("3").await.unwrap();
        assert_eq!(invalid.headers()["grpc-status"], "3");
        assert_eq!(service.breaker().state(), crate::State::Closed);
        service.clone().oneshot("14").await.unwrap();
        assert_eq!(service.breaker().state(), crate::State::Open);

        clock.advance(std::time::Duration::from_secs(10));
        let refused = service.clone().oneshot("0").await.unwrap_err();
        let status = tonic::Status::from_error(refused);
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "20000"
        );
    }

    /// The place a keyed call holds in its member's bulkhead comes back when
    /// its response future is done with, so the next call to that key passes.
    #[cfg(feature = "keyed")]
    #[tokio::test]
    async fn a_keyed_call_gives_its_place_back_when_it_is_done() {
        use tower::{ServiceExt, service_fn};

        let hosts = crate::Family::builder(Breaker::builder().name("tower-places"))
            .max_concurrent(1)
            .build()
            .unwrap();
        let service = CircuitBreakerLayer::per_authority(hosts.clone()).layer(service_fn(
            |_: http::Request<()>| async { Ok::<_, Infallible>(http::Response::new(())) },
        ));
        for call in 0..3 {
            let request = http::Request::get("http://db-1/").body(()).unwrap();
            let answered = service.clone().oneshot(request).await;
            assert!(answered.is_ok(), "call {call} was refused");
            let place = hosts.get("db-1");
            assert_eq!(place.bulkhead().unwrap().running(), 0, "call {call}");
        }
    }

    /// The layer is ready when the service it wraps is: a concurrency limit
    /// inside it holds a second caller back until the first is answered.
    #[tokio::test]
    async fn readiness_is_the_inner_services() {
        use std::task::{Context, Waker};
        use tower::limit::ConcurrencyLimit;
        use tower::{ServiceExt, service_fn};

        let breaker = Breaker::builder().name("tower-ready").build().unwrap();
        let service = CircuitBreakerLayer::new(breaker).layer(ConcurrencyLimit::new(
            service_fn(|n: u32| async move { Ok::<_, Infallible>(http::Response::new(n)) }),
            1,
        ));
        let mut first = service.clone();
        let mut second = service;
        first.ready().await.unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            second.poll_ready(&mut cx).is_pending(),
            "the limit is taken"
        );
        assert_eq!(first.call(7).await.unwrap().into_body(), 7);
        second.ready().await.unwrap();
        assert_eq!(second.call(8).await.unwrap().into_body(), 8);
    }

    use std::convert::Infallible;
}
