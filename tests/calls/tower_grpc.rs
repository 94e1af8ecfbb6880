//! A tonic client through the layer on its `Channel`, against a small gRPC
//! ledger service on loopback (`examples/common/grpc.rs`: a hand-written
//! UTF-8 codec, so no `protoc` and no generated code are needed).

use crate::common::grpc;

use std::sync::Arc;
use std::time::Duration;

use failfast::classify::GrpcClassifier;
use failfast::tower::{CircuitBreakerLayer, RefuseWithStatus};
use failfast::{Breaker, State};
use grpc::{BALANCE, LedgerClient, LedgerService};
use tonic::Code;
use tower::ServiceBuilder;

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
