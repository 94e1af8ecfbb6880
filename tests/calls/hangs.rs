//! Hangs through `#[circuit_breaker]`: `timeout` trips the breaker on a
//! dependency that does not answer, and a call abandoned by its caller (a
//! call-site timeout, a client that disconnects) still teaches the breaker
//! that the dependency hangs.
//!
//! The hanging dependency is the examples' inventory service, made silent: it
//! takes the request and never answers.

use crate::common;
use crate::support;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use failfast::{Error, Reason, State, circuit_breaker, registry};

type Fault = support::Fault<InventoryError>;

fn snapshot(name: &str) -> failfast::Snapshot {
    registry::get(name)
        .expect("registered on first call")
        .snapshot()
}

/// A silent inventory service and a client whose own timeout is far beyond
/// the tests' limits (so only the breaker's `timeout` cuts calls short).
async fn silent_service() -> (InventoryService, InventoryClient) {
    let service = InventoryService::start(Duration::from_secs(60))
        .await
        .expect("the service starts");
    let client = InventoryClient::new(service.url()).with_timeout(Duration::from_secs(60));
    assert!(client.stock("SKU-0").await.is_ok(), "healthy at first");
    service.set_silent(true);
    (service, client)
}

/// Polls `future` once, outside any waker: starts a call without finishing it.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Waits (up to 10 s) for `done`, checking every few milliseconds: for what
/// another task or the server does in its own time.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > give_up {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

#[tokio::test]
async fn a_hanging_upstream_trips_the_breaker_after_threshold_timeouts() {
    // `counts` names the upstream's own errors only: a timeout counts anyway.
    #[circuit_breaker(
        name = "hangs::upstream",
        threshold = 3,
        recovery = "1h",
        timeout = "50ms",
        counts = Fault::Upstream(InventoryError::Dependency(_))
    )]
    async fn stock(client: &InventoryClient, sku: &str) -> Result<Stock, Fault> {
        client.stock(sku).await.map_err(Fault::Upstream)
    }

    let (service, client) = silent_service().await;
    let hits_before = service.hits();
    for i in 1..=3 {
        assert_eq!(snapshot_or_closed("hangs::upstream"), State::Closed);
        match stock(&client, "SKU-1").await {
            Err(Fault::TimedOut(t)) => {
                assert_eq!(t.limit(), Duration::from_millis(50));
                assert_eq!(t.name(), "hangs::upstream");
            }
            other => panic!("call {i}: expected a timeout, got {other:?}"),
        }
    }
    let s = snapshot("hangs::upstream");
    assert_eq!(s.state, State::Open, "{s:?}");
    assert_eq!(service.hits() - hits_before, 3, "three calls reached it");
    for _ in 0..10 {
        match stock(&client, "SKU-1").await {
            Err(Fault::Rejected(r)) => assert_eq!(r.reason(), Reason::Open),
            other => panic!("expected a rejection, got {other:?}"),
        }
    }
    assert_eq!(
        service.hits() - hits_before,
        3,
        "an open breaker sends none"
    );
}

fn snapshot_or_closed(name: &str) -> State {
    registry::get(name).map_or(State::Closed, |b| b.state())
}

#[tokio::test]
async fn a_timeout_reaches_the_fallback_as_error_timeout() {
    static FALLBACKS: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(name = "hangs::fallback", timeout = "20ms", fallback = cached)]
    async fn stock(sku: &str) -> Result<u32, Fault> {
        let _ = sku;
        std::future::pending().await
    }

    async fn cached(sku: &str, error: Error<Fault>) -> Result<u32, Fault> {
        assert_eq!(sku, "SKU-1");
        let Error::Timeout(timed_out) = error else {
            panic!("a timeout, not {error:?}")
        };
        assert_eq!(timed_out.limit(), Duration::from_millis(20));
        FALLBACKS.fetch_add(1, SeqCst);
        Ok(0)
    }

    assert_eq!(stock("SKU-1").await.unwrap(), 0);
    assert_eq!(FALLBACKS.load(SeqCst), 1);
    assert_eq!(snapshot("hangs::fallback").consecutive_failures, 1);
}

#[tokio::test]
async fn a_timed_out_call_is_a_failure_and_slow_whatever_counts_says() {
    #[circuit_breaker(
        name = "hangs::slow_and_failed",
        failure_rate = 1.0,
        window = 10,
        min_calls = 10,
        slow = "10ms",
        timeout = "30ms",
        counts = Fault::Upstream(_)
    )]
    async fn hang() -> Result<(), Fault> {
        std::future::pending().await
    }

    assert!(matches!(hang().await, Err(Fault::TimedOut(_))));
    let s = snapshot("hangs::slow_and_failed");
    assert_eq!(
        (s.window_calls, s.window_failures, s.window_slow),
        (1, 1, 1),
        "{s:?}"
    );
}

