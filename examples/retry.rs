//! Retries outside the breaker: `#[retry]` over `#[circuit_breaker]`, against a
//! dependency that is first flaky, then down, next to the retry loop most code
//! starts with.
//!
//! The dependency is an in-process function that counts every request it
//! receives. Each run makes the same calls, one after the other:
//!
//! - **Flaky**: one request in four fails. Without retries a quarter of the
//!   calls fail; with `#[retry(attempts = 3)]` none do, and the retry budget
//!   (`budget = 0.3`: retries add at most 30% to the calls of the last 10 s,
//!   plus a floor of 10 so that a rarely called function may still retry)
//!   caps the extra load.
//! - **Down**: every request fails. A hand-written loop of 3 attempts sends 3
//!   requests per call for as long as the outage lasts: the retry storm that
//!   keeps a sick dependency sick. With the breaker below the retries, the
//!   breaker opens after 5 failures, and from then on every call is refused at
//!   once and **not retried**: the dependency receives almost nothing.
//!
//! ```text
//! cargo run --example retry
//! cargo run --example retry -- --calls 400
//! ```
//!
//! `--calls` (default 200) is the number of calls in each run.

pub mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{flag, human};
use failfast::{circuit_breaker, retry};

/// The dependency's errors, and the refusal of the breaker in front of it.
#[derive(Debug)]
enum CallError {
    /// The dependency answered with an error: counted by the breaker, retried.
    Dependency,
    /// The breaker refused the call without making it: never retried.
    Refused(failfast::Rejected),
}

impl From<failfast::Rejected> for CallError {
    fn from(rejected: failfast::Rejected) -> Self {
        CallError::Refused(rejected)
    }
}

/// Requests the dependency received.
static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Whether every request fails (down) or one in four (flaky).
static DOWN: AtomicBool = AtomicBool::new(false);

/// The dependency: counts the request, then answers.
fn dependency() -> Result<u32, CallError> {
    let n = REQUESTS.fetch_add(1, Ordering::Relaxed);
    if DOWN.load(Ordering::Relaxed) || n % 4 == 3 {
        Err(CallError::Dependency)
    } else {
        Ok(42)
    }
}

/// No retries at all.
fn plain() -> Result<u32, CallError> {
    dependency()
}

/// The loop most code starts with: three attempts, a short pause between them,
/// whatever the error.
fn naive_retries() -> Result<u32, CallError> {
    let mut attempt = 1;
    loop {
        match dependency() {
            Err(_) if attempt < 3 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            result => return result,
        }
    }
}

/// Retries outside the breaker: each attempt is one breaker call; a refusal
/// ends the call at once.
#[retry(attempts = 3, backoff = "1ms..4ms", budget = 0.3)]
#[circuit_breaker(
    name = "dependency",
    threshold = 5,
    recovery = "30s",
    counts = CallError::Dependency
)]
fn protected() -> Result<u32, CallError> {
    dependency()
}

/// What one client saw in one run.
struct Run {
    ok: u64,
    failed: u64,
    refused: u64,
    requests: u64,
    took: Duration,
    last_refusal: Option<failfast::Rejected>,
}

fn run(calls: u64, client: fn() -> Result<u32, CallError>) -> Run {
    let before = REQUESTS.load(Ordering::Relaxed);
    let start = Instant::now();
    let (mut ok, mut failed, mut refused) = (0, 0, 0);
    let mut last_refusal = None;
    for _ in 0..calls {
        match client() {
            Ok(_) => ok += 1,
            Err(CallError::Dependency) => failed += 1,
            Err(CallError::Refused(rejected)) => {
                refused += 1;
                last_refusal = Some(rejected);
            }
        }
    }
    Run {
        ok,
        failed,
        refused,
        requests: REQUESTS.load(Ordering::Relaxed) - before,
        took: start.elapsed(),
        last_refusal,
    }
}

fn table(title: &str, calls: u64, rows: &[(&str, Run)]) {
    println!("{title}: {calls} calls each");
    println!(
        "  {:<32} {:>6} {:>7} {:>8} {:>9} {:>9}",
        "client", "ok", "failed", "refused", "requests", "time"
    );
    for (name, r) in rows {
        println!(
            "  {name:<32} {:>6} {:>7} {:>8} {:>9} {:>9}",
            r.ok,
            r.failed,
            r.refused,
            r.requests,
            human(r.took)
        );
    }
    println!();
}

fn main() {
    let calls: u64 = flag("--calls", 200);

    DOWN.store(false, Ordering::Relaxed);
    let flaky = [
        ("no retries", run(calls, plain)),
        ("3 attempts, hand-written loop", run(calls, naive_retries)),
        ("#[retry] over #[circuit_breaker]", run(calls, protected)),
    ];
    table("Flaky (1 request in 4 fails)", calls, &flaky);

    DOWN.store(true, Ordering::Relaxed);
    let down = [
        ("no retries", run(calls, plain)),
        ("3 attempts, hand-written loop", run(calls, naive_retries)),
        ("#[retry] over #[circuit_breaker]", run(calls, protected)),
    ];
    table("Down (every request fails)", calls, &down);

    let (naive, protected) = (&down[1].1, &down[2].1);
    println!(
        "While the dependency was down, the hand-written loop sent it {} requests \
         for {calls} calls; #[retry] over the breaker sent {} and answered the \
         other calls at once with a refusal it did not retry.",
        naive.requests, protected.requests
    );
    if let Some(rejected) = &protected.last_refusal {
        println!("The last refusal: {rejected}.");
    }
}
