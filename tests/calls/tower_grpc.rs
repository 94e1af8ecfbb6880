//! A tonic client through the layer on its `Channel`, against a small gRPC
//! ledger service on loopback (`examples/common/grpc.rs`: a hand-written
//! UTF-8 codec, so no `protoc` and no generated code are needed).

use crate::common::grpc;

use std::sync::Arc;
use std::time::Duration;

use failfast::classify::GrpcClassifier;
use failfast::tower::{CircuitBreaker, CircuitBreakerLayer, RefuseWithStatus};
use failfast::{Breaker, Mode, State, circuit_breaker};
use grpc::{BALANCE, LedgerClient, LedgerService};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tower::{Layer, ServiceBuilder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tonic_client_trips_on_unavailable_not_on_invalid_argument() {
    let ledger = LedgerService::start().await.unwrap();
    let channel = tonic::transport::Endpoint::from_shared(ledger.url().to_owned())
        .unwrap()
        .connect()
        .await
        .expect("the ledger accepts connections");
    let breaker = Arc::new(
        Breaker::builder()
            .name("tower-grpc-ledger")
            .threshold(2)
            .recovery(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    let channel = ServiceBuilder::new()
        .layer(
            CircuitBreakerLayer::new(breaker.clone())
                .classifier(GrpcClassifier)
                .on_rejected(RefuseWithStatus),
        )
        .service(channel);
    let mut client = LedgerClient::new(channel);

    assert_eq!(client.get("account-1").await.unwrap(), BALANCE);
    for _ in 0..5 {
        let status = client.get("Not An Account").await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
    }
    assert_eq!(
        breaker.state(),
        State::Closed,
        "INVALID_ARGUMENT is neutral"
    );
    assert_eq!(breaker.snapshot().consecutive_failures, 0);

    ledger.set_sick(true);
    for _ in 0..2 {
        let status = client.get("account-1").await.unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
    }
    assert_eq!(breaker.state(), State::Open, "two UNAVAILABLE trip it");
    assert_eq!(ledger.hits(), 8);

    let refused = client.get("account-1").await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert!(
        refused.message().contains("tower-grpc-ledger"),
        "{refused:?}"
    );
    let pushback = refused
        .metadata()
        .get("grpc-retry-pushback-ms")
        .expect("pushback");
    let pushback: u64 = pushback.to_str().unwrap().parse().unwrap();
    assert!(pushback > 0 && pushback <= 30_000, "{pushback}");
    assert_eq!(ledger.hits(), 8, "the refused call never left the client");
}

async fn connect(ledger: &LedgerService) -> Channel {
    tonic::transport::Endpoint::from_shared(ledger.url().to_owned())
        .unwrap()
        .connect()
        .await
        .expect("the ledger accepts connections")
}

fn grpc_breaker(name: &'static str, threshold: u32) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .recovery(Duration::from_secs(30))
            .build()
            .unwrap(),
    )
}

/// Two layers on a channel, each answering its refusals as `UNAVAILABLE`:
/// the inner one's refusal never left the client, so the outer one counts
/// the ledger's answer once and the refusals not at all. A real
/// `UNAVAILABLE` of the ledger still counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_an_inner_layer_as_a_status_is_neutral_in_the_outer_layer() {
    let ledger = LedgerService::start().await.unwrap();
    let outer = grpc_breaker("tower-grpc-stacked-outer", 3);
    let inner = grpc_breaker("tower-grpc-stacked-inner", 1);
    let layer = |breaker: &Arc<Breaker>| {
        CircuitBreakerLayer::new(breaker.clone())
            .classifier(GrpcClassifier)
            .on_rejected(RefuseWithStatus)
    };
    let channel = ServiceBuilder::new()
        .layer(layer(&outer))
        .layer(layer(&inner))
        .service(connect(&ledger).await);
    let mut client = LedgerClient::new(channel);

    ledger.set_sick(true);
    for _ in 0..3 {
        let status = client.get("account-1").await.unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
    }
    assert_eq!(ledger.hits(), 1, "the inner layer refused the other two");
    let (o, i) = (outer.snapshot(), inner.snapshot());
    assert_eq!((i.state, i.failures, i.rejected), (State::Open, 1, 2));
    assert_eq!(
        (o.state, o.failures, o.neutral, o.rejected),
        (State::Closed, 1, 2, 0),
        "{o:?}"
    );

    inner.set_mode(Mode::Normal);
    let status = client.get("account-1").await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(ledger.hits(), 2);
    assert_eq!(outer.snapshot().failures, 2, "the ledger's own UNAVAILABLE");
}

type RefusingWithStatus = CircuitBreaker<Channel, GrpcClassifier, RefuseWithStatus>;
type RefusingWithError = CircuitBreaker<Channel, GrpcClassifier>;

#[circuit_breaker(threshold = 3, recovery = "60s", name = "tower-grpc-attribute-status")]
async fn balance_over_status(
    client: &mut LedgerClient<RefusingWithStatus>,
) -> Result<String, Status> {
    client.get("account-1").await
}

#[circuit_breaker(threshold = 3, recovery = "60s", name = "tower-grpc-attribute-error")]
async fn balance_over_error(
    client: &mut LedgerClient<RefusingWithError>,
) -> Result<String, Status> {
    client.get("account-1").await
}

fn snapshot(name: &str) -> failfast::Snapshot {
    failfast::registry::get(name)
        .expect("registered")
        .snapshot()
}

/// A function guarded by the attribute, over a client whose channel has a
/// layer of its own: what the client makes of the layer's refusal (its
/// `UNAVAILABLE`, or the `UNKNOWN` tonic makes of a boxed `Rejected`) is
/// neutral for the function's breaker; the ledger's `UNAVAILABLE` counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_a_layer_under_a_tonic_client_is_neutral_in_the_attributes_breaker() {
    let ledger = LedgerService::start().await.unwrap();
    let with_status = grpc_breaker("tower-grpc-under-status", 1);
    let with_error = grpc_breaker("tower-grpc-under-error", 1);
    let mut over_status = LedgerClient::new(
        CircuitBreakerLayer::new(with_status.clone())
            .classifier(GrpcClassifier)
            .on_rejected(RefuseWithStatus)
            .layer(connect(&ledger).await),
    );
    let mut over_error = LedgerClient::new(
        CircuitBreakerLayer::new(with_error.clone())
            .classifier(GrpcClassifier)
            .layer(connect(&ledger).await),
    );

    ledger.set_sick(true);
    let status = balance_over_status(&mut over_status).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "the ledger's");
    let status = balance_over_error(&mut over_error).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "the ledger's");
    for _ in 0..2 {
        let status = balance_over_status(&mut over_status).await.unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert!(
            status.message().contains("tower-grpc-under-status"),
            "{status:?}"
        );
        let status = balance_over_error(&mut over_error).await.unwrap_err();
        assert_eq!(status.code(), Code::Unknown, "{status:?}");
        assert!(
            status.message().contains("tower-grpc-under-error"),
            "{status:?}"
        );
    }
    assert_eq!(ledger.hits(), 2, "one call through each layer");
    for name in ["tower-grpc-attribute-status", "tower-grpc-attribute-error"] {
        let s = snapshot(name);
        assert_eq!(
            (s.state, s.failures, s.neutral),
            (State::Closed, 1, 2),
            "{name}: {s:?}"
        );
    }
}
