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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_and_the_single_breaker_are_registered_when_the_middleware_is_made() {
    let middleware = per_host("reqwest-registered", 3);
    let family = failfast::registry::family("reqwest-registered").expect("listed");
    assert_eq!(family.members().len(), 0, "no host called yet");
    let breaker = middleware
        .breaker_for(&"http://10.0.0.9:8080/".parse().unwrap())
        .unwrap();
    let found = failfast::registry::get("reqwest-registered[10.0.0.9:8080]").expect("a member");
    assert!(std::ptr::eq(&*found, &*breaker));

    let single = CircuitBreakerMiddleware::single(
        Breaker::builder()
            .name("reqwest-registered-single")
            .build()
            .unwrap(),
    );
    let found = failfast::registry::get("reqwest-registered-single").expect("listed");
    let url = "http://10.0.0.9:8080/".parse().unwrap();
    assert!(std::ptr::eq(&*found, &*single.breaker_for(&url).unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_host_is_charged_to_the_host_that_answered() {
    let sick = Upstream::start(503).await;
    let to_sick = sick.url.clone();
    let app = Router::new()
        .route("/ok", get(|| async { StatusCode::OK }))
        .route(
            "/go",
            get(move || {
                let to_sick = to_sick.clone();
                async move { (StatusCode::FOUND, [(http::header::LOCATION, to_sick)]) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirecting = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let middleware = per_host("reqwest-redirect", 3);
    let hosts = middleware.hosts().unwrap().clone();
    let client = client(middleware.clone());

    for _ in 0..3 {
        let answer = client
            .get(format!("{redirecting}/go"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 503, "the sick host's answer");
    }
    assert_eq!(sick.hits(), 3);
    assert_eq!(hosts.len(), 2, "the sick host has a breaker of its own");
    let sick_breaker = middleware.breaker_for(&sick.url.parse().unwrap()).unwrap();
    let s = sick_breaker.snapshot();
    assert_eq!((s.state, s.failures), (State::Open, 3), "{s:?}");
    let redirecting_breaker = middleware
        .breaker_for(&redirecting.parse().unwrap())
        .unwrap();
    let s = redirecting_breaker.snapshot();
    assert_eq!((s.state, s.failures, s.successes), (State::Closed, 0, 3));

    let answer = client
        .get(format!("{redirecting}/ok"))
        .send()
        .await
        .expect("the redirecting host is not refused");
    assert_eq!(answer.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_a_breaker_further_down_the_chain_is_neutral() {
    let upstream = Upstream::start(200).await;
    let outer = per_host("reqwest-stacked-outer", 1);
    let inner = Breaker::builder()
        .name("reqwest-stacked-inner")
        .build()
        .unwrap();
    inner.force_open();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(outer.clone())
        .with(CircuitBreakerMiddleware::single(inner))
        .build();
    for _ in 0..3 {
        let error = client.get(&upstream.url).send().await.unwrap_err();
        let refused = rejected(&error).expect("a refusal");
        assert_eq!(refused.name(), "reqwest-stacked-inner", "the inner one's");
    }
    let s = outer
        .breaker_for(&upstream.url.parse().unwrap())
        .unwrap()
        .snapshot();
    assert_eq!(
        (s.state, s.failures, s.neutral),
        (State::Closed, 0, 3),
        "{s:?}"
    );
    assert_eq!(upstream.hits(), 0);
}

#[test]
fn one_breaker_per_host_however_it_is_spelled() {
    let middleware = per_host("reqwest-spellings", 3);
    let breaker = |url: &str| {
        let breaker = middleware.breaker_for(&url.parse().unwrap()).unwrap();
        (
            std::ptr::from_ref::<Breaker>(&*breaker),
            breaker.name().to_owned(),
        )
    };
    let first = breaker("http://example.com/a");
    for spelling in [
        "http://example.com./b",
        "http://Example.COM/c",
        "http://EXAMPLE.com.:80/d",
        "http://example.com:80/",
    ] {
        assert_eq!(breaker(spelling), first, "{spelling}");
    }
    assert_eq!(first.1, "reqwest-spellings[example.com:80]");
    assert_eq!(
        breaker("https://example.com.:443/"),
        breaker("https://example.com/")
    );
    assert_eq!(middleware.hosts().unwrap().len(), 2, "port 80 and port 443");
}
