//! Recovery: the breaker opens, the service is healed while it is open, and the
//! first call after `recovery` is a trial that closes the breaker again, with no
//! restart and no manual reset.
//!
//! The inventory service is sick (it hangs, then answers 503). Five calls fail and
//! open the breaker (`threshold = 5`); the next call is rejected without reaching
//! the service. The service is healed through its admin route, but the breaker
//! does not know yet: a call right away is still rejected. Once `recovery = "2s"`
//! has passed, `state()` reads half-open (reading it consumes nothing), the next
//! call is the trial, it succeeds, and the breaker is closed. Every call prints the
//! breaker's state before and after it, and whether it reached the service.
//!
//! ```text
//! cargo run --example recovery
//! cargo run --example recovery -- --hang-ms 500
//! ```
//!
//! `tests/calls/examples_recovery.rs` runs this scenario and checks its outcome.

pub mod common;

use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use common::{flag, human, state_name};
use failfast::{State, circuit_breaker};

pub const BREAKER: &str = "recovery::check_stock";

/// No fallback: a rejection comes back as `InventoryError::Rejected`.
#[circuit_breaker(
    name = "recovery::check_stock",
    threshold = 5,
    recovery = "2s",
    counts = InventoryError::Dependency(_)
)]
async fn check_stock(client: &InventoryClient, sku: &str) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// One call, as the caller saw it.
pub struct Step {
    pub what: &'static str,
    pub before: State,
    pub after: State,
    pub result: Result<Stock, InventoryError>,
    pub reached_service: bool,
    pub took: Duration,
}

/// Runs the scenario on a fresh inventory service whose sick requests hang for
/// `hang`, handing each line of output to `say` as it happens.
pub async fn run(
    hang: Duration,
    mut say: impl FnMut(String),
) -> Result<Vec<Step>, Box<dyn std::error::Error>> {
    let service = InventoryService::start(hang).await?;
    let client = InventoryClient::new(service.url());
    client.set_healthy(false).await?;
    say(format!(
        "The inventory service is sick: each request hangs {}, then gets a 503.\n",
        human(hang)
    ));
    say(format!(
        " call  {:<30} {:<10} {:<10} {:<24} {:>8}  reached the service",
        "", "before", "after", "outcome", "time"
    ));

    let mut steps = Vec::new();
    let mut call = async |what: &'static str, say: &mut dyn FnMut(String)| {
        let step = call_once(&client, &service, what).await;
        say(describe(steps.len() + 1, &step));
        steps.push(step);
    };

    for _ in 0..5 {
        call("service sick", &mut say).await;
    }
    call("service sick, breaker open", &mut say).await;

    client.set_healthy(true).await?;
    say("       POST /admin/healthy/true: the service is healthy again".to_owned());
    call("healed, within recovery", &mut say).await;

    let snapshot = failfast::registry::get(BREAKER)
        .expect("registered on first call")
        .snapshot();
    let wait = snapshot.retry_after.unwrap_or_default();
    say(format!(
        "       waiting {} for recovery = \"2s\" to pass (snapshot().retry_after)",
        human(wait)
    ));
    tokio::time::sleep(wait).await;
    while state() != State::HalfOpen {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    say(format!(
        "       state() now reads {}: the next call is the trial",
        state_name(state())
    ));
    call("trial call", &mut say).await;
    call("after the trial", &mut say).await;
    Ok(steps)
}

async fn call_once(
    client: &InventoryClient,
    service: &InventoryService,
    what: &'static str,
) -> Step {
    let before = state();
    let hits = service.hits();
    let start = Instant::now();
    let result = check_stock(client, "SKU-1").await;
    let took = start.elapsed();
    Step {
        what,
        before,
        after: state(),
        result,
        reached_service: service.hits() > hits,
        took,
    }
}

fn describe(n: usize, step: &Step) -> String {
    format!(
        " {n:>4}  {:<30} {:<10} {:<10} {:<24} {:>8}  {}",
        step.what,
        state_name(step.before),
        state_name(step.after),
        match &step.result {
            Ok(stock) => stock.to_string(),
            Err(e) => e.brief(),
        },
        human(step.took),
        if step.reached_service { "yes" } else { "no" },
    )
}

fn state() -> State {
    failfast::registry::get(BREAKER).map_or(State::Closed, |b| b.state())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hang = Duration::from_millis(flag("hang-ms", 100));
    let steps = run(hang, |line| println!("{line}")).await?;
    let trial = &steps[steps.len() - 2];
    println!(
        "\nThe trial reached the healed service and closed the breaker ({} -> {}); no restart, no manual reset.",
        state_name(trial.before),
        state_name(trial.after)
    );
    Ok(())
}
