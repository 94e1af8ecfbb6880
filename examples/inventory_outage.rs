//! Outage: the same 20 calls to a sick inventory service, made by a naive client
//! and by a `#[circuit_breaker]` client, side by side; twice.
//!
//! The program starts a flaky inventory HTTP service on 127.0.0.1 (an ephemeral
//! port), checks it answers, then makes it sick through its admin route
//! (`POST /admin/healthy/false`): every request now hangs, then gets a 503. Both
//! clients then make the same calls, at the same time, each one call after the
//! other. The naive client pays the full hang on every call. The protected client
//! counts the 503s, opens its breaker after the 5th, and answers the rest from
//! its fallback in microseconds without touching the service.
//!
//! Then the service goes silent (`POST /admin/silent/true`): it takes every
//! request and never answers, not even with a 503, which is how a hung
//! dependency looks. Both clients give up after the same 100 ms (with no
//! timeout a call would wait forever): the naive client by its own timeout,
//! the protected one by `timeout = "100ms"`, whose calls that get no answer in
//! time count as failures. The protected breaker opens after the 5th, and the
//! rest are answered from the fallback; the difference is the breaker's alone,
//! not a shorter timeout's.
//!
//! ```text
//! cargo run --example inventory_outage
//! cargo run --example inventory_outage -- --hang-ms 2000 --calls 30
//! ```
//!
//! `--hang-ms` (default 300) is how long the sick service holds a request (up to
//! the client's 10 s timeout); `--calls` (default 20) is how many calls each client makes in
//! each run.

pub mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use common::{flag, human, state_name};
use failfast::circuit_breaker;
use tokio::sync::mpsc;

/// How long the naive client waits for the silent service: the protected
/// client's `timeout`, so that both wait as long for each call.
const SILENT_TIMEOUT: Duration = Duration::from_millis(100);

/// The protected client: the same HTTP call as the naive client, behind a breaker.
/// 503s, refused connections and timeouts count (`InventoryError::Dependency`);
/// a 400 is the caller's mistake and does not. After 5 counted failures in a row
/// the breaker opens, and for 30 s every call is answered by `stock_unknown`
/// without reaching the service.
#[circuit_breaker(
    name = "inventory",
    threshold = 5,
    recovery = "30s",
    counts = InventoryError::Dependency(_),
    fallback = stock_unknown
)]
async fn check_inventory(client: &InventoryClient, sku: &str) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// The same client against a service that may never answer: a call with no
/// answer after 100 ms is dropped and counts as a failure (the client's own
/// 10 s timeout never comes into play).
#[circuit_breaker(
    name = "inventory-with-timeout",
    threshold = 5,
    recovery = "30s",
    timeout = "100ms",
    counts = InventoryError::Dependency(_),
    fallback = stock_unknown
)]
async fn check_inventory_with_timeout(
    client: &InventoryClient,
    sku: &str,
) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// What callers get when the breaker refuses the call, the call failed, or it
/// timed out: the product page still renders, with "stock unknown".
async fn stock_unknown(
    _client: &InventoryClient,
    sku: &str,
    error: failfast::Error<InventoryError>,
) -> Result<Stock, InventoryError> {
    let why = match error {
        // "503 Service Unavailable" -> "503"
        failfast::Error::Failed(e) => e.brief().split(' ').next().unwrap_or("").to_owned(),
        failfast::Error::Timeout(_) => "timeout".to_owned(),
        _ => "rejected".to_owned(),
    };
    Ok(Stock::unknown(sku, why))
}

/// One call as a row of the table.
struct Call {
    outcome: String,
    took: Duration,
    /// The breaker's state after the call (protected client only).
    state: Option<failfast::State>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hang = Duration::from_millis(flag("hang-ms", 300));
    let calls: usize = flag("calls", 20);
    if calls == 0 {
        eprintln!("error: --calls must be at least 1");
        std::process::exit(2);
    }

    let service = InventoryService::start(hang).await?;
    let client = InventoryClient::new(service.url());
    println!("Inventory service listening on {}", service.url());

    let start = Instant::now();
    let stock = client.stock("SKU-1").await?;
    println!(
        "GET /inventory/SKU-1          -> {stock} ({}): healthy",
        human(start.elapsed())
    );
    client.set_healthy(false).await?;
    println!(
        "POST /admin/healthy/false     -> sick: every request now hangs {}, then gets a 503\n",
        human(hang)
    );

