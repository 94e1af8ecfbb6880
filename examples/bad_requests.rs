//! Bad requests: a 400 is the caller's bug, not a sign that the service is sick,
//! so it must never move the breaker.
//!
//! Five malformed (lowercase) SKUs, then a good one, go through two clients of
//! the same healthy inventory service, both with `threshold = 5`:
//! - `check_stock` says which errors count: `counts = InventoryError::Dependency(_)`
//!   (5xx, timeouts, refused connections). The 400s are neutral: the breaker
//!   stays closed with 0 failures, and the good call succeeds.
//! - `check_stock_counting_everything` has no `counts`, so every `Err` counts:
//!   five 400s open its breaker and the good call is rejected. This is the
//!   mistake `counts` exists to avoid.
//!
//! ```text
//! cargo run --example bad_requests
//! ```
//!
//! `tests/calls/examples_bad_requests.rs` runs this scenario and checks its outcome.

pub mod common;

use std::time::Duration;

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use common::state_name;
use failfast::{State, circuit_breaker};

const CAREFUL: &str = "bad_requests::check_stock";
const EVERYTHING: &str = "bad_requests::check_stock_counting_everything";

/// Counts only the errors that say the service is sick.
#[circuit_breaker(
    name = "bad_requests::check_stock",
    threshold = 5,
    recovery = "30s",
    counts = InventoryError::Dependency(_)
)]
async fn check_stock(client: &InventoryClient, sku: &str) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// No `counts`: every `Err`, a 400 included, counts as a failure.
#[circuit_breaker(
    name = "bad_requests::check_stock_counting_everything",
    threshold = 5,
    recovery = "30s"
)]
async fn check_stock_counting_everything(
    client: &InventoryClient,
    sku: &str,
) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// One client's view of one call.
pub struct Seen {
    pub result: Result<Stock, InventoryError>,
    pub state: State,
    pub consecutive_failures: u32,
}

/// One call, made through both clients.
pub struct Call {
    pub sku: &'static str,
    pub careful: Seen,
    pub counting_everything: Seen,
}

pub const SKUS: [&str; 6] = ["sku-1", "sku-2", "widget", "abc-42", "lowercase", "SKU-1"];

/// Runs the scenario on a fresh, healthy inventory service.
pub async fn run() -> Result<Vec<Call>, Box<dyn std::error::Error>> {
    let service = InventoryService::start(Duration::from_millis(300)).await?;
    let client = InventoryClient::new(service.url());
    let mut calls = Vec::new();
    for sku in SKUS {
        let careful = check_stock(&client, sku).await;
        let careful = seen(CAREFUL, careful);
        let everything = check_stock_counting_everything(&client, sku).await;
        let counting_everything = seen(EVERYTHING, everything);
        calls.push(Call {
            sku,
            careful,
            counting_everything,
        });
    }
    Ok(calls)
}

fn seen(name: &str, result: Result<Stock, InventoryError>) -> Seen {
    let breaker = failfast::registry::get(name).expect("the breaker registers on its first call");
    let snapshot = breaker.snapshot();
    Seen {
        result,
        state: snapshot.state,
        consecutive_failures: snapshot.consecutive_failures,
    }
}

fn describe(seen: &Seen) -> String {
    let outcome = match &seen.result {
        Ok(stock) => stock.to_string(),
        Err(e) => e.brief(),
    };
    format!(
        "{outcome:<18} {:<7} {}",
        state_name(seen.state),
        seen.consecutive_failures
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("Five malformed SKUs, then a good one, through two breakers with threshold = 5.\n");
    println!(
        "                  │ counts = InventoryError::Dependency(_) │ no `counts`: every Err counts"
    );
    println!(
        " call  sku        │ outcome            breaker failures    │ outcome            breaker failures"
    );
    println!(
        "──────────────────┼────────────────────────────────────────┼───────────────────────────────────"
    );
    let calls = run().await?;
    for (i, call) in calls.iter().enumerate() {
        println!(
            " {:>4}  {:<10} │ {:<38} │ {}",
            i + 1,
            call.sku,
            describe(&call.careful),
            describe(&call.counting_everything)
        );
    }
    let last = calls.last().expect("six calls");
    println!(
        "(failures: consecutive counted failures after the call, from the breaker's snapshot)\n"
    );
    println!(
        "With `counts`, the 400s are neutral: the breaker stays {} with {} failures, and the good call gets: {}.",
        state_name(last.careful.state),
        last.careful.consecutive_failures,
        describe_result(&last.careful.result),
    );
    println!(
        "Without `counts`, the caller's own mistakes open the breaker, and the good call is refused:\n  {}",
        describe_result(&last.counting_everything.result),
    );
    Ok(())
}

fn describe_result(result: &Result<Stock, InventoryError>) -> String {
    match result {
        Ok(stock) => stock.to_string(),
        Err(e) => e.to_string(),
    }
}
