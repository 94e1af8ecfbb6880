//! One breaker per host: a client spreads its calls over three replicas of
//! the inventory service on loopback, and one replica is made sick (it hangs
//! 200 ms, then answers 503).
//!
//! The client's method is annotated once, keyed by the replica it talks to:
//! `#[circuit_breaker(key = self.host.as_str(), …)]`. After three failures
//! the sick replica's breaker (`per_host::stock[127.0.0.1:PORT]`) opens and
//! its calls are answered at once by the fallback, while the two healthy
//! replicas' breakers stay closed and keep serving. With one breaker for the
//! whole method (no `key`), the sick replica would have opened it for all
//! three.
//!
//! ```text
//! cargo run --example per_host
//! ```

pub mod common;

use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use common::{human, state_name};
use failfast::{State, circuit_breaker, registry};

/// One replica of the inventory service, as the client sees it.
struct Upstream {
    host: String,
    http: InventoryClient,
}

impl Upstream {
    #[circuit_breaker(
        name = "per_host::stock",
        key = self.host.as_str(),
        max_keys = 64,
        threshold = 3,
        recovery = "30s",
        counts = InventoryError::Dependency(_),
        fallback = Self::unknown
    )]
    async fn stock(&self, sku: &str) -> Result<Stock, InventoryError> {
        self.http.stock(sku).await
    }

    /// The page still renders: stock unknown, and why.
    async fn unknown(
        &self,
        sku: &str,
        error: failfast::Error<InventoryError>,
    ) -> Result<Stock, InventoryError> {
        let why = match error {
            failfast::Error::Rejected(r) => format!("breaker {} is {}", r.name(), r.state()),
            other => other.to_string(),
        };
        Ok(Stock::unknown(sku, why))
    }
}

/// What the scenario left behind, per replica: its breaker and its load.
pub struct Replica {
    pub host: String,
    pub sick: bool,
    pub state: State,
    pub hits: u64,
}

/// Starts three replicas, makes the second sick, makes 18 calls spread over
/// them (printing each), and returns each replica's breaker state and hits.
pub async fn run() -> Result<Vec<Replica>, Box<dyn std::error::Error>> {
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(InventoryService::start(Duration::from_millis(200)).await?);
    }
    let upstreams: Vec<Upstream> = replicas
        .iter()
        .map(|r| Upstream {
            host: r.url().trim_start_matches("http://").to_owned(),
            http: InventoryClient::new(r.url()),
        })
        .collect();
    let sick = &upstreams[1];
    sick.http.set_healthy(false).await?;
    println!(
        "three replicas; {} is made sick (hangs 200 ms, then 503)\n",
        sick.host
    );

    println!("{:>4}  {:<17} {:>9}  answer", "call", "replica", "took");
    for call in 0..18 {
        let upstream = &upstreams[call % 3];
        let started = Instant::now();
        let answer = upstream.stock("SKU-1").await;
        let took = started.elapsed();
        let answer = match answer {
            Ok(stock) => stock.to_string(),
            Err(error) => error.brief(),
        };
        println!(
            "{:>4}  {:<17} {:>9}  {answer}",
            call + 1,
            upstream.host,
            human(took)
        );
    }

    let family = registry::family("per_host::stock").expect("registered on the first call");
    let mut members = family.members();
    members.sort_by(|a, b| a.name().cmp(b.name()));
    println!(
        "\nbreakers of family `{}` ({} of at most {}):",
        family.name(),
        members.len(),
        family.stats().max_keys
    );
    for member in &members {
        let snapshot = member.snapshot();
        println!(
            "  {:<36} {:<7} {} successes, {} failures, {} rejected",
            member.name(),
            state_name(member.state()),
            snapshot.successes,
            snapshot.failures,
            snapshot.rejected,
        );
    }
    println!();
    let mut seen = Vec::new();
    for (i, (upstream, replica)) in upstreams.iter().zip(&replicas).enumerate() {
        println!("  {} was called {} times", upstream.host, replica.hits());
        let name = format!("per_host::stock[{}]", upstream.host);
        seen.push(Replica {
            host: upstream.host.clone(),
            sick: i == 1,
            state: registry::get(&name).map_or(State::Closed, |b| b.state()),
            hits: replica.hits(),
        });
    }
    Ok(seen)
}

#[tokio::main]
#[allow(dead_code)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run().await.map(drop)
}
