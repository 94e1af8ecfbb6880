//! Failing over between replicas: a client of three inventory replicas on
//! loopback picks, before each call, the next replica in turn among those
//! its per-host breakers would let a call through to (`FamilyRef::failover`,
//! one call). One replica is made sick (it hangs 200 ms, then answers 503).
//!
//! Without failover (plain round robin), every third call goes to the sick
//! replica: three of them wait 200 ms and fail before its breaker opens,
//! and each later one is answered by the fallback — a page with the stock
//! unknown. With failover, the same three failures open the breaker, and
//! from then on the sick replica is skipped: every call is served by a
//! healthy one.
//!
//! ```text
//! cargo run --example failover
//! ```

pub mod common;

use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::human;
use common::service::InventoryService;
use failfast::{circuit_breaker, registry};

/// One replica of the inventory service, as the client sees it.
struct Upstream {
    host: String,
    http: InventoryClient,
}

/// The replica's key in the family: what `failover` reads.
impl AsRef<str> for Upstream {
    fn as_ref(&self) -> &str {
        &self.host
    }
}

impl Upstream {
    #[circuit_breaker(
        name = "failover::stock",
        key = self.host.as_str(),
        threshold = 3,
        recovery = "30s",
        counts = InventoryError::Dependency(_),
        fallback = Self::unknown
    )]
    async fn stock(&self, sku: &str) -> Result<Stock, InventoryError> {
        self.http.stock(sku).await
    }

    async fn unknown(
        &self,
        sku: &str,
        _error: failfast::Error<InventoryError>,
    ) -> Result<Stock, InventoryError> {
        Ok(Stock::unknown(sku, format!("{} refused", self.host)))
    }
}

/// What one way of picking replicas cost.
#[derive(Debug)]
pub struct Outcome {
    /// Calls answered by a replica.
    pub served: usize,
    /// Calls answered by the fallback (stock unknown).
    pub unknown: usize,
    /// Calls the sick replica received.
    pub sick_hits: u64,
    /// Time spent waiting on the sick replica.
    pub wasted: Duration,
}

async fn scenario(failover: bool, calls: usize) -> Result<Outcome, Box<dyn std::error::Error>> {
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
    upstreams[1].http.set_healthy(false).await?;
    let family = registry::family("failover::stock").expect("declared");
    let (mut served, mut unknown, mut wasted) = (0, 0, Duration::ZERO);
    for call in 0..calls {
        let upstream = if failover {
            // The next replica in turn among those that would take a call.
            family
                .failover(&upstreams)
                .next()
                .expect("no budget: one is up")
        } else {
            &upstreams[call % upstreams.len()]
        };
        let started = Instant::now();
        let stock = upstream.stock("SKU-1").await;
        if upstream.host == upstreams[1].host {
            wasted += started.elapsed();
        }
        match stock {
            Ok(stock) if stock.quantity.is_some() => served += 1,
            _ => unknown += 1,
        }
    }
    Ok(Outcome {
        served,
        unknown,
        sick_hits: replicas[1].hits(),
        wasted,
    })
}

/// Runs the calls with plain round robin, then with failover.
pub async fn run(calls: usize) -> Result<(Outcome, Outcome), Box<dyn std::error::Error>> {
    let plain = scenario(false, calls).await?;
    let failover = scenario(true, calls).await?;
    println!("{calls} calls over three replicas, one sick (hangs 200 ms, then 503)\n");
    println!(
        "{:<12} {:>7} {:>14} {:>16} {:>22}",
        "", "served", "stock unknown", "sick replica hit", "time lost on it"
    );
    for (name, o) in [("round robin", &plain), ("failover", &failover)] {
        println!(
            "{name:<12} {:>7} {:>14} {:>16} {:>22}",
            o.served,
            o.unknown,
            o.sick_hits,
            human(o.wasted)
        );
    }
    Ok((plain, failover))
}

#[tokio::main]
#[allow(dead_code)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(30).await.map(drop)
}
