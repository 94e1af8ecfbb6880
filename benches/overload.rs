//! Overload in real time: a server of 8 workers and a queue, offered from
//! half to twice what it serves and back, through each concurrency limit
//! side by side (each with a server of its own, in one process, on one
//! tokio runtime, all at once, so that they share the machine's load).
//!
//! `cargo bench -p failfast-benches --bench overload` (about 6 minutes:
//! 5 runs of 70 s). `OVERLOAD_RUNS=1` for one run.
//!
//! - The server: 8 workers, each call 40–60 ms of work (uniform) once a
//!   worker is free, first come first served, so it serves 160 calls/s. A
//!   call its client gave up on is still served when its turn comes (the
//!   server does not know), as a real one does.
//! - The load: calls arrive at random (Poisson) at 80/s for 10 s, 160/s
//!   for 5 s, 240/s for 5 s, 320/s for 10 s, 160/s for 5 s, then 80/s for
//!   35 s. Each client waits 500 ms at most (then the call is a failure).
//! - The limits: none; a fixed limit, from a sweep whose best (the most
//!   goodput in the run, chosen in hindsight) is the row shown; tower-acc's
//!   `Gradient2` and `Vegas`, and tower-resilience-adaptive's `Vegas` and
//!   `Aimd` (latency threshold 100 ms), each driven through its algorithm
//!   trait, a call refused when the limit is reached (as tower's
//!   `LoadShed` in front of their layers does: nothing waits); failfast's
//!   `max_concurrent = 1..=64`. Every adaptive limit may use 1 to 64 places.
//!
//! Printed per row: goodput (answers within the client's 500 ms per
//! second) during the overload (t = 10–35 s) and over the whole run,
//! p50/p99 latency of the answered calls, and the time after the overload
//! (t = 35 s) until the limit is at 64 again, with how many of a burst of
//! 64 calls at t = 69 s were admitted. Median and range over the runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failfast::{Breaker, Outcome};
use tokio::sync::{Semaphore, oneshot};

const WORKERS: usize = 8;
const CAPACITY: f64 = 160.0;
const TIMEOUT: Duration = Duration::from_millis(500);
const MOST: usize = 64;
/// (from, to, calls per second)
const PHASES: [(f64, f64, f64); 6] = [
    (0.0, 10.0, 80.0),
    (10.0, 15.0, 160.0),
    (15.0, 20.0, 240.0),
    (20.0, 30.0, 320.0),
    (30.0, 35.0, 160.0),
    (35.0, 70.0, 80.0),
];
const OVERLOAD: (f64, f64) = (10.0, 35.0);
const BURST_AT: f64 = 69.0;
const END: f64 = 70.0;
const FIXED: [usize; 5] = [8, 10, 12, 16, 24];

/// The server: 8 workers behind a first-come-first-served queue.
struct Server {
    workers: Arc<Semaphore>,
}

impl Server {
    fn new() -> Self {
        Self {
            workers: Arc::new(Semaphore::new(WORKERS)),
        }
    }

    /// One call: the answer comes on the returned channel once served.
    fn call(&self, work: Duration) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let workers = Arc::clone(&self.workers);
        tokio::spawn(async move {
            let _worker = workers.acquire_owned().await.unwrap();
            tokio::time::sleep(work).await;
            let _ = tx.send(());
        });
        rx
    }
}

/// A limit in front of the server.
trait Limit: Send + Sync {
    /// A place for a call, or `None`: refused.
    fn admit(&self) -> Option<Admitted>;
    /// The limit now (`MOST` without one).
    fn limit(&self) -> usize;
}

/// What a call admitted gives back when it ends: `Some(latency)` on an
/// answer, `None` on a timeout.
type Admitted = Box<dyn FnOnce(Option<Duration>) + Send>;

struct NoLimit;

impl Limit for NoLimit {
    fn admit(&self) -> Option<Admitted> {
        Some(Box::new(|_| {}))
    }
    fn limit(&self) -> usize {
        MOST
    }
}

struct Fixed {
    places: usize,
    taken: Arc<AtomicUsize>,
}

