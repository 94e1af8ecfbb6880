//! `failfast::reqwest_middleware` against two HTTP hosts on loopback, one of
//! them sick: only the sick host's breaker opens, and its refusals come back
//! as `reqwest_middleware::Error`s holding a `Rejected`.

use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State as Shared;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use failfast::reqwest_middleware::{rejected, CircuitBreakerMiddleware};
use failfast::{Breaker, ManualClock, Reason, State};
use reqwest_middleware::ClientWithMiddleware;

/// A host answering every request with the status it is set to, counting
/// the requests it receives.
struct Upstream {
    url: String,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

impl Upstream {
    async fn start(status: u16) -> Upstream {
        let answer = Arc::new(AtomicU16::new(status));
        let hits = Arc::new(AtomicUsize::new(0));
        let app = Router::new()
            .route(
                "/stock",
                get(
                    |Shared((answer, hits)): Shared<(Arc<AtomicU16>, Arc<AtomicUsize>)>| async move {
                        hits.fetch_add(1, SeqCst);
                        StatusCode::from_u16(answer.load(SeqCst)).unwrap()
                    },
                ),
            )
            .with_state((answer.clone(), hits.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/stock", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Upstream {
            url,
            status: answer,
            hits,
        }
    }

    fn hits(&self) -> usize {
        self.hits.load(SeqCst)
    }
}

fn client(middleware: CircuitBreakerMiddleware) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
}

fn per_host(name: &'static str, threshold: u32) -> CircuitBreakerMiddleware {
    CircuitBreakerMiddleware::per_host(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .recovery(Duration::from_secs(30)),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_one_sick_only_the_sick_hosts_breaker_opens() {
    let healthy = Upstream::start(200).await;
    let sick = Upstream::start(503).await;
    let middleware = per_host("reqwest-two-hosts", 3);
    let hosts = middleware.hosts().unwrap().clone();
    let client = client(middleware.clone());

    for _ in 0..3 {
        let answer = client.get(&healthy.url).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let answer = client.get(&sick.url).send().await.unwrap();
        assert_eq!(answer.status(), 503, "the sick host's own answer");
    }
    let sick_breaker = middleware.breaker_for(&sick.url.parse().unwrap()).unwrap();
    let healthy_breaker = middleware
        .breaker_for(&healthy.url.parse().unwrap())
        .unwrap();
    assert_eq!(sick_breaker.state(), State::Open, "three 503s trip it");
    assert_eq!(healthy_breaker.state(), State::Closed);
    assert_eq!(hosts.len(), 2, "one breaker per host");
    let port = |url: &str| {
        url.split(':')
            .nth(2)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        sick_breaker.name(),
        format!("reqwest-two-hosts[127.0.0.1:{}]", port(&sick.url))
    );

    for _ in 0..5 {
        let error = client.get(&sick.url).send().await.unwrap_err();
        let refused = rejected(&error).expect("a refusal, as a Rejected");
        assert_eq!(refused.name(), sick_breaker.name());
        assert_eq!(refused.reason(), Reason::Open);
        let retry = refused.retry_after().expect("the next trial's time");
        assert!(retry > Duration::from_secs(25) && retry <= Duration::from_secs(30));

        let answer = client.get(&healthy.url).send().await.unwrap();
        assert_eq!(answer.status(), 200, "the healthy host is still called");
    }
    assert_eq!(
        sick.hits(),
        3,
        "refused requests never reached the sick host"
    );
    assert_eq!(healthy.hits(), 8);
    assert_eq!(healthy_breaker.state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hundreds_are_neutral_and_a_refused_host_is_not_a_reqwest_error() {
    let upstream = Upstream::start(404).await;
    let middleware = per_host("reqwest-neutral", 2);
    let client = client(middleware.clone());
    for _ in 0..10 {
        let answer = client.get(&upstream.url).send().await.unwrap();
        assert_eq!(answer.status(), 404);
    }
    let breaker = middleware
        .breaker_for(&upstream.url.parse().unwrap())
        .unwrap();
    assert_eq!(breaker.state(), State::Closed, "404s never trip it");
    assert_eq!(breaker.snapshot().consecutive_failures, 0);

    upstream.status.store(500, SeqCst);
    for _ in 0..2 {
        assert_eq!(
            client.get(&upstream.url).send().await.unwrap().status(),
            500
        );
    }
    let error = client.get(&upstream.url).send().await.unwrap_err();
    assert!(error.is_middleware());
    assert!(rejected(&error).is_some());
    assert_eq!(upstream.hits(), 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_refused_is_a_failure() {
    // A port nothing listens on: bind one, note it, close it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let middleware = per_host("reqwest-refused", 2);
    let client = client(middleware.clone());
    for _ in 0..2 {
        let error = client.get(&url).send().await.unwrap_err();
        assert!(rejected(&error).is_none(), "reqwest's own error: {error}");
    }
    let breaker = middleware.breaker_for(&url.parse().unwrap()).unwrap();
    assert_eq!(breaker.state(), State::Open);
    let error = client.get(&url).send().await.unwrap_err();
    assert!(rejected(&error).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_in_flight_is_neutral_and_gives_its_trial_back() {
    let app = Router::new()
        .route("/fail", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/hang", get(std::future::pending::<StatusCode>))
        .route("/ok", get(|| async { StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let clock = ManualClock::new();
    let middleware = CircuitBreakerMiddleware::per_host(
        Breaker::builder()
            .name("reqwest-dropped")
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .clock(clock.clone()),
    )
    .unwrap();
    let client = client(middleware.clone());

    let answer = client.get(format!("{base}/fail")).send().await.unwrap();
    assert_eq!(answer.status(), 503);
    let breaker = middleware.breaker_for(&base.parse().unwrap()).unwrap();
    assert_eq!(breaker.state(), State::Open);
    clock.advance(Duration::from_secs(30));

    // The trial hangs; the caller gives up on it and drops the request.
    let hung = client.get(format!("{base}/hang")).send();
    let gave_up = tokio::time::timeout(Duration::from_millis(200), hung).await;
    assert!(gave_up.is_err(), "the upstream never answers /hang");
    let s = breaker.snapshot();
    assert_eq!(
        (s.state, s.trials_in_flight, s.neutral, s.failures),
        (State::HalfOpen, 0, 1, 1),
        "dropped in flight: neutral, and the trial slot is free again"
    );

    // So the next request is the trial, and closes the breaker.
    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
}
