//! What a breaker costs per call, side by side with the breakers a Rust user
//! would pick instead (`failsafe`, `recloser`) and with two floors: a bare call
//! of a trivial function, and the same call plus one shared atomic increment.
//!
//! Every case calls the same `#[inline(never)]` function returning a `Result`.
//! Two-thread cases run the loop on two threads sharing one breaker and report
//! the time per call as each thread sees it: wall time from a common start to
//! the last thread's finish, divided by the calls each thread made.
//!
//! Run them all with `cargo bench --bench breaker`; `benches/README.md` has the
//! figures and how to turn criterion's output into its table.

use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use failfast::{circuit_breaker, Breaker, Outcome, Rejected};
use failsafe::{backoff, failure_policy, CircuitBreaker};
use recloser::Recloser;

/// The protected call's error.
#[derive(Debug)]
pub enum Fault {
    Down,
    Rejected(Rejected),
}

impl From<Rejected> for Fault {
    fn from(rejected: Rejected) -> Self {
        Fault::Rejected(rejected)
    }
}

/// The dependency: fails only for `u64::MAX`, so benches pass `black_box(1)`.
#[inline(never)]
fn work(x: u64) -> Result<u64, Fault> {
    if x == u64::MAX {
        Err(Fault::Down)
    } else {
        Ok(x)
    }
}

/// A value the optimiser can't see through.
fn arg() -> u64 {
    black_box(1)
}

static SHARED: AtomicU64 = AtomicU64::new(0);

fn bare() -> Result<u64, Fault> {
    work(arg())
}

fn bare_fetch_add() -> Result<u64, Fault> {
    SHARED.fetch_add(1, Ordering::Relaxed);
    work(arg())
}

#[circuit_breaker(threshold = 5, recovery = "30s")]
fn consecutive(x: u64) -> Result<u64, Fault> {
    work(x)
}

#[circuit_breaker(failure_rate = 0.5, window = 100, recovery = "30s")]
fn rate(x: u64) -> Result<u64, Fault> {
    work(x)
}

#[circuit_breaker(threshold = 1, recovery = "1h")]
fn open(x: u64) -> Result<u64, Fault> {
    work(x)
}

async fn plain_async(x: u64) -> Result<u64, Fault> {
    work(x)
}

#[circuit_breaker(threshold = 5, recovery = "30s")]
async fn guarded_async(x: u64) -> Result<u64, Fault> {
    work(x)
}

fn failfast_consecutive() -> Breaker {
    Breaker::builder()
        .threshold(5)
        .recovery(Duration::from_secs(30))
        .build()
        .expect("valid settings")
}

fn failfast_rate() -> Breaker {
    Breaker::builder()
        .failure_rate(0.5)
        .window_calls(100)
        .recovery(Duration::from_secs(30))
        .build()
        .expect("valid settings")
}

type Failsafe = failsafe::StateMachine<failure_policy::ConsecutiveFailures<backoff::Constant>, ()>;

fn failsafe_consecutive(failures: u32, open_for: Duration) -> Failsafe {
    failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(
            failures,
            backoff::constant(open_for),
        ))
        .build()
}

/// `acquire`, the call, and the outcome by hand: what the attribute expands to.
#[inline]
fn by_permit(breaker: &Breaker) -> Result<u64, Fault> {
    let permit = breaker.acquire()?;
    let result = work(arg());
    permit.record(if result.is_ok() {
        Outcome::Success
    } else {
        Outcome::Failure
    });
    result
}

/// Runs `call` `iters` times on each of two threads released together; the time
/// from the first thread's start to the last one's finish.
fn two_threads<R>(iters: u64, call: impl Fn() -> R + Sync) -> Duration {
    let start = Barrier::new(2);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..iters {
                        black_box(call());
                    }
                    (began, Instant::now())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect()
    });
    let began = spans.iter().map(|s| s.0).min().expect("two threads");
    let ended = spans.iter().map(|s| s.1).max().expect("two threads");
    ended - began
}