impl Limit for Fixed {
    fn admit(&self) -> Option<Admitted> {
        let taken = Arc::clone(&self.taken);
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t < self.places).then_some(t + 1)
            })
            .ok()?;
        Some(Box::new(move |_| {
            taken.fetch_sub(1, Ordering::AcqRel);
        }))
    }
    fn limit(&self) -> usize {
        self.places
    }
}

/// tower-acc's algorithms, as its controller drives them: `update` with the
/// latency and the calls in flight when a call ends.
struct TowerAcc<A> {
    algorithm: Arc<Mutex<A>>,
    taken: Arc<AtomicUsize>,
}

impl<A: tower_acc::Algorithm + Send + 'static> Limit for TowerAcc<A> {
    fn admit(&self) -> Option<Admitted> {
        let most = self.algorithm.lock().unwrap().max_concurrency();
        let taken = Arc::clone(&self.taken);
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t < most).then_some(t + 1)
            })
            .ok()?;
        let algorithm = Arc::clone(&self.algorithm);
        let started = Instant::now();
        Some(Box::new(move |answer| {
            let in_flight = taken.load(Ordering::Acquire);
            taken.fetch_sub(1, Ordering::AcqRel);
            let rtt = answer.unwrap_or_else(|| started.elapsed());
            algorithm
                .lock()
                .unwrap()
                .update(rtt, in_flight, answer.is_none(), false);
        }))
    }
    fn limit(&self) -> usize {
        self.algorithm.lock().unwrap().max_concurrency()
    }
}

/// tower-resilience-adaptive's algorithms, as its service drives them.
struct Resilience<A> {
    algorithm: Arc<A>,
    taken: Arc<AtomicUsize>,
}

impl<A: tower_resilience_adaptive::ConcurrencyAlgorithm + 'static> Limit for Resilience<A> {
    fn admit(&self) -> Option<Admitted> {
        let most = self.algorithm.limit();
        let taken = Arc::clone(&self.taken);
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t < most).then_some(t + 1)
            })
            .ok()?;
        let algorithm = Arc::clone(&self.algorithm);
        Some(Box::new(move |answer| {
            let in_flight = taken.fetch_sub(1, Ordering::AcqRel);
            match answer {
                Some(latency) => algorithm.record_success_with_load(latency, in_flight),
                None => algorithm.record_failure(),
            }
        }))
    }
    fn limit(&self) -> usize {
        self.algorithm.limit()
    }
}

