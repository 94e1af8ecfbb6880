//! `failfast::reqwest_middleware` against HTTP hosts on loopback: with one
//! of two hosts sick, only the sick host's breaker opens, and its refusals
//! come back as `reqwest_middleware::Error`s holding a `Rejected`; a
//! response the classifier counts as a success is decided by its body
//! (cut short, slow, read to its end, dropped unread).

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use axum::Router;
use axum::extract::State as Shared;
use axum::http::StatusCode;
use axum::routing::get;
use failfast::Mode;
use failfast::reqwest_middleware::{CircuitBreakerMiddleware, Host};
use failfast::{Breaker, Builder, Family, ManualClock, Reason, Rejected, State};
use reqwest_middleware::ClientWithMiddleware;

/// A host answering every request with the status it is set to, counting
/// the requests it receives.
struct Upstream {
    url: String,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

/// The refusal inside a middleware error, as a caller finds it.
fn rejected(error: &reqwest_middleware::Error) -> Option<&Rejected> {
    match error {
        reqwest_middleware::Error::Middleware(error) => error.downcast_ref::<Rejected>(),
        reqwest_middleware::Error::Reqwest(_) => None,
    }
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

/// A family of per-host breakers built from `breaker`.
fn family(breaker: Builder) -> Family<Host> {
    Family::builder(breaker).build().unwrap()
}

/// The hosts of a middleware whose breakers open after `threshold`
/// failures and try again after 30 s.
fn hosts(name: &'static str, threshold: u32) -> Family<Host> {
    family(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .recovery(Duration::from_secs(30)),
    )
}

fn per_host(name: &'static str, threshold: u32) -> CircuitBreakerMiddleware {
    CircuitBreakerMiddleware::per_host(hosts(name, threshold))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_one_sick_only_the_sick_hosts_breaker_opens() {
    let healthy = Upstream::start(200).await;
    let sick = Upstream::start(503).await;
    let hosts = hosts("reqwest-two-hosts", 3);
    let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
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
    assert_eq!(hosts.stats().stored, 2, "one breaker per host");
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

/// A client whose breaker for a loopback server (`/fail` answers 503,
/// `/hang` never answers, `/ok` 200) has `breaker`'s settings with
/// threshold 1 and 30 s of recovery on `clock`, was opened by one 503, and
/// is due its trial: the server's base URL, the client and the breaker.
async fn at_the_trial(
    breaker: Builder,
    clock: &ManualClock,
) -> (
    String,
    ClientWithMiddleware,
    impl std::ops::Deref<Target = Breaker>,
) {
    let app = Router::new()
        .route("/fail", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/hang", get(std::future::pending::<StatusCode>))
        .route("/ok", get(|| async { StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let middleware = CircuitBreakerMiddleware::per_host(family(
        breaker
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .clock(clock.clone()),
    ));
    let client = client(middleware.clone());
    let answer = client.get(format!("{base}/fail")).send().await.unwrap();
    assert_eq!(answer.status(), 503);
    let breaker = middleware.breaker_for(&base.parse().unwrap()).unwrap();
    assert_eq!(breaker.state(), State::Open);
    clock.advance(Duration::from_secs(30));
    (base, client, breaker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_in_flight_is_neutral_and_gives_its_trial_back() {
    let clock = ManualClock::new();
    let (base, client, breaker) =
        at_the_trial(Breaker::builder().name("reqwest-dropped"), &clock).await;

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

/// A request dropped in flight after running longer than `slow` is a slow
/// call: a trial abandoned so late fails, and the breaker opens again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_dropped_in_flight_after_slow_is_slow_and_opens_the_breaker_again() {
    let clock = ManualClock::new();
    let slow = Breaker::builder()
        .name("reqwest-dropped-slow")
        .slow(Duration::from_secs(1));
    let (base, client, breaker) = at_the_trial(slow, &clock).await;

    // The trial hangs for 2 s of the breaker's clock; then the caller gives
    // up on it and drops the request.
    let hung = client.get(format!("{base}/hang")).send();
    let two_seconds_pass = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        clock.advance(Duration::from_secs(2));
        std::future::pending::<()>().await;
    };
    tokio::select! {
        answered = hung => panic!("the upstream never answers /hang: {answered:?}"),
        () = two_seconds_pass => unreachable!(),
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    let s = breaker.snapshot();
    assert_eq!(
        (s.state, s.trials_in_flight, s.slow, s.neutral),
        (State::Open, 0, 1, 1),
        "dropped after 2 s with slow = 1 s: a slow trial, which fails"
    );
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

    let single = CircuitBreakerMiddleware::new(
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
    let hosts = hosts("reqwest-redirect", 3);
    let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
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
    assert_eq!(
        hosts.stats().stored,
        2,
        "the sick host has a breaker of its own"
    );
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
    inner.set_mode(Mode::ForcedOpen);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(outer.clone())
        .with(CircuitBreakerMiddleware::new(inner))
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
    let hosts = hosts("reqwest-spellings", 3);
    let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
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
    assert_eq!(hosts.stats().stored, 2, "port 80 and port 443");
}

/// A host speaking HTTP/1.1 by hand, for answers a well-behaved server does
/// not give: on each connection it reads the request's head, then `answer`
/// writes what comes back and the connection is closed.
async fn raw_host<F, A>(answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> A + Send + Sync + 'static,
    A: std::future::Future<Output = ()> + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    let mut byte = [0];
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                answer(stream).await;
            });
        }
    });
    url
}

/// The host at `base` with routes of its own, on loopback.
async fn host(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// A 200 promising 1000 bytes, which sends 10 and hangs up.
async fn cut_short(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let _ = stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n0123456789")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_short_is_a_failure_and_opens_the_hosts_breaker() {
    let url = raw_host(cut_short).await;
    let middleware = per_host("reqwest-cut-short", 3);
    let client = client(middleware.clone());
    for _ in 0..3 {
        let answer = client.get(&url).send().await.unwrap();
        assert_eq!(answer.status(), 200, "a head as good as any");
        assert_eq!(answer.content_length(), Some(1000));
        let error = answer.bytes().await.unwrap_err();
        assert!(error.is_decode(), "reqwest's error for the body: {error:?}");
    }
    let breaker = middleware.breaker_for(&url.parse().unwrap()).unwrap();
    let s = breaker.snapshot();
    assert_eq!(
        (s.state, s.failures, s.successes),
        (State::Open, 3, 0),
        "three bodies cut short: {s:?}"
    );
    let error = client.get(&url).send().await.unwrap_err();
    assert_eq!(rejected(&error).expect("refused").reason(), Reason::Open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_body_cut_short_is_charged_to_the_host_that_sent_it() {
    let cut = raw_host(cut_short).await;
    let to_cut = cut.clone();
    let redirecting = host(Router::new().route(
        "/go",
        get(move || {
            let to_cut = to_cut.clone();
            async move { (StatusCode::FOUND, [(http::header::LOCATION, to_cut)]) }
        }),
    ))
    .await;
    let middleware = per_host("reqwest-redirect-cut", 3);
    let client = client(middleware.clone());
    let answer = client
        .get(format!("{redirecting}/go"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.url().as_str(), cut, "the host that answered");
    let cut_breaker = middleware.breaker_for(&cut.parse().unwrap()).unwrap();
    assert_eq!(
        cut_breaker.snapshot().calls,
        0,
        "its verdict waits for the body"
    );
    answer.bytes().await.unwrap_err();
    let s = cut_breaker.snapshot();
    assert_eq!((s.failures, s.successes), (1, 0), "{s:?}");
    let s = middleware
        .breaker_for(&redirecting.parse().unwrap())
        .unwrap()
        .snapshot();
    assert_eq!((s.failures, s.successes), (0, 1), "it answered: {s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_clients_read_timeout_is_a_failure_and_still_a_timeout() {
    use tokio::io::AsyncWriteExt;
    // Ten bytes of twenty, and then nothing.
    let url = raw_host(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n0123456789")
            .await;
        std::future::pending::<()>().await;
    })
    .await;
    let middleware = per_host("reqwest-read-timeout", 1);
    let client = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .read_timeout(Duration::from_millis(100))
            .build()
            .unwrap(),
    )
    .with(middleware.clone())
    .build();
    let answer = client.get(&url).send().await.unwrap();
    let error = answer.bytes().await.unwrap_err();
    assert!(error.is_timeout(), "reqwest still says so: {error:?}");
    let breaker = middleware.breaker_for(&url.parse().unwrap()).unwrap();
    let s = breaker.snapshot();
    assert_eq!((s.state, s.failures), (State::Open, 1), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_slow_is_a_slow_call() {
    use tokio::io::AsyncWriteExt;
    // Half the body with the head, the other half when the test says so;
    // one answer per connection, so the client must not keep it for the next.
    let go_on = Arc::new(tokio::sync::Notify::new());
    let next_half = go_on.clone();
    let url = raw_host(move |mut stream| {
        let next_half = next_half.clone();
        async move {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\nconnection: close\r\n\r\n0123456789",
                )
                .await;
            next_half.notified().await;
            let _ = stream.write_all(b"0123456789").await;
        }
    })
    .await;
    let clock = ManualClock::new();
    let middleware = CircuitBreakerMiddleware::per_host(family(
        Breaker::builder()
            .name("reqwest-slow-body")
            .slow(Duration::from_millis(50))
            .clock(clock.clone()),
    ));
    let client = client(middleware.clone());
    let breaker = middleware.breaker_for(&url.parse().unwrap()).unwrap();

    let answer = client.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    // The head came at once; the rest of the body takes a second.
    clock.advance(Duration::from_secs(1));
    go_on.notify_one();
    assert_eq!(answer.bytes().await.unwrap().len(), 20);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.slow), (1, 1), "slow to its end: {s:?}");

    // A body that comes at once is not slow.
    let answer = client.get(&url).send().await.unwrap();
    go_on.notify_one();
    assert_eq!(answer.bytes().await.unwrap().len(), 20);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.slow), (2, 1), "{s:?}");
}

/// Routes with bodies: `/fail`, an empty 503; `/empty`, an empty 200;
/// `/ok`, ten bytes.
fn with_bodies() -> Router {
    Router::new()
        .route("/fail", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/empty", get(|| async { StatusCode::OK }))
        .route("/ok", get(|| async { ([("x-stock", "12")], "0123456789") }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_read_to_its_end_is_a_success_and_keeps_its_trial_until_then() {
    let base = host(with_bodies()).await;
    let clock = ManualClock::new();
    let middleware = CircuitBreakerMiddleware::per_host(family(
        Breaker::builder()
            .name("reqwest-read-to-end")
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .clock(clock.clone()),
    ));
    let client = client(middleware.clone());
    let breaker = middleware.breaker_for(&base.parse().unwrap()).unwrap();

    let answer = client.get(format!("{base}/fail")).send().await.unwrap();
    assert_eq!(answer.status(), 503, "an empty body: decided with its head");
    assert_eq!(breaker.state(), State::Open);
    clock.advance(Duration::from_secs(30));

    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let s = breaker.snapshot();
    assert_eq!(
        (s.state, s.trials_in_flight, s.successes),
        (State::HalfOpen, 1, 0),
        "the trial waits for its body: {s:?}"
    );
    let refused = client.get(format!("{base}/ok")).send().await.unwrap_err();
    assert!(rejected(&refused).is_some(), "the one trial is taken");

    assert_eq!(answer.bytes().await.unwrap(), "0123456789");
    let s = breaker.snapshot();
    assert_eq!((s.state, s.successes), (State::Closed, 1), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_dropped_unread_is_a_success_timed_to_the_drop() {
    let base = host(with_bodies()).await;
    let clock = ManualClock::new();
    let middleware = CircuitBreakerMiddleware::per_host(family(
        Breaker::builder()
            .name("reqwest-dropped-unread")
            .slow(Duration::from_millis(50))
            .clock(clock.clone()),
    ));
    let client = client(middleware.clone());
    let breaker = middleware.breaker_for(&base.parse().unwrap()).unwrap();

    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    assert_eq!(breaker.snapshot().successes, 0, "not decided while kept");
    drop(answer);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.neutral, s.slow), (1, 0, 0), "{s:?}");

    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    clock.advance(Duration::from_secs(1));
    drop(answer);
    let s = breaker.snapshot();
    assert_eq!(
        (s.successes, s.neutral, s.slow),
        (2, 0, 1),
        "kept a second before the drop: {s:?}"
    );

    // An empty body ends with its head: decided then, kept or not.
    let answer = client.get(format!("{base}/empty")).send().await.unwrap();
    assert_eq!(breaker.snapshot().successes, 3, "decided with the head");
    clock.advance(Duration::from_secs(1));
    drop(answer);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.slow), (3, 1), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_is_not_evicted_while_its_body_streams() {
    let base = host(with_bodies()).await;
    let clock = ManualClock::new();
    let hosts = failfast::Family::builder(
        Breaker::builder()
            .name("reqwest-evict")
            .clock(clock.clone())
            .max_keys(1),
    )
    .build()
    .unwrap();
    let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
    let client = client(middleware.clone());

    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    let other = "http://10.0.0.1:80/".parse().unwrap();
    assert_eq!(
        middleware.breaker_for(&other).unwrap().name(),
        "reqwest-evict[*]",
        "the only place is held by the body still to come"
    );
    assert_eq!(answer.bytes().await.unwrap(), "0123456789");

    // A full family is looked through again a second after it was found
    // full: the host's breaker can go now.
    clock.advance(Duration::from_secs(1));
    let another = "http://10.0.0.2:80/".parse().unwrap();
    assert_eq!(
        middleware.breaker_for(&another).unwrap().name(),
        "reqwest-evict[10.0.0.2:80]"
    );
    assert_eq!(hosts.stats().evicted, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_keeps_its_place_under_the_concurrency_limit_until_its_body_ends() {
    let base = host(with_bodies()).await;
    let hosts = failfast::Family::builder(Breaker::builder().name("reqwest-places"))
        .max_concurrent(1)
        .build()
        .unwrap();
    let client = client(CircuitBreakerMiddleware::per_host(hosts));

    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    let error = client.get(format!("{base}/ok")).send().await.unwrap_err();
    let refused = rejected(&error).expect("over the limit");
    assert_eq!(refused.reason(), Reason::ConcurrencyLimit);
    assert_eq!(answer.bytes().await.unwrap(), "0123456789");
    let answer = client.get(format!("{base}/ok")).send().await.unwrap();
    assert_eq!(answer.status(), 200, "the place is free again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_response_keeps_its_url_headers_and_address() {
    let base = host(with_bodies()).await;
    let client = client(per_host("reqwest-same-response", 3));
    let url: reqwest::Url = format!("{base}/ok?sku=1").parse().unwrap();
    let answer = client.get(url.clone()).send().await.unwrap();
    assert_eq!(answer.url(), &url);
    assert_eq!(answer.headers()["x-stock"], "12");
    assert_eq!(answer.content_length(), Some(10));
    assert_eq!(answer.version(), reqwest::Version::HTTP_11);
    assert_eq!(
        answer.remote_addr().map(|a| a.to_string()),
        Some(base.trim_start_matches("http://").to_owned())
    );
    assert_eq!(answer.text().await.unwrap(), "0123456789");
}

/// A family built with `max_concurrent` and `max_wait`: a request that
/// finds its host's place taken waits for it (as a future) and is served;
/// one that waits longer than `max_wait` is refused at the limit, without
/// reaching the host. On one thread: a wait that blocked the thread would
/// hold up the request it waits for.
#[tokio::test(flavor = "current_thread")]
async fn a_request_waits_for_its_hosts_place_up_to_max_wait() {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let url = raw_host(move |mut stream| {
        let seen = seen.clone();
        async move {
            use tokio::io::AsyncWriteExt;
            seen.fetch_add(1, SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    })
    .await;
    let with_wait = |name: &'static str, wait: Duration| {
        let hosts = Family::builder(Breaker::builder().name(name).max_wait(wait))
            .max_concurrent(1)
            .build()
            .unwrap();
        client(CircuitBreakerMiddleware::per_host(hosts))
    };

    // Long enough: the second request is served after the first.
    let patient = with_wait("reqwest.wait.patient", Duration::from_secs(10));
    let (first, second) = tokio::join!(patient.get(&url).send(), patient.get(&url).send());
    assert_eq!(first.unwrap().status(), 200);
    assert_eq!(second.unwrap().status(), 200);
    assert_eq!(hits.load(SeqCst), 2);

    // Too short: the second is refused at the concurrency limit, unsent.
    let hasty = with_wait("reqwest.wait.hasty", Duration::from_millis(20));
    let (first, second) = tokio::join!(hasty.get(&url).send(), hasty.get(&url).send());
    let refused = [&first, &second]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
        .map(|e| rejected(e).expect("a refusal").reason())
        .collect::<Vec<_>>();
    assert_eq!(refused, [Reason::ConcurrencyLimit]);
    assert_eq!(
        hits.load(SeqCst),
        3,
        "the refused request never reached the host"
    );
}