fn closed_consecutive(c: &mut Criterion) {
    let ff = failfast_consecutive();
    let fs = failsafe_consecutive(5, Duration::from_secs(30));
    let rc = Recloser::default();

    let mut g = c.benchmark_group("closed_1_thread");
    g.bench_function("floor: bare call", |b| b.iter(bare));
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        b.iter(bare_fetch_add)
    });
    g.bench_function("failsafe", |b| b.iter(|| fs.call(|| work(arg()))));
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter(|| ff.call(|| work(arg())))
    });
    g.bench_function("failfast: acquire + record", |b| b.iter(|| by_permit(&ff)));
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter(|| consecutive(arg()))
    });
    g.finish();

    let mut g = c.benchmark_group("closed_2_threads");
    g.bench_function("floor: bare call", |b| {
        b.iter_custom(|n| two_threads(n, bare))
    });
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        b.iter_custom(|n| two_threads(n, bare_fetch_add))
    });
    g.bench_function("failsafe", |b| {
        b.iter_custom(|n| two_threads(n, || fs.call(|| work(arg()))))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| two_threads(n, || rc.call(|| work(arg()))))
    });
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter_custom(|n| two_threads(n, || ff.call(|| work(arg()))))
    });
    g.bench_function("failfast: acquire + record", |b| {
        b.iter_custom(|n| two_threads(n, || by_permit(&ff)))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter_custom(|n| two_threads(n, || consecutive(arg())))
    });
    g.finish();
}

fn closed_rate(c: &mut Criterion) {
    let ff = failfast_rate();
    // recloser's only rule is a failure rate over a 100-call ring.
    let rc = Recloser::default();

    let mut g = c.benchmark_group("rate_1_thread");
    g.bench_function("floor: bare call", |b| b.iter(bare));
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter(|| ff.call(|| work(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| b.iter(|| rate(arg())));
    g.finish();

    let mut g = c.benchmark_group("rate_2_threads");
    g.bench_function("floor: bare call", |b| {
        b.iter_custom(|n| two_threads(n, bare))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| two_threads(n, || rc.call(|| work(arg()))))
    });
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter_custom(|n| two_threads(n, || ff.call(|| work(arg()))))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter_custom(|n| two_threads(n, || rate(arg())))
    });
    g.finish();
}

fn async_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let ff = failfast_consecutive();

    /// `iters` awaits of `call()` inside one `block_on`.
    fn looped<F: Future>(
        rt: &tokio::runtime::Runtime,
        iters: u64,
        call: impl Fn() -> F,
    ) -> Duration {
        rt.block_on(async {
            let began = Instant::now();
            for _ in 0..iters {
                black_box(call().await);
            }
            began.elapsed()
        })
    }

    let mut g = c.benchmark_group("async_current_thread");
    g.bench_function("plain async fn", |b| {
        b.iter_custom(|n| looped(&rt, n, || plain_async(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker] async fn", |b| {
        b.iter_custom(|n| looped(&rt, n, || guarded_async(arg())))
    });
    g.bench_function("failfast: Breaker::call_async", |b| {
        b.iter_custom(|n| looped(&rt, n, || ff.call_async(plain_async(arg()))))
    });
    g.finish();
}

/// Last: opening a breaker starts the coarse clock's ticker, which then runs for
/// the rest of the process.
fn open_rejected(c: &mut Criterion) {
    let an_hour = Duration::from_secs(3600);
    let ff = Breaker::builder()
        .threshold(1)
        .recovery(an_hour)
        .build()
        .expect("valid settings");
    let _ = ff.call(|| work(u64::MAX));
    assert!(ff.call(|| work(arg())).is_err_and(|e| e.is_rejected()));

    let fs = failsafe_consecutive(1, an_hour);
    let _ = fs.call(|| work(u64::MAX));
    assert!(matches!(
        fs.call(|| work(arg())),
        Err(failsafe::Error::Rejected)
    ));

    let rc = Recloser::custom().open_wait(an_hour).build();
    for _ in 0..200 {
        let _ = rc.call(|| work(u64::MAX));
    }
    assert!(matches!(
        rc.call(|| work(arg())),
        Err(recloser::Error::Rejected)
    ));

    let _ = open(u64::MAX);
    assert!(matches!(open(arg()), Err(Fault::Rejected(_))));

    let mut g = c.benchmark_group("open_rejected");
    g.bench_function("floor: bare call", |b| b.iter(bare));
    g.bench_function("failsafe", |b| b.iter(|| fs.call(|| work(arg()))));
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter(|| ff.call(|| work(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| b.iter(|| open(arg())));
    g.finish();
}

criterion_group!(
    benches,
    closed_consecutive,
    closed_rate,
    async_call,
    open_rejected
);
criterion_main!(benches);
