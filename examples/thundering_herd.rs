//! Thundering herd: when an open breaker becomes eligible for a trial, exactly one
//! caller reaches the dependency; everyone else arriving at the same instant is
//! rejected at once.
//!
//! The inventory service is sick (it hangs, then answers 503). Five failed calls
//! open a breaker (`threshold = 5`, `recovery = "1s"`). Ten callers wait on a
//! barrier; the moment the breaker's `state()` reads half-open, the barrier
//! releases them together. One becomes the trial and waits out the hang; the other
//! nine are refused in microseconds without touching the service. The trial fails
//! (the service is still sick), so the breaker opens again for another second.
//!
//! It does this twice: with 10 OS threads calling a sync `#[circuit_breaker]` fn,
//! then with 10 tokio tasks calling an async one. The service counts the requests
//! it receives, so "reached the service" is measured at the service.
//!
//! ```text
//! cargo run --example thundering_herd
//! cargo run --example thundering_herd -- --hang-ms 1000
//! ```
//!
//! `tests/calls/examples_herd.rs` runs this scenario and checks its outcome.

pub mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::client::{InventoryClient, InventoryError, Stock};
use common::service::InventoryService;
use common::{flag, human, state_name};
use failfast::{State, circuit_breaker};
use tokio::runtime::{Handle, Runtime};

pub const CALLERS: usize = 10;
const THREADS: &str = "herd::check_stock_blocking";
const TASKS: &str = "herd::check_stock";

/// The sync client: OS threads call it; it waits for the HTTP answer with
/// `block_on` on the runtime that owns the connection pool.
#[circuit_breaker(
    name = "herd::check_stock_blocking",
    threshold = 5,
    recovery = "1s",
    counts = InventoryError::Dependency(_)
)]
fn check_stock_blocking(
    client: &InventoryClient,
    runtime: &Handle,
    sku: &str,
) -> Result<Stock, InventoryError> {
    runtime.block_on(client.stock(sku))
}

/// The async client: tokio tasks call it.
#[circuit_breaker(
    name = "herd::check_stock",
    threshold = 5,
    recovery = "1s",
    counts = InventoryError::Dependency(_)
)]
async fn check_stock(client: &InventoryClient, sku: &str) -> Result<Stock, InventoryError> {
    client.stock(sku).await
}

/// What happened to one batch of callers released together.
pub struct Batch {
    pub callers: &'static str,
    /// Requests the service received from the batch.
    pub reached_service: u64,
    /// Calls the breaker let through (their results are not rejections).
    pub admitted: Vec<Result<Stock, InventoryError>>,
    pub rejected: usize,
    pub slowest_rejection: Duration,
    /// From the release to the last caller's answer.
    pub wall: Duration,
    /// How long after the breaker became eligible for a trial the batch was released.
    pub released_after: Duration,
    pub state_after: State,
}

/// A caller's answer and how long it took.
type Answer = (Result<Stock, InventoryError>, Duration);

