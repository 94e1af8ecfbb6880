//! The tower layer in front of real services: an axum `Router` whose handler
//! goes sick, a `ServiceBuilder` stack with tower's timeout and concurrency
//! limit over a hanging service, and the trial's fate when readiness is
//! polled, a response future is dropped, or the inner service panics.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use failfast::Mode;
use failfast::tower::{ByAuthority, CircuitBreakerLayer, RefuseWithResponse};
use failfast::{Breaker, ManualClock, Reason, Rejected, State};
use http::{Request, Response, StatusCode};
use tower::BoxError;
use tower::{Layer, Service, ServiceBuilder, ServiceExt, service_fn};

const RECOVERY: Duration = Duration::from_secs(30);

fn breaker(name: &'static str, threshold: u32, clock: &ManualClock) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .recovery(RECOVERY)
            .clock(clock.clone())
            .build()
            .expect("valid settings"),
    )
}

/// How many requests reached a service, for the test to wait on.
#[derive(Clone)]
struct Hits(Arc<tokio::sync::watch::Sender<usize>>);

impl Hits {
    fn new() -> Self {
        Hits(Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    fn hit(&self) {
        self.0.send_modify(|hits| *hits += 1);
    }

    fn get(&self) -> usize {
        *self.0.borrow()
    }

    /// Waits until `n` requests have arrived.
    async fn reach(&self, n: usize) {
        let mut hits = self.0.subscribe();
        hits.wait_for(|hits| *hits >= n)
            .await
            .expect("still counting");
    }
}

/// The dependency behind the handler: answers `status`, and while `hold` is
/// set waits for `release` first.
struct Backend {
    hits: Hits,
    status: AtomicU16,
    hold: AtomicBool,
    release: tokio::sync::Notify,
}

impl Backend {
    fn new(status: u16) -> Arc<Self> {
        Arc::new(Backend {
            hits: Hits::new(),
            status: AtomicU16::new(status),
            hold: AtomicBool::new(false),
            release: tokio::sync::Notify::new(),
        })
    }

    async fn answer(&self) -> StatusCode {
        self.hits.hit();
        if self.hold.load(SeqCst) {
            self.release.notified().await;
        }
        StatusCode::from_u16(self.status.load(SeqCst)).expect("a valid status")
    }
}

fn app(breaker: &Arc<Breaker>, backend: &Arc<Backend>) -> Router {
    let backend = backend.clone();
    Router::new()
        .route(
            "/stock",
            get(move || {
                let backend = backend.clone();
                async move { backend.answer().await }
            }),
        )
        .layer(CircuitBreakerLayer::new(breaker.clone()).on_rejected(RefuseWithResponse))
}

async fn get_stock(app: &Router) -> Response<Body> {
    let request = Request::get("/stock").body(Body::empty()).unwrap();
    app.clone().oneshot(request).await.expect("infallible")
}

fn retry_after(response: &Response<Body>) -> Option<&str> {
    response
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_axum_router_answers_503_with_retry_after_after_threshold_5xx_and_lets_one_trial_through()
 {
    let clock = ManualClock::new();
    let breaker = breaker("tower-axum-sick", 3, &clock);
    let backend = Backend::new(500);
    let app = app(&breaker, &backend);

    for _ in 0..3 {
        assert_eq!(get_stock(&app).await.status(), 500);
    }
    assert_eq!(breaker.state(), State::Open);

    let refused = get_stock(&app).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&refused), Some("30"));
    clock.advance(Duration::from_millis(10_500));
    let refused = get_stock(&app).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&refused), Some("20"), "19.5 s, rounded up");
    assert_eq!(backend.hits.get(), 3, "refused requests never ran");

    // Recovered, and slow to answer: the first request after `recovery` is
    // the trial, and it holds the only slot while it runs.
    clock.advance(Duration::from_millis(19_500));
    backend.status.store(200, SeqCst);
    backend.hold.store(true, SeqCst);
    let trial = tokio::spawn({
        let app = app.clone();
        async move { get_stock(&app).await.status() }
    });
    backend.hits.reach(4).await;
    assert_eq!(breaker.state(), State::HalfOpen);

    let others: Vec<_> = (0..10)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let response = get_stock(&app).await;
                (response.status(), retry_after(&response).map(str::to_owned))
            })
        })
        .collect();
    for other in others {
        let (status, retry_after) = other.await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry_after, None, "the next trial depends on this one");
    }
    assert_eq!(backend.hits.get(), 4, "exactly one trial went through");

    backend.release.notify_one();
    assert_eq!(trial.await.unwrap(), StatusCode::OK);
    assert_eq!(breaker.state(), State::Closed);
    backend.hold.store(false, SeqCst);
    assert_eq!(get_stock(&app).await.status(), StatusCode::OK);
    assert_eq!(backend.hits.get(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hundreds_and_429s_never_trip_it() {
    let clock = ManualClock::new();
    let breaker = breaker("tower-axum-4xx", 2, &clock);
    let backend = Backend::new(400);
    let app = app(&breaker, &backend);

    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let (app, backend) = (app.clone(), backend.clone());
            tokio::spawn(async move {
                if i == 20 {
                    backend.status.store(429, SeqCst);
                }
                get_stock(&app).await.status()
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().is_client_error());
    }
    assert_eq!(backend.hits.get(), 40, "none was refused");
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.snapshot().consecutive_failures, 0);

    // The same breaker still counts a real failure.
    backend.status.store(503, SeqCst);
    for _ in 0..2 {
        assert_eq!(get_stock(&app).await.status(), 503);
    }
    assert_eq!(breaker.state(), State::Open);
}

/// A service that takes the request and never answers.
fn hanging(
    reached: Hits,
) -> impl Service<(), Response = Response<String>, Error = Infallible, Future: Send> + Clone {
    service_fn(move |()| {
        reached.hit();
        std::future::pending()
    })
}

#[tokio::test(start_paused = true)]
async fn over_tower_timeout_and_concurrency_limit_hangs_trip_it() {
    let clock = ManualClock::new();
    let breaker = breaker("tower-stack-hangs", 2, &clock);
    let reached = Hits::new();
    let service = ServiceBuilder::new()
        .concurrency_limit(4)
        .layer(CircuitBreakerLayer::new(breaker.clone()))
        .timeout(Duration::from_millis(200))
        .service(hanging(reached.clone()));

    for _ in 0..2 {
        let error: BoxError = service.clone().oneshot(()).await.unwrap_err();
        assert!(
            error.is::<tower::timeout::error::Elapsed>(),
            "the timeout's own error passes through: {error}"
        );
    }
    assert_eq!(
        breaker.state(),
        State::Open,
        "two timeouts are two failures"
    );

    let error = service.clone().oneshot(()).await.unwrap_err();
    let rejected = error.downcast_ref::<Rejected>().expect("a refusal");
    assert_eq!(rejected.reason(), Reason::Open);
    assert_eq!(rejected.retry_after(), Some(RECOVERY));
    assert_eq!(reached.get(), 2, "the refused call never reached it");
}

#[tokio::test(start_paused = true)]
async fn under_a_tower_timeout_a_hang_longer_than_slow_is_a_slow_call() {
    // The breaker inside the timeout sees its future dropped: neutral unless
    // it ran past `slow`, then a slow call (and a slow trial fails).
    let clock = ManualClock::new();
    let breaker = Arc::new(
        Breaker::builder()
            .name("tower-under-timeout")
            .failure_rate(0.5)
            .window_calls(4)
            .min_calls(2)
            .slow(Duration::from_millis(100))
            .slow_rate(0.5)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let reached = Hits::new();
    let inner = CircuitBreakerLayer::new(breaker.clone()).layer(hanging(reached.clone()));
    let service = ServiceBuilder::new()
        .timeout(Duration::from_millis(200))
        .service(inner);

    // Dropped early: neutral.
    let quick = ServiceBuilder::new()
        .timeout(Duration::from_millis(50))
        .service(service.get_ref().clone());
    assert!(quick.oneshot(()).await.is_err());
    assert_eq!(
        breaker.snapshot().window_calls,
        0,
        "an early drop is neutral"
    );

    for _ in 0..2 {
        let mut service = service.clone();
        // Admitted now; the call then hangs for 150 ms of the breaker's
        // time before tower's timeout drops it.
        let future = service.ready().await.unwrap().call(());
        clock.advance(Duration::from_millis(150));
        assert!(future.await.is_err());
    }
    assert_eq!(breaker.snapshot().window_slow, 2);
    assert_eq!(breaker.state(), State::Open, "two slow calls of two");
}

/// Polls `future` once, outside any runtime: starts a call without finishing
/// it.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// A breaker tripped by one 500, now eligible for its trial.
fn eligible_for_a_trial(name: &'static str) -> (Arc<Breaker>, ManualClock) {
    let clock = ManualClock::new();
    let breaker = breaker(name, 1, &clock);
    let _ = breaker.call(|| Err::<(), _>("down"));
    clock.advance(RECOVERY);
    assert_eq!(breaker.state(), State::HalfOpen, "eligible");
    (breaker, clock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_response_future_gives_the_trial_back() {
    let (breaker, _clock) = eligible_for_a_trial("tower-dropped");
    let reached = Hits::new();
    let service = CircuitBreakerLayer::new(breaker.clone()).layer(hanging(reached.clone()));

    // The trial, on another task, cancelled there while the dependency hangs.
    let trial = tokio::spawn(service.clone().oneshot(()));
    reached.reach(1).await;
    assert_eq!(breaker.snapshot().trials_in_flight, 1);
    let refused = service.clone().oneshot(()).await.unwrap_err();
    assert_eq!(
        refused.downcast_ref::<Rejected>().unwrap().reason(),
        Reason::TrialsInFlight
    );

    trial.abort();
    assert!(trial.await.unwrap_err().is_cancelled());
    assert_eq!(breaker.snapshot().trials_in_flight, 0, "given back");
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "neither failed nor passed"
    );

    // The next call is the trial.
    let mut next = std::pin::pin!(service.clone().oneshot(()));
    assert!(poll_once(next.as_mut()).is_pending());
    assert_eq!(reached.get(), 2);
    assert_eq!(breaker.snapshot().trials_in_flight, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poll_ready_called_many_times_never_takes_the_trial() {
    let (breaker, _clock) = eligible_for_a_trial("tower-ready");
    let reached = Hits::new();
    let service = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn({
        let reached = reached.clone();
        move |()| {
            reached.hit();
            async { Ok::<_, Infallible>(Response::new(String::new())) }
        }
    }));

    let pollers: Vec<_> = (0..8)
        .map(|_| {
            let mut service = service.clone();
            tokio::spawn(async move {
                for _ in 0..1_000 {
                    std::future::poll_fn(|cx| service.poll_ready(cx))
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for poller in pollers {
        poller.await.unwrap();
    }
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.trials_in_flight, 0, "readiness took no trial");
    assert_eq!(reached.get(), 0);

    // The trial is still there for the first call.
    let response = service.clone().oneshot(()).await.expect("admitted");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(reached.get(), 1);
    assert_eq!(breaker.state(), State::Closed, "the trial passed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_inner_future_is_a_failure_and_reopens_a_trial() {
    let clock = ManualClock::new();
    let breaker = breaker("tower-panic", 2, &clock);
    let service =
        CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(|fail: bool| async move {
            assert!(!fail, "the handler panics");
            Ok::<_, Infallible>(Response::new(String::new()))
        }));

    let panicked = tokio::spawn(service.clone().oneshot(true)).await;
    assert!(panicked.unwrap_err().is_panic());
    assert_eq!(breaker.snapshot().consecutive_failures, 1);
    let panicked = tokio::spawn(service.clone().oneshot(true)).await;
    assert!(panicked.unwrap_err().is_panic());
    assert_eq!(breaker.state(), State::Open);

    clock.advance(RECOVERY);
    let panicked = tokio::spawn(service.clone().oneshot(true)).await;
    assert!(panicked.unwrap_err().is_panic());
    assert_eq!(breaker.state(), State::Open, "a panicking trial failed");
    assert_eq!(breaker.snapshot().trials_in_flight, 0);
}

/// A service whose `call` itself panics, before any future exists.
#[derive(Clone)]
struct PanicsInCall;

impl Service<()> for PanicsInCall {
    type Response = Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<String>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        panic!("the service panics in call")
    }
}

#[test]
fn a_panic_in_the_inner_call_is_a_failure() {
    let clock = ManualClock::new();
    let breaker = breaker("tower-panic-call", 1, &clock);
    let mut service = CircuitBreakerLayer::new(breaker.clone()).layer(PanicsInCall);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(service.call(()));
    }));
    assert!(caught.is_err());
    assert_eq!(breaker.state(), State::Open);
}

/// A response future debugs as where its call is: admitted and in flight,
/// finished, or refused.
#[test]
fn a_response_future_debugs_as_its_calls_state() {
    let clock = ManualClock::new();
    let breaker = breaker("tower-debug", 1, &clock);
    let mut service = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(|()| {
        std::future::ready(Ok::<_, Infallible>(Response::new(String::new())))
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_ready());
    let mut admitted = std::pin::pin!(service.call(()));
    assert_eq!(
        format!("{admitted:?}"),
        r#"ResponseFuture { state: "admitted", .. }"#
    );
    assert!(poll_once(admitted.as_mut()).is_ready());
    assert_eq!(
        format!("{admitted:?}"),
        r#"ResponseFuture { state: "finished", .. }"#
    );

    let _ = breaker.call(|| Err::<(), _>("down"));
    assert_eq!(breaker.state(), State::Open);
    assert!(service.poll_ready(&mut cx).is_ready());
    let refused = service.call(());
    assert_eq!(
        format!("{refused:?}"),
        r#"ResponseFuture { state: "refused", .. }"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_authority_only_the_sick_hosts_breaker_opens_and_recovers_alone() {
    let clock = ManualClock::new();
    let hosts = failfast::Family::builder(
        Breaker::builder()
            .name("tower-hosts")
            .threshold(2)
            .recovery(RECOVERY)
            .clock(clock.clone()),
    )
    .build()
    .unwrap();
    let sick_hits = Hits::new();
    let healthy_hits = Hits::new();
    let sick_is_sick = Arc::new(AtomicBool::new(true));
    let service = {
        let (sick_hits, healthy_hits) = (sick_hits.clone(), healthy_hits.clone());
        let sick_is_sick = sick_is_sick.clone();
        CircuitBreakerLayer::per_key(hosts.clone(), ByAuthority).layer(service_fn(
            move |request: Request<()>| {
                let sick = request.uri().host() == Some("sick.internal")
                    || request
                        .headers()
                        .get("host")
                        .is_some_and(|h| h == "sick.internal");
                let status = if sick {
                    sick_hits.hit();
                    if sick_is_sick.load(SeqCst) { 503 } else { 200 }
                } else {
                    healthy_hits.hit();
                    200
                };
                let response = Response::builder().status(status).body(()).unwrap();
                async move { Ok::<_, Infallible>(response) }
            },
        ))
    };
    let call = |uri: &str| {
        let request = Request::get(uri).body(()).unwrap();
        service.clone().oneshot(request)
    };

    for _ in 0..2 {
        let answer = call("http://sick.internal/stock").await.unwrap();
        assert_eq!(answer.status(), 503);
        let answer = call("http://stock.internal:8080/stock").await.unwrap();
        assert_eq!(answer.status(), 200);
    }
    assert_eq!(hosts.stats().stored, 2, "one breaker per authority");
    let sick = hosts.get("sick.internal");
    let healthy = hosts.get("stock.internal:8080");
    assert_eq!(
        sick.state(),
        State::Open,
        "two 503s trip the sick host's breaker"
    );
    assert_eq!(healthy.state(), State::Closed);
    assert_eq!(sick.name(), "tower-hosts[sick.internal]");

    // Refused by the sick host's breaker, by URI or by `Host` header; the
    // healthy host is still called.
    for uri in ["http://sick.internal/stock", "/stock"] {
        let request = Request::get(uri)
            .header("host", "sick.internal")
            .body(())
            .unwrap();
        let refused: BoxError = service.clone().oneshot(request).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().expect("a Rejected");
        assert_eq!(refused.name(), "tower-hosts[sick.internal]");
        assert_eq!(refused.retry_after(), Some(RECOVERY));
        let answer = call("http://stock.internal:8080/stock").await.unwrap();
        assert_eq!(answer.status(), 200);
    }
    assert_eq!(sick_hits.get(), 2, "refused requests never reached it");
    assert_eq!(healthy_hits.get(), 4);

    // Healed: after `recovery` one trial goes through and closes it.
    sick_is_sick.store(false, SeqCst);
    clock.advance(RECOVERY);
    let answer = call("http://sick.internal/stock").await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(sick.state(), State::Closed);
    assert_eq!(sick_hits.get(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_authority_honours_the_familys_max_concurrent_per_host() {
    let hosts = failfast::Family::builder(Breaker::builder().name("tower-limited"))
        .max_concurrent(1)
        .build()
        .unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let entered = Arc::new(AtomicBool::new(false));
    let service = {
        let (release, entered) = (release.clone(), entered.clone());
        CircuitBreakerLayer::per_key(hosts.clone(), ByAuthority).layer(service_fn(
            move |request: Request<()>| {
                let release = release.clone();
                let hangs = request.uri().host() == Some("slow.internal");
                if hangs {
                    entered.store(true, SeqCst);
                }
                async move {
                    if hangs {
                        release.notified().await;
                    }
                    Ok::<_, Infallible>(Response::new(()))
                }
            },
        ))
    };
    let call = |uri: &str| {
        let request = Request::get(uri).body(()).unwrap();
        service.clone().oneshot(request)
    };
    // One request to the slow host holds its only place.
    let held = tokio::spawn(call("http://slow.internal/a"));
    while !entered.load(SeqCst) {
        tokio::task::yield_now().await;
    }
    assert!(
        failfast::__private::enter_member(&hosts.get("slow.internal")).is_none(),
        "its one place is held"
    );
    // Refused at once, not left waiting behind the held request.
    let second = std::pin::pin!(call("http://slow.internal/b"));
    let refused: BoxError = match poll_once(second) {
        Poll::Ready(Err(refused)) => refused,
        Poll::Ready(Ok(_)) => panic!("the second request was let through"),
        Poll::Pending => panic!("the second request was let through and waits"),
    };
    let refused = refused.downcast_ref::<Rejected>().expect("a Rejected");
    assert_eq!(refused.reason(), Reason::ConcurrencyLimit);
    assert_eq!(refused.name(), "tower-limited[slow.internal]");
    // Another host has a place of its own.
    let answer = call("http://fast.internal/a").await.unwrap();
    assert_eq!(answer.status(), 200);
    // The place comes back once the held request is answered.
    release.notify_one();
    assert_eq!(held.await.unwrap().unwrap().status(), 200);
    assert!(
        failfast::__private::enter_member(&hosts.get("slow.internal")).is_some(),
        "its place is back"
    );
    release.notify_one();
    assert_eq!(call("http://slow.internal/c").await.unwrap().status(), 200);
    let slow = hosts.get("slow.internal").snapshot();
    assert_eq!((slow.rejected, slow.state), (1, State::Closed));
}

#[tokio::test]
async fn a_layers_breaker_and_a_keyed_layers_family_are_registered_when_the_layer_is_made() {
    let shared = Arc::new(
        Breaker::builder()
            .name("tower-registered-arc")
            .build()
            .unwrap(),
    );
    let layer = CircuitBreakerLayer::new(shared.clone());
    let found = failfast::registry::get("tower-registered-arc").expect("listed");
    assert!(std::ptr::eq(&*found, &*shared));

    let owned = CircuitBreakerLayer::new(
        Breaker::builder()
            .name("tower-registered-owned")
            .build()
            .unwrap(),
    );
    let found = failfast::registry::get("tower-registered-owned").expect("listed");
    found.set_mode(failfast::Mode::ForcedOpen);
    let answer = owned
        .layer(service_fn(|_: Request<()>| async {
            Ok::<_, std::io::Error>(Response::new(()))
        }))
        .oneshot(Request::new(()))
        .await;
    assert!(
        answer.is_err_and(|e| e.downcast_ref::<Rejected>().is_some()),
        "the registry's breaker is the layer's: forced open there, the layer refuses"
    );

    let leaked: &'static Breaker = Box::leak(Box::new(
        Breaker::builder()
            .name("tower-registered-static")
            .build()
            .unwrap(),
    ));
    let _static = CircuitBreakerLayer::new(leaked);
    let found = failfast::registry::get("tower-registered-static").expect("listed");
    assert!(std::ptr::eq(&*found, leaked));

    let hosts: failfast::Family<String> =
        failfast::Family::builder(Breaker::builder().name("tower-registered-hosts"))
            .build()
            .unwrap();
    let keyed = CircuitBreakerLayer::per_key(hosts, ByAuthority);
    let family = failfast::registry::family("tower-registered-hosts").expect("listed");
    let answer = keyed
        .layer(service_fn(|_: Request<()>| async {
            Ok::<_, std::io::Error>(Response::new(()))
        }))
        .oneshot(Request::get("http://a.test/").body(()).unwrap())
        .await;
    assert!(answer.is_ok());
    assert_eq!(
        family.stats().stored,
        1,
        "the registry's family is the layer's: it holds the key the layer called"
    );
    drop(layer);
}

/// The stack's inner layer refuses: nothing reached the dependency, so the
/// outer layer counts nothing against it, whether the refusal comes boxed,
/// inside an `io::Error`, or to a gRPC classifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_an_inner_breaker_is_neutral_in_the_outer_one() {
    let clock = ManualClock::new();
    let outer = breaker("tower-stacked-outer", 1, &clock);
    let inner = breaker("tower-stacked-inner", 1, &clock);
    inner.set_mode(Mode::ForcedOpen);
    let ok = || service_fn(|_: ()| async { Ok::<_, Infallible>(Response::new(())) });
    let stacked = CircuitBreakerLayer::new(outer.clone())
        .layer(CircuitBreakerLayer::new(inner.clone()).layer(ok()));
    for _ in 0..3 {
        let refused = stacked.clone().oneshot(()).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().expect("a Rejected");
        assert_eq!(refused.name(), "tower-stacked-inner");
    }
    let s = outer.snapshot();
    assert_eq!(
        (s.state, s.failures, s.neutral),
        (State::Closed, 0, 3),
        "{s:?}"
    );

    let grpc = CircuitBreakerLayer::new(outer.clone())
        .classifier(failfast::classify::GrpcClassifier)
        .layer(CircuitBreakerLayer::new(inner.clone()).layer(ok()));
    grpc.oneshot(()).await.unwrap_err();
    let as_io = CircuitBreakerLayer::new(outer.clone()).layer(service_fn({
        let inner = inner.clone();
        move |_: ()| {
            let refused = inner.acquire().unwrap_err();
            async move { Err::<Response<()>, _>(std::io::Error::from(refused)) }
        }
    }));
    as_io.oneshot(()).await.unwrap_err();
    let s = outer.snapshot();
    assert_eq!(
        (s.state, s.failures, s.neutral),
        (State::Closed, 0, 5),
        "{s:?}"
    );

    // The inner service's own error still counts.
    let failing = CircuitBreakerLayer::new(outer.clone()).layer(service_fn(|_: ()| async {
        Err::<Response<()>, _>(std::io::Error::other("connection reset"))
    }));
    failing.oneshot(()).await.unwrap_err();
    assert_eq!(outer.state(), State::Open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_authority_keeps_one_breaker_per_host_however_it_is_spelled() {
    let hosts = failfast::Family::builder(Breaker::builder().name("tower-spellings"))
        .build()
        .unwrap();
    let service = CircuitBreakerLayer::per_key(hosts.clone(), ByAuthority).layer(service_fn(
        |_: Request<()>| async { Ok::<_, Infallible>(Response::new(())) },
    ));
    let call = |uri: &str, host: Option<&str>| {
        let mut request = Request::get(uri);
        if let Some(host) = host {
            request = request.header("host", host);
        }
        service.clone().oneshot(request.body(()).unwrap())
    };
    for (uri, host) in [
        ("http://example.com/a", None),
        ("http://example.com./b", None),
        ("http://Example.COM/c", None),
        ("http://EXAMPLE.com.:80/d", None),
        ("/e", Some("example.com")),
        ("/f", Some("Example.com.")),
    ] {
        call(uri, host).await.unwrap();
    }
    assert_eq!(hosts.stats().stored, 1, "{:?}", names(&hosts));
    assert_eq!(hosts.get("example.com").snapshot().successes, 6);

    call("https://example.com:443/", None).await.unwrap();
    call("https://example.com/", None).await.unwrap();
    call("http://example.com:8080/", None).await.unwrap();
    call("http://[::1]:80/", None).await.unwrap();
    call("http://[::1]/", None).await.unwrap();
    // An IPv6 address without a port: its colons are not a port's.
    call("http://[::ABCD]/", None).await.unwrap();
    call("http://[::abcd]:80/", None).await.unwrap();
    // A host that is a lone dot keeps it: an empty name is no host.
    call("/g", Some(".")).await.unwrap();
    let mut names = names(&hosts);
    names.sort();
    assert_eq!(
        names,
        [
            "tower-spellings[.]",
            "tower-spellings[[::1]]",
            "tower-spellings[[::abcd]]",
            "tower-spellings[example.com:8080]",
            "tower-spellings[example.com]",
        ],
        "https's default port is left out as http's is"
    );
}

fn names(family: &failfast::Family<String>) -> Vec<String> {
    family
        .members()
        .iter()
        .map(|m| m.name().to_owned())
        .collect()
}

/// The inner layer answers its refusals with a `503` (`RefuseWithResponse`),
/// as a layer under axum does: the outer layer's classifier sees a response,
/// not an error, and still tells the refusal (nothing reached the backend)
/// from the backend's own `503`, which counts. So does a handler that
/// passes on a refusal as its answer (`http::Response::from(rejected)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_answered_with_a_503_is_neutral_in_an_outer_layer() {
    let clock = ManualClock::new();
    let outer = breaker("tower-stacked-503-outer", 3, &clock);
    let inner = breaker("tower-stacked-503-inner", 1, &clock);
    let backend = Backend::new(503);
    let stacked = CircuitBreakerLayer::new(outer.clone())
        .on_rejected(RefuseWithResponse)
        .layer(app(&inner, &backend));
    for _ in 0..3 {
        let request = Request::get("/stock").body(Body::empty()).unwrap();
        let response = stacked.clone().oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(
        backend.hits.get(),
        1,
        "the inner layer refused the other two"
    );
    let (o, i) = (outer.snapshot(), inner.snapshot());
    assert_eq!((i.state, i.failures, i.rejected), (State::Open, 1, 2));
    assert_eq!(
        (o.state, o.failures, o.neutral, o.rejected),
        (State::Closed, 1, 2, 0),
        "{o:?}"
    );

    // A handler passing on the refusal of a breaker it calls.
    let passing_on = CircuitBreakerLayer::new(outer.clone()).layer(service_fn({
        let inner = inner.clone();
        move |_: ()| {
            let refused = inner.acquire().unwrap_err();
            async move { Ok::<_, Infallible>(Response::<String>::from(refused)) }
        }
    }));
    let answer = passing_on.oneshot(()).await.unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    let rejected = answer.extensions().get::<Rejected>().expect("the refusal");
    assert_eq!(rejected.name(), "tower-stacked-503-inner");
    assert_eq!(outer.snapshot().neutral, 3);

    // The backend's own 503s count.
    for _ in 0..2 {
        inner.set_mode(Mode::Normal);
        let request = Request::get("/stock").body(Body::empty()).unwrap();
        let response = stacked.clone().oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.extensions().get::<Rejected>().is_none());
    }
    assert_eq!(backend.hits.get(), 3);
    assert_eq!(outer.state(), State::Open);
}

/// Under a gRPC classifier, a refusal of an inner layer answered as a
/// `tonic::Status` (`RefuseWithStatus`) or as a `503` is neutral too.
#[cfg(feature = "tonic")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_as_a_status_or_a_503_is_neutral_to_an_outer_grpc_classifier() {
    use failfast::classify::GrpcClassifier;
    use failfast::tower::RefuseWithStatus;

    let clock = ManualClock::new();
    let outer = breaker("tower-stacked-grpc-outer", 3, &clock);
    let inner = breaker("tower-stacked-grpc-inner", 1, &clock);
    inner.set_mode(Mode::ForcedOpen);
    let ok = || service_fn(|_: ()| async { Ok::<_, Infallible>(Response::new(String::new())) });
    let as_status = CircuitBreakerLayer::new(outer.clone())
        .classifier(GrpcClassifier)
        .layer(
            CircuitBreakerLayer::new(inner.clone())
                .on_rejected(RefuseWithStatus)
                .layer(ok()),
        );
    let refused = as_status.oneshot(()).await.unwrap_err();
    let status = tonic::Status::from_error(refused);
    assert_eq!(status.code(), tonic::Code::Unavailable);
    let as_503 = CircuitBreakerLayer::new(outer.clone())
        .classifier(GrpcClassifier)
        .layer(
            CircuitBreakerLayer::new(inner.clone())
                .on_rejected(RefuseWithResponse)
                .layer(ok()),
        );
    let answer = as_503.clone().oneshot(()).await.unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Seen by the default HTTP classifier too.
    let as_status_to_http = CircuitBreakerLayer::new(outer.clone()).layer(
        CircuitBreakerLayer::new(inner.clone())
            .on_rejected(RefuseWithStatus)
            .layer(ok()),
    );
    as_status_to_http.oneshot(()).await.unwrap_err();
    let s = outer.snapshot();
    assert_eq!(
        (s.state, s.failures, s.neutral),
        (State::Closed, 0, 3),
        "{s:?}"
    );
}