    println!(
        "The same {calls} calls through both clients, at the same time; \
         each client makes its calls one after the other.\n"
    );
    let hits = service.hits();
    side_by_side(
        calls,
        (client.clone(), client.clone()),
        "inventory",
        |client, sku| async move { check_inventory(&client, &sku).await },
    )
    .await?;
    let guarded_hits = service.hits() - hits - calls as u64;
    println!(
        "The sick service got {calls} requests from the naive client and {guarded_hits} from the protected one."
    );

    client.set_healthy(true).await?;
    client.set_silent(true).await?;
    println!(
        "\nPOST /admin/silent/true       -> silent: every request now hangs and is never answered"
    );
    println!(
        "Both give up after 100 ms: the naive client by its own timeout, the protected one \
         by `timeout = \"100ms\"`.\n"
    );
    let hits = service.hits();
    side_by_side(
        calls,
        (client.clone().with_timeout(SILENT_TIMEOUT), client.clone()),
        "inventory-with-timeout",
        |client, sku| async move { check_inventory_with_timeout(&client, &sku).await },
    )
    .await?;
    let guarded_hits = service.hits() - hits - calls as u64;
    println!(
        "The silent service got {calls} requests from the naive client and {guarded_hits} from the protected one."
    );
    println!(
        "\nEach breaker stays open for 30 s, then lets one trial call through: `cargo run --example recovery`."
    );
    Ok(())
}

/// Makes `calls` calls through the naive client and through `guarded` (whose
/// breaker is `breaker`, given the second client) at the same time, and
/// prints them side by side.
async fn side_by_side<G, F>(
    calls: usize,
    (naive_client, client): (InventoryClient, InventoryClient),
    breaker: &'static str,
    guarded: G,
) -> Result<(), Box<dyn std::error::Error>>
where
    G: Fn(InventoryClient, String) -> F + Send + 'static,
    F: Future<Output = Result<Stock, InventoryError>> + Send,
{
    let (naive_tx, mut naive_rx) = mpsc::unbounded_channel();
    let (guarded_tx, mut guarded_rx) = mpsc::unbounded_channel();

    let naive = tokio::spawn(async move {
        let start = Instant::now();
        for i in 1..=calls {
            let t = Instant::now();
            let outcome = match naive_client.stock(&format!("SKU-{i}")).await {
                Ok(stock) => stock.to_string(),
                Err(e) => e.brief(),
            };
            let call = Call {
                outcome,
                took: t.elapsed(),
                state: None,
            };
            let _ = naive_tx.send(call);
        }
        start.elapsed()
    });

    let guarded = tokio::spawn(async move {
        let start = Instant::now();
        for i in 1..=calls {
            let t = Instant::now();
            let result = guarded(client.clone(), format!("SKU-{i}")).await;
            let took = t.elapsed();
            let outcome = match result {
                Ok(Stock {
                    fallback: Some(why),
                    ..
                }) => format!("{why} → fallback"),
                Ok(stock) => stock.to_string(),
                Err(e) => e.brief(),
            };
            let state = failfast::registry::get(breaker).map(|b| b.state());
            let _ = guarded_tx.send(Call {
                outcome,
                took,
                state,
            });
        }
        start.elapsed()
    });

    println!(" call │ naive client                     │ #[circuit_breaker] client");
    println!(
        "      │ outcome                     time │ outcome                  time  breaker after"
    );
    println!(
        "──────┼──────────────────────────────────┼──────────────────────────────────────────────"
    );
    let mut answered_at_once = 0;
    for i in 1..=calls {
        let (Some(n), Some(g)) = (naive_rx.recv().await, guarded_rx.recv().await) else {
            break;
        };
        if g.took < Duration::from_millis(1) {
            answered_at_once += 1;
        }
        println!(
            " {i:>4} │ {:<24} {:>7} │ {:<20} {:>8}  {}",
            n.outcome,
            human(n.took),
            g.outcome,
            human(g.took),
            g.state.map(state_name).unwrap_or("?"),
        );
    }
    let naive_total = naive.await?;
    let guarded_total = guarded.await?;
    println!(
        "──────┼──────────────────────────────────┼──────────────────────────────────────────────"
    );
    println!(
        "total │ {:<24} {:>7} │ {:<20} {:>8}",
        format!("{calls} errors"),
        human(naive_total),
        format!("{calls} answers"),
        human(guarded_total),
    );
    println!(
        "\nWall time for {calls} calls: naive {}, failfast {} ({:.1}× less).",
        human(naive_total),
        human(guarded_total),
        naive_total.as_secs_f64() / guarded_total.as_secs_f64(),
    );
    println!(
        "{answered_at_once} protected calls were answered by the fallback (stock_unknown) in under a millisecond."
    );
    Ok(())
}