#[tokio::test]
async fn a_half_open_trial_that_times_out_reopens_and_its_slot_comes_back() {
    static HANG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
    static TRIALS: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(
        name = "hangs::trial",
        threshold = 1,
        recovery = "30ms",
        timeout = "20ms"
    )]
    async fn call() -> Result<(), Fault> {
        TRIALS.fetch_add(1, SeqCst);
        if HANG.load(SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    assert!(matches!(call().await, Err(Fault::TimedOut(_))));
    assert_eq!(snapshot("hangs::trial").state, State::Open);
    for round in 1..=3 {
        // Wait out `recovery`; the next call is the trial, and it times out.
        let before = TRIALS.load(SeqCst);
        assert!(eventually(|| snapshot("hangs::trial").state == State::HalfOpen).await);
        assert!(
            matches!(call().await, Err(Fault::TimedOut(_))),
            "round {round}"
        );
        assert_eq!(
            TRIALS.load(SeqCst),
            before + 1,
            "round {round}: one trial ran"
        );
        let s = snapshot("hangs::trial");
        assert_eq!((s.state, s.trials_in_flight), (State::Open, 0), "{s:?}");
    }
    // The trial slot was never lost: a healthy trial closes the breaker.
    HANG.store(false, SeqCst);
    assert!(eventually(|| snapshot("hangs::trial").state == State::HalfOpen).await);
    assert!(call().await.is_ok());
    assert_eq!(snapshot("hangs::trial").state, State::Closed);
}

#[tokio::test]
async fn a_call_site_timeout_with_slow_trips_the_breaker_by_slow_rate() {
    // No `timeout` key: the caller gives up with `tokio::time::timeout`.
    #[circuit_breaker(
        name = "hangs::call_site",
        slow = "20ms",
        slow_rate = 0.5,
        window = 4,
        recovery = "1h"
    )]
    async fn stock(client: &InventoryClient, sku: &str) -> Result<Stock, Fault> {
        client.stock(sku).await.map_err(Fault::Upstream)
    }

    let (service, client) = silent_service().await;
    let hits_before = service.hits();
    for i in 1..=4 {
        assert_eq!(
            snapshot_or_closed("hangs::call_site"),
            State::Closed,
            "call {i}"
        );
        let call = tokio::time::timeout(Duration::from_millis(100), stock(&client, "SKU-1"));
        assert!(call.await.is_err(), "call {i}: the caller gave up");
    }
    let s = snapshot("hangs::call_site");
    assert_eq!(s.state, State::Open, "four slow calls of four: {s:?}");
    assert_eq!(service.hits() - hits_before, 4);
    assert!(matches!(
        stock(&client, "SKU-1").await,
        Err(Fault::Rejected(_))
    ));
    assert_eq!(service.hits() - hits_before, 4, "no call once open");
}

#[tokio::test]
async fn a_call_dropped_before_slow_stays_neutral() {
    #[circuit_breaker(
        name = "hangs::dropped_early",
        slow = "10s",
        window = 4,
        recovery = "1h"
    )]
    async fn hang() -> Result<(), Fault> {
        std::future::pending().await
    }

    for _ in 0..8 {
        let call = tokio::time::timeout(Duration::from_millis(5), hang());
        assert!(call.await.is_err());
    }
    let s = snapshot("hangs::dropped_early");
    assert_eq!(s.state, State::Closed);
    assert_eq!(
        (s.window_calls, s.window_slow, s.consecutive_failures),
        (0, 0, 0),
        "{s:?}"
    );
}

/// With `timeout`, a call dropped from outside after its limit passed (before
/// it was polled again to notice) is a failure; dropped sooner, neutral.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_after_its_timeout_is_a_failure() {
    #[circuit_breaker(
        name = "hangs::dropped_late",
        threshold = 1,
        recovery = "1h",
        timeout = "1s"
    )]
    async fn hang() -> Result<(), Fault> {
        std::future::pending().await
    }

    let mut early = Box::pin(hang());
    assert!(poll_once(&mut early).is_pending());
    tokio::time::advance(Duration::from_millis(500)).await;
    drop(early);
    assert_eq!(snapshot("hangs::dropped_late").state, State::Closed);

    let mut late = Box::pin(hang());
    assert!(poll_once(&mut late).is_pending());
    tokio::time::advance(Duration::from_millis(1500)).await;
    drop(late);
    assert_eq!(snapshot("hangs::dropped_late").state, State::Open);
}

/// An axum handler whose client disconnects is dropped by the server; the
/// guarded call inside it has run longer than `slow`, so it counts as slow.
#[tokio::test]
async fn a_disconnecting_client_drops_the_handler_and_the_call_counts_as_slow() {
    use axum::routing::get;

    static STARTED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(
        name = "hangs::handler",
        slow = "20ms",
        slow_rate = 1.0,
        window = 2,
        recovery = "1h"
    )]
    async fn lookup(client: &InventoryClient) -> Result<Stock, Fault> {
        STARTED.fetch_add(1, SeqCst);
        client.stock("SKU-1").await.map_err(Fault::Upstream)
    }

    let (_service, upstream) = silent_service().await;
    let app = axum::Router::new().route(
        "/inventory/{sku}",
        get(move || {
            let upstream = upstream.clone();
            async move {
                match lookup(&upstream).await {
                    Ok(stock) => stock.to_string(),
                    Err(e) => format!("{e:?}"),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    for visit in 1..=2 {
        // A browser that gives up after 200 ms and closes its connection.
        let browser = InventoryClient::new(url.clone()).with_timeout(Duration::from_millis(200));
        let started = STARTED.load(SeqCst);
        let page = browser.stock("SKU-1").await;
        assert!(page.is_err(), "visit {visit}: the browser gave up");
        assert_eq!(STARTED.load(SeqCst), started + 1, "the handler ran");
        drop(browser);
        let counted = eventually(|| snapshot("hangs::handler").window_slow == visit).await;
        assert!(counted, "visit {visit}: {:?}", snapshot("hangs::handler"));
    }
    assert_eq!(snapshot("hangs::handler").state, State::Open);
}
