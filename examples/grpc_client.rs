//! A gRPC client protected by `failfast::tower::CircuitBreakerLayer` on its
//! tonic `Channel`: `ServiceBuilder::new().layer(breaker).service(channel)`.
//!
//! The client calls a small ledger service on loopback (tonic's server and
//! client with a hand-written UTF-8 codec: no `protoc`, no generated code;
//! see `examples/common/grpc.rs`). The layer uses the gRPC classifier:
//! `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL` and
//! `UNKNOWN` are failures, every other code is neutral. So:
//!
//! 1. malformed account names are `INVALID_ARGUMENT`: the caller's bug, the
//!    breaker stays closed however many there are;
//! 2. the ledger is made sick: three `UNAVAILABLE` answers open the breaker,
//!    and the calls after that are refused in the client, in microseconds,
//!    as `UNAVAILABLE` with `grpc-retry-pushback-ms` (the time until the
//!    next trial), without reaching the ledger;
//! 3. the ledger is healed; after `recovery` the next call is the trial, it
//!    succeeds, and the breaker closes.
//!
//! ```text
//! cargo run --example grpc_client --features tower,tonic
//! ```

pub mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::grpc::{LedgerClient, LedgerService};
use common::{human, state_name};
use failfast::Breaker;
use failfast::classify::GrpcClassifier;
use failfast::tower::{CircuitBreakerLayer, RefuseWithStatus};
use tower::ServiceBuilder;

const RECOVERY: Duration = Duration::from_secs(1);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ledger = LedgerService::start().await?;
    let channel = tonic::transport::Endpoint::from_shared(ledger.url().to_owned())?
        .connect()
        .await?;
    let breaker = Arc::new(
        Breaker::builder()
            .name("payments::ledger")
            .threshold(3)
            .recovery(RECOVERY)
            .build()?,
    );
    let layer = CircuitBreakerLayer::new(breaker.clone())
        .classifier(GrpcClassifier)
        .on_rejected(RefuseWithStatus);
    let channel = ServiceBuilder::new().layer(layer).service(channel);
    let mut client = LedgerClient::new(channel);

    println!("ledger at {}", ledger.url());
    println!(
        "{:>3}  {:<8} {:<16} {:<42} {:>10} {:>9} {:>7}",
        "#", "ledger", "account", "answer", "took", "breaker", "reached"
    );
    let mut n = 0;
    let mut call = async |health: &str, account: &str| {
        let began = Instant::now();
        let answer = client.get(account).await;
        let took = began.elapsed();
        let answer = match answer {
            Ok(balance) => format!("OK {balance}"),
            Err(status) => {
                let pushback = status
                    .metadata()
                    .get("grpc-retry-pushback-ms")
                    .and_then(|v| v.to_str().ok())
                    .map(|ms| format!(" (pushback {ms} ms)"))
                    .unwrap_or_default();
                format!("{:?}{pushback}", status.code())
            }
        };
        n += 1;
        println!(
            "{n:>3}  {health:<8} {account:<16} {answer:<42} {:>10} {:>9} {:>7}",
            human(took),
            state_name(breaker.state()),
            ledger.hits(),
        );
    };

    for _ in 0..2 {
        call("healthy", "acct-1").await;
    }
    for _ in 0..4 {
        call("healthy", "Acct 1; DROP").await;
    }
    ledger.set_sick(true);
    for _ in 0..6 {
        call("sick", "acct-1").await;
    }
    ledger.set_sick(false);
    call("healed", "acct-1").await;
    tokio::time::sleep(RECOVERY).await;
    println!(
        "... {} later the breaker reads {}",
        human(RECOVERY),
        state_name(breaker.state())
    );
    for _ in 0..2 {
        call("healed", "acct-1").await;
    }
    Ok(())
}