/// failfast's adaptive limit: a breaker with `max_concurrent = 1..=64`
/// (and a threshold it never reaches: the limit alone).
struct Failfast(&'static Breaker);

impl Limit for Failfast {
    fn admit(&self) -> Option<Admitted> {
        let permit = self.0.acquire().ok()?;
        Some(Box::new(move |answer| {
            permit.record(if answer.is_some() {
                Outcome::Success
            } else {
                Outcome::Failure
            });
        }))
    }
    fn limit(&self) -> usize {
        self.0.snapshot().concurrency_limit.unwrap_or(0) as usize
    }
}

/// A small generator of the run's randomness, the same for every row.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One call of the schedule: when it comes (s) and how long its work is.
/// `scale` shortens the phases (not the work) for a smoke test.
fn schedule(seed: u64, scale: f64) -> Vec<(f64, Duration)> {
    let mut rng = Rng(seed);
    let mut calls = Vec::new();
    for (from, to, rate) in PHASES {
        let (from, to) = (from * scale, to * scale);
        let mut t = from;
        loop {
            t += -(1.0 - rng.next()).ln() / rate;
            if t >= to {
                break;
            }
            let work = Duration::from_micros((40_000.0 + 20_000.0 * rng.next()) as u64);
            calls.push((t, work));
        }
    }
    calls
}

#[derive(Default)]
struct Tally {
    overload_answers: AtomicU64,
    answers: AtomicU64,
    latencies: Mutex<Vec<f64>>,
}

#[derive(Clone, Debug, Default)]
struct Row {
    overload_goodput: f64,
    goodput: f64,
    p50: f64,
    p99: f64,
    /// Seconds after the overload until the limit is at `MOST`.
    regrown: Option<f64>,
    burst: usize,
}

async fn run_one(
    limit: Arc<dyn Limit>,
    calls: Arc<Vec<(f64, Duration)>>,
    start: Instant,
    scale: f64,
) -> Row {
    let (overload, burst_at, end) = (
        (OVERLOAD.0 * scale, OVERLOAD.1 * scale),
        BURST_AT * scale,
        END * scale,
    );
    let server = Arc::new(Server::new());
    let tally = Arc::new(Tally::default());
    // Watch the limit after the overload.
    let watcher = {
        let limit = Arc::clone(&limit);
        tokio::spawn(async move {
            let from = start + Duration::from_secs_f64(overload.1);
            tokio::time::sleep_until(from.into()).await;
            loop {
                let t = start.elapsed().as_secs_f64();
                if limit.limit() >= MOST {
                    return Some(t - overload.1);
                }
                if t >= burst_at {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let mut tasks = Vec::with_capacity(calls.len());
    for &(at, work) in calls.iter() {
        tokio::time::sleep_until((start + Duration::from_secs_f64(at)).into()).await;
        let Some(done) = limit.admit() else {
            continue;
        };
        let (server, tally) = (Arc::clone(&server), Arc::clone(&tally));
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let answer = tokio::time::timeout(TIMEOUT, server.call(work)).await;
            let latency = sent.elapsed();
            if answer.is_ok() {
                done(Some(latency));
                tally.answers.fetch_add(1, Ordering::Relaxed);
                if (overload.0..overload.1).contains(&at) {
                    tally.overload_answers.fetch_add(1, Ordering::Relaxed);
                }
                tally
                    .latencies
                    .lock()
                    .unwrap()
                    .push(latency.as_secs_f64() * 1e3);
            } else {
                done(None);
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let regrown = watcher.await.unwrap();
    // The burst: 64 calls at once, held until all are counted.
    tokio::time::sleep_until((start + Duration::from_secs_f64(burst_at)).into()).await;
    let held: Vec<_> = (0..MOST).filter_map(|_| limit.admit()).collect();
    let burst = held.len();
    for done in held {
        done(Some(Duration::from_millis(50)));
    }
    let mut latencies = std::mem::take(&mut *tally.latencies.lock().unwrap());
    latencies.sort_by(f64::total_cmp);
    let q = |q: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Row {
        overload_goodput: tally.overload_answers.load(Ordering::Relaxed) as f64
            / (overload.1 - overload.0),
        goodput: tally.answers.load(Ordering::Relaxed) as f64 / end,
        p50: q(0.5),
        p99: q(0.99),
        regrown,
        burst,
    }
}

fn rows() -> Vec<(String, Arc<dyn Limit>)> {
    let mut rows: Vec<(String, Arc<dyn Limit>)> = vec![("no limit".into(), Arc::new(NoLimit))];
    for places in FIXED {
        rows.push((
            format!("fixed {places}"),
            Arc::new(Fixed {
                places,
                taken: Arc::default(),
            }),
        ));
    }
    rows.push((
        "tower-acc Gradient2".into(),
        Arc::new(TowerAcc {
            algorithm: Arc::new(Mutex::new(
                tower_acc::Gradient2::builder()
                    .min_limit(1)
                    .max_limit(MOST)
                    .build(),
            )),
            taken: Arc::default(),
        }),
    ));
    rows.push((
        "tower-acc Vegas".into(),
        Arc::new(TowerAcc {
            algorithm: Arc::new(Mutex::new(
                tower_acc::Vegas::builder().max_limit(MOST).build(),
            )),
            taken: Arc::default(),
        }),
    ));
    rows.push((
        "tower-resilience Vegas".into(),
        Arc::new(Resilience {
            algorithm: Arc::new(
                tower_resilience_adaptive::Vegas::builder()
                    .min_limit(1)
                    .max_limit(MOST)
                    .build()
                    .unwrap(),
            ),
            taken: Arc::default(),
        }),
    ));
    rows.push((
        "tower-resilience Aimd".into(),
        Arc::new(Resilience {
            algorithm: Arc::new(
                tower_resilience_adaptive::Aimd::builder()
                    .min_limit(1)
                    .max_limit(MOST)
                    .latency_threshold(Duration::from_millis(100))
                    .build()
                    .unwrap(),
            ),
            taken: Arc::default(),
        }),
    ));
    let breaker: &'static Breaker = Box::leak(Box::new(
        Breaker::builder()
            .name("overload")
            .adaptive_concurrency(1, MOST as u32)
            .threshold(16_777_215)
            .build()
            .unwrap(),
    ));
    rows.push(("failfast 1..=64".into(), Arc::new(Failfast(breaker))));
    rows
}

fn median_range(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // gets one run of a schedule a twentieth as long, as a smoke test.
    let bench = std::env::args().any(|a| a == "--bench");
    let scale = if bench { 1.0 } else { 0.05 };
    let runs: usize = std::env::var("OVERLOAD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 5 } else { 1 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut results: Vec<(String, Vec<Row>)> = Vec::new();
    for run in 0..runs {
        let calls = Arc::new(schedule(run as u64 + 1, scale));
        let rows = rows();
        let names: Vec<_> = rows.iter().map(|(n, _)| n.clone()).collect();
        let got: Vec<Row> = runtime.block_on(async {
            let start = Instant::now() + Duration::from_millis(200);
            let tasks: Vec<_> = rows
                .into_iter()
                .map(|(_, limit)| tokio::spawn(run_one(limit, Arc::clone(&calls), start, scale)))
                .collect();
            let mut got = Vec::new();
            for task in tasks {
                got.push(task.await.unwrap());
            }
            got
        });
        eprintln!("run {} of {runs} done", run + 1);
        for (name, row) in names.into_iter().zip(got) {
            eprintln!("  {name:<24} {row:?}");
            match results.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(row),
                None => results.push((name, vec![row])),
            }
        }
    }
    // The best fixed limit: the most goodput over the whole run.
    let best_fixed = results
        .iter()
        .filter(|(n, _)| n.starts_with("fixed"))
        .max_by(|a, b| {
            let g = |r: &[Row]| median_range(&r.iter().map(|r| r.goodput).collect::<Vec<_>>()).0;
            g(&a.1).total_cmp(&g(&b.1))
        })
        .map(|(n, _)| n.clone())
        .unwrap();
    println!(
        "{runs} runs; capacity {CAPACITY}/s; median [min–max]; best fixed limit chosen in hindsight: {best_fixed}"
    );
    println!(
        "{:<28} {:>22} {:>22} {:>20} {:>22} {:>18} {:>10}",
        "limit",
        "goodput t=10–35 s (/s)",
        "goodput t=0–70 s (/s)",
        "p50 (ms)",
        "p99 (ms)",
        "back at 64 after (s)",
        "burst of 64"
    );
    for (name, rows) in &results {
        let label = if *name == best_fixed {
            format!("{name} (best fixed, hindsight)")
        } else {
            name.clone()
        };
        let cell = |f: fn(&Row) -> f64, decimals: usize| {
            let (m, lo, hi) = median_range(&rows.iter().map(f).collect::<Vec<_>>());
            format!("{m:.decimals$} [{lo:.decimals$}–{hi:.decimals$}]")
        };
        let regrown: Vec<f64> = rows.iter().filter_map(|r| r.regrown).collect();
        let regrown = if regrown.len() == rows.len() {
            let (m, lo, hi) = median_range(&regrown);
            format!("{m:.1} [{lo:.1}–{hi:.1}]")
        } else if regrown.is_empty() {
            "never".to_owned()
        } else {
            format!("{} of {} runs", regrown.len(), rows.len())
        };
        let burst = median_range(&rows.iter().map(|r| r.burst as f64).collect::<Vec<_>>());
        println!(
            "{label:<28} {:>22} {:>22} {:>20} {:>22} {:>18} {:>10}",
            cell(|r| r.overload_goodput, 1),
            cell(|r| r.goodput, 1),
            cell(|r| r.p50, 0),
            cell(|r| r.p99, 0),
            regrown,
            format!("{:.0} [{:.0}–{:.0}]", burst.0, burst.1, burst.2),
        );
    }
}
