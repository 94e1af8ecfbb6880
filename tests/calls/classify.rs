//! The classifiers' rules as predicates for `counts = …`: a guarded
//! function counts as failures exactly the answers the tower layer's
//! classifiers count, over a real gRPC client and for HTTP statuses.
#![cfg(all(feature = "http", feature = "tonic", feature = "tokio"))]

use crate::common::grpc;

use failfast::{State, circuit_breaker, registry};
use grpc::{LedgerClient, LedgerService};
use http::StatusCode;
use tonic::transport::Channel;
use tonic::{Code, Status};

fn state(name: &str) -> State {
    registry::get(name).unwrap().state()
}

#[circuit_breaker(threshold = 3, counts = failfast::classify::grpc_failure, name = "classify::ledger")]
async fn balance(client: &mut LedgerClient<Channel>, account: &str) -> Result<String, Status> {
    client.get(account).await
}

/// Three `INVALID_ARGUMENT`s are the caller's bug and leave a threshold-3
/// breaker closed; three `UNAVAILABLE`s open it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_function_counts_unavailable_and_not_invalid_argument() {
    let ledger = LedgerService::start().await.unwrap();
    let channel = tonic::transport::Endpoint::from_shared(ledger.url().to_owned())
        .unwrap()
        .connect()
        .await
        .expect("the ledger accepts connections");
    let mut client = LedgerClient::new(channel);
    for _ in 0..3 {
        let refused = balance(&mut client, "NOT AN ACCOUNT").await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
    }
    assert_eq!(state("classify::ledger"), State::Closed);
    ledger.set_sick(true);
    for _ in 0..3 {
        let failed = balance(&mut client, "alice").await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable);
    }
    assert_eq!(state("classify::ledger"), State::Open);
    let hits = ledger.hits();
    let refused = balance(&mut client, "alice").await.unwrap_err();
    assert!(
        refused.message().contains("`classify::ledger` is open"),
        "{refused}"
    );
    assert_eq!(ledger.hits(), hits, "refused without a request");
}

#[circuit_breaker(threshold = 3, counts = failfast::classify::grpc_failure, name = "classify::timeouts")]
fn timing_out(status: fn() -> Status) -> Result<(), Status> {
    Err(status())
}

/// What a tonic client gives for its own time limit (`Endpoint::timeout`,
/// `Request::set_timeout`): `CANCELLED`, "Timeout expired", counted; a
/// cancellation of the caller's is not.
#[test]
fn a_grpc_function_counts_tonics_own_timeouts_and_not_other_cancellations() {
    fn cancelled() -> Status {
        Status::cancelled("the caller went away")
    }
    fn timed_out() -> Status {
        Status::from_error(Box::new(tonic::TimeoutExpired(())))
    }
    for _ in 0..3 {
        assert_eq!(timing_out(cancelled).unwrap_err().code(), Code::Cancelled);
    }
    assert_eq!(state("classify::timeouts"), State::Closed);
    for _ in 0..3 {
        assert_eq!(timing_out(timed_out).unwrap_err().code(), Code::Cancelled);
    }
    assert_eq!(state("classify::timeouts"), State::Open);
}

#[circuit_breaker(threshold = 3, counts = StatusCode::is_server_error, name = "classify::http")]
fn fetch(status: StatusCode) -> Result<(), StatusCode> {
    Err(status)
}

/// 4xx answers (429 included) leave a threshold-3 breaker closed; three 503s
/// open it, and the next call is refused with a 503 of the breaker's.
#[test]
fn an_http_function_counts_server_errors_and_not_client_errors() {
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::NOT_FOUND,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        assert_eq!(fetch(status), Err(status));
    }
    assert_eq!(state("classify::http"), State::Closed);
    for _ in 0..3 {
        assert_eq!(
            fetch(StatusCode::SERVICE_UNAVAILABLE),
            Err(StatusCode::SERVICE_UNAVAILABLE)
        );
    }
    assert_eq!(state("classify::http"), State::Open);
    assert_eq!(
        fetch(StatusCode::BAD_REQUEST),
        Err(StatusCode::SERVICE_UNAVAILABLE),
        "refused, not run"
    );
}