/// Runs both batches against a fresh, sick inventory service whose requests hang
/// for `hang`.
pub fn run(hang: Duration) -> Result<[Batch; 2], Box<dyn std::error::Error>> {
    let runtime = Runtime::new()?;
    let service = runtime.block_on(InventoryService::start(hang))?;
    let client = InventoryClient::new(service.url());
    runtime.block_on(client.set_healthy(false))?;

    // 10 OS threads.
    for _ in 0..5 {
        let _ = check_stock_blocking(&client, runtime.handle(), "SKU-1");
    }
    let hits = service.hits();
    let barrier = std::sync::Barrier::new(CALLERS + 1);
    let (answers, wall, released_after) = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|i| {
                let (client, runtime, barrier) = (&client, runtime.handle(), &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let result = check_stock_blocking(client, runtime, &format!("SKU-{i}"));
                    (result, start.elapsed())
                })
            })
            .collect();
        let eligible = wait_until_half_open(THREADS);
        // The batch's time starts before the release: a thread descheduled
        // right after it must not shorten the measured batch.
        let start = Instant::now();
        barrier.wait();
        let released_after = eligible.elapsed();
        let answers: Vec<Answer> = callers
            .into_iter()
            .map(|c| c.join().expect("caller thread"))
            .collect();
        (answers, start.elapsed(), released_after)
    });
    let threads = batch(
        "10 OS threads",
        THREADS,
        answers,
        service.hits() - hits,
        wall,
        released_after,
    );

    // 10 tokio tasks.
    let tasks = runtime.block_on(async {
        for _ in 0..5 {
            let _ = check_stock(&client, "SKU-1").await;
        }
        let hits = service.hits();
        let barrier = Arc::new(tokio::sync::Barrier::new(CALLERS + 1));
        let callers: Vec<_> = (0..CALLERS)
            .map(|i| {
                let (client, barrier) = (client.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    let start = Instant::now();
                    let result = check_stock(&client, &format!("SKU-{i}")).await;
                    (result, start.elapsed())
                })
            })
            .collect();
        let eligible = wait_until_half_open(TASKS);
        let start = Instant::now();
        barrier.wait().await;
        let released_after = eligible.elapsed();
        let mut answers: Vec<Answer> = Vec::new();
        for caller in callers {
            answers.push(caller.await.expect("caller task"));
        }
        batch(
            "10 tokio tasks",
            TASKS,
            answers,
            service.hits() - hits,
            start.elapsed(),
            released_after,
        )
    });
    Ok([threads, tasks])
}

/// Sleeps until just before the breaker's next trial is due, then spins until
/// `state()` reads half-open (reading it consumes no trial). Returns that instant.
fn wait_until_half_open(name: &str) -> Instant {
    let breaker = failfast::registry::get(name).expect("registered on first call");
    assert_eq!(
        breaker.state(),
        State::Open,
        "five failures open the breaker"
    );
    if let Some(wait) = breaker.snapshot().retry_after {
        std::thread::sleep(wait.saturating_sub(Duration::from_millis(3)));
    }
    while breaker.state() != State::HalfOpen {
        std::hint::spin_loop();
    }
    Instant::now()
}

fn batch(
    callers: &'static str,
    name: &str,
    answers: Vec<Answer>,
    reached_service: u64,
    wall: Duration,
    released_after: Duration,
) -> Batch {
    let mut admitted = Vec::new();
    let mut rejected = 0;
    let mut slowest_rejection = Duration::ZERO;
    for (result, took) in answers {
        if let Err(InventoryError::Rejected(_)) = result {
            rejected += 1;
            slowest_rejection = slowest_rejection.max(took);
        } else {
            admitted.push(result);
        }
    }
    Batch {
        callers,
        reached_service,
        admitted,
        rejected,
        slowest_rejection,
        wall,
        released_after,
        state_after: failfast::registry::get(name).map_or(State::Closed, |b| b.state()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hang = Duration::from_millis(flag("hang-ms", 300));
    println!(
        "The inventory service is sick: each request hangs {}, then gets a 503.",
        human(hang)
    );
    println!(
        "Each breaker: threshold = 5, recovery = \"1s\". Five failed calls open it, then {CALLERS} callers \
         wait on a barrier\nthat is released the moment state() reads half-open.\n"
    );
    for b in run(hang)? {
        let trial = match b.admitted.as_slice() {
            [Err(e)] => format!("the trial: {}", e.brief()),
            [Ok(stock)] => format!("the trial: {stock}"),
            other => format!("{} calls admitted", other.len()),
        };
        println!(
            "{}, released together {} after the breaker became eligible for a trial:",
            b.callers,
            human(b.released_after)
        );
        println!(
            "  reached the service   {:>2}   ({trial})",
            b.reached_service
        );
        println!(
            "  rejected at once      {:>2}   (slowest rejection {})",
            b.rejected,
            human(b.slowest_rejection)
        );
        println!(
            "  batch wall time       {}; breaker now {} (the trial failed: another 1 s before the next one)\n",
            human(b.wall),
            state_name(b.state_after)
        );
    }
    Ok(())
}
