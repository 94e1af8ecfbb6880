//! Twenty instances of a service calling one dependency that goes healthy →
//! sick → healthy, without sharing and then sharing through Redis with
//! quorums 1, 2 and 3: what each instance's breaker sends to the sick
//! dependency, and how fast the fleet comes back.
//!
//! Run it (about 50 s; it starts its own `redis-server` on a free loopback
//! port, so the binary must be on PATH: `apt-get install redis-server`):
//!
//! ```text
//! cargo run --release -p failfast-fleet --example fleet
//! ```
//!
//! All instances live in this one process, but share nothing but the
//! dependency and Redis: each has its own breaker (`threshold = 5`,
//! `recovery = 2s`), its own fleet task, store connection and identity, and
//! its own connection to the dependency, a loopback TCP server answering each
//! one-byte request with `+` (healthy) or `-` (sick). Each instance calls it at
//! 50 calls/s with Poisson arrivals. Per scenario: 1 s healthy, 7 s sick,
//! 3 s healthy again; a 21st instance (the late pod) starts 3 s into the
//! outage, once its fleet is connected.

#[path = "../tests/support/mod.rs"]
mod support;

use failfast_fleet::{Breakers, Fleet, FleetConfig};
use failfast_runtime::{Breaker, State};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const INSTANCES: usize = 20;
const RATE: f64 = 50.0;
const RECOVERY: Duration = Duration::from_secs(2);
const HEALTHY: Duration = Duration::from_secs(1);
const SICK: Duration = Duration::from_secs(7);
const LATE_AFTER: Duration = Duration::from_secs(3);
const TAIL: Duration = Duration::from_secs(3);

/// The dependency: answers `+` or `-` depending on its health.
struct Dependency {
    port: u16,
    sick: Arc<AtomicBool>,
}

impl Dependency {
    async fn start() -> Dependency {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sick = Arc::new(AtomicBool::new(false));
        let health = sick.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let _ = conn.set_nodelay(true);
                let health = health.clone();
                tokio::spawn(async move {
                    let mut byte = [0u8; 1];
                    while conn.read_exact(&mut byte).await.is_ok() {
                        let answer = if health.load(Ordering::Relaxed) {
                            b"-"
                        } else {
                            b"+"
                        };
                        if conn.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Dependency { port, sick }
    }
}

/// What the instances of one scenario counted.
#[derive(Default)]
struct Counts {
    /// Failed calls each instance made before its breaker first refused one.
    failing_until_stopped: AtomicU64,
    /// Half-open trials that reached the sick dependency.
    probes: AtomicU64,
    /// Failed calls of the late pod.
    late_failures: AtomicU64,
}

struct Instance {
    breaker: Arc<Breaker>,
    fleet: Option<Fleet>,
}

async fn instance(url: &str, namespace: &str, quorum: Option<u32>, name: String) -> Instance {
    let breaker = Arc::new(
        Breaker::builder()
            .name("inventory")
            .threshold(5)
            .recovery(RECOVERY)
            .build()
            .unwrap(),
    );
    let fleet = quorum.map(|quorum| {
        let mut cfg = FleetConfig::new(url, namespace);
        cfg.instance = name;
        cfg.quorum = quorum;
        cfg.open_base = RECOVERY;
        cfg.open_cap = RECOVERY;
        cfg.breakers = Breakers::Explicit;
        let fleet = failfast_fleet::join(cfg).unwrap();
        fleet.attach_breaker(breaker.clone()).unwrap();
        fleet
    });
    if let Some(fleet) = &fleet {
        support::eventually(Duration::from_secs(10), "fleet connected", || {
            fleet.stats().connected
        })
        .await;
    }
    Instance { breaker, fleet }
}

/// Poisson calls at `RATE` until `end`.
async fn calls(
    breaker: Arc<Breaker>,
    port: u16,
    sick: Arc<AtomicBool>,
    counts: Arc<Counts>,
    late: bool,
    end: Instant,
) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    conn.set_nodelay(true).unwrap();
    let mut stopped = false;
    while Instant::now() < end {
        let gap = -(1.0 - fastrand::f64()).ln() / RATE;
        tokio::time::sleep(Duration::from_secs_f64(gap)).await;
        let Ok(permit) = breaker.acquire() else {
            stopped |= sick.load(Ordering::Relaxed);
            continue;
        };
        let trial = permit.is_trial();
        let mut answer = [0u8; 1];
        conn.write_all(b"?").await.unwrap();
        conn.read_exact(&mut answer).await.unwrap();
        if &answer == b"+" {
            permit.success();
            continue;
        }
        permit.failure();
        if trial {
            counts.probes.fetch_add(1, Ordering::Relaxed);
        } else if late {
            counts.late_failures.fetch_add(1, Ordering::Relaxed);
        } else if !stopped {
            counts.failing_until_stopped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Row {
    scenario: String,
    failing_until_stopped: u64,
    spread: Option<Duration>,
    probes: u64,
    recovered_in: Option<Duration>,
    late_failures: u64,
    store_ops_per_s: f64,
}

async fn scenario(url: &str, dep: &Dependency, quorum: Option<u32>) -> Row {
    let label = quorum.map_or("no sharing".to_owned(), |k| format!("fleet, quorum {k}"));
    let namespace = format!("fleet-example/k{}", quorum.unwrap_or(0));
    let mut instances = Vec::new();
    for i in 0..INSTANCES {
        instances.push(instance(url, &namespace, quorum, format!("pod{i}")).await);
    }
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let end = start + HEALTHY + SICK + TAIL;
    dep.sick.store(false, Ordering::Relaxed);
    let mut tasks: Vec<_> = instances
        .iter()
        .map(|i| {
            let (b, s, c) = (i.breaker.clone(), dep.sick.clone(), counts.clone());
            tokio::spawn(calls(b, dep.port, s, c, false, end))
        })
        .collect();

    tokio::time::sleep_until((start + HEALTHY).into()).await;
    dep.sick.store(true, Ordering::Relaxed);
    // From the first breaker open to every breaker open.
    let mut first = None;
    let mut spread = None;
    while Instant::now() < start + HEALTHY + LATE_AFTER {
        let open = instances
            .iter()
            .filter(|i| i.breaker.state() != State::Closed)
            .count();
        if open > 0 && first.is_none() {
            first = Some(Instant::now());
        }
        if open == INSTANCES {
            spread = first.map(|f| f.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep_until((start + HEALTHY + LATE_AFTER).into()).await;
    let late = instance(url, &namespace, quorum, "late".into()).await;
    tasks.push(tokio::spawn(calls(
        late.breaker.clone(),
        dep.port,
        dep.sick.clone(),
        counts.clone(),
        true,
        end,
    )));

    let healed = start + HEALTHY + SICK;
    tokio::time::sleep_until(healed.into()).await;
    let probes = counts.probes.load(Ordering::Relaxed);
    dep.sick.store(false, Ordering::Relaxed);
    let mut recovered_in = None;
    while Instant::now() < end {
        let closed = instances
            .iter()
            .chain([&late])
            .all(|i| i.breaker.state() == State::Closed);
        if closed {
            recovered_in = Some(healed.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let ops: u64 = instances
        .iter()
        .chain([&late])
        .filter_map(|i| i.fleet.as_ref())
        .map(|f| f.stats().ops_ok + f.stats().ops_failed)
        .sum();
    Row {
        scenario: label,
        failing_until_stopped: counts.failing_until_stopped.load(Ordering::Relaxed),
        spread,
        probes,
        recovered_in,
        late_failures: counts.late_failures.load(Ordering::Relaxed),
        store_ops_per_s: ops as f64 / start.elapsed().as_secs_f64(),
    }
}

#[tokio::main]
async fn main() {
    let server = support::RedisServer::start();
    let url = server.url();
    let dep = Dependency::start().await;
    // Recovery periods that end while the dependency is still sick.
    let periods = (SICK.as_secs_f64() / RECOVERY.as_secs_f64()).floor();
    println!(
        "{INSTANCES} instances at {RATE} calls/s each, threshold 5, recovery {}s; \
         dependency sick for {}s ({periods} recovery periods)\n",
        RECOVERY.as_secs(),
        SICK.as_secs()
    );
    let mut rows = Vec::new();
    for quorum in [None, Some(1), Some(2), Some(3)] {
        let row = scenario(&url, &dep, quorum).await;
        eprintln!("{} done", row.scenario);
        rows.push(row);
    }
    println!(
        "| scenario | failing calls until the fleet stopped | first open → all open \
         | probes while sick (per recovery period) | recovery → every breaker closed \
         | late pod's failing calls | store ops/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        let recovered = r.recovered_in.map_or("not within 3 s".to_owned(), |d| {
            format!("{} ms", d.as_millis())
        });
        let spread = r.spread.map_or("not within 3 s".to_owned(), |d| {
            format!("{} ms", d.as_millis())
        });
        println!(
            "| {} | {} | {} | {} ({:.1}) | {} | {} | {:.1} |",
            r.scenario,
            r.failing_until_stopped,
            spread,
            r.probes,
            r.probes as f64 / periods,
            recovered,
            r.late_failures,
            r.store_ops_per_s
        );
    }
}
