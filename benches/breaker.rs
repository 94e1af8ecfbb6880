//! What a breaker costs per call, side by side with the breakers a Rust user
//! would pick instead (`failsafe` 1.3 with its consecutive-failures policy,
//! `recloser` 1.4 with its defaults) and with two floors: a bare call of a
//! trivial function, and the same call plus one shared atomic increment.
//!
//! Each case is one call of an `#[inline(never)]` function returning
//! `Result<(), Fault>`: the bare function itself, the same function through a
//! peer's closure API or `Breaker::call`, or the same function annotated with
//! `#[circuit_breaker]`.
//!
//! Two-thread cases run the loop on two threads sharing one breaker and report
//! the time per call as each thread sees it, twice: in the `*_2_threads` groups
//! as wall time from the first thread's start to the last one's finish divided by
//! the calls each thread made; in the `*_2_threads_cpu` groups as each thread's
//! CPU time per call, which leaves out the time a thread spent descheduled when
//! the machine is busy with other work.
//!
//! With `--features metrics` (a feature of this crate, `failfast-benches`) a
//! recorder (`metrics-util`'s debugging recorder) is installed before the
//! first case: calls are then counted exactly as without it (the recorder is
//! only told on transitions and on export), which the figures show.
//!
//! Run them all with `cargo bench -p failfast-benches --bench breaker`;
//! `python3 benches/table.py` then prints the medians as the table in
//! `benches/README.md`.

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion, criterion_group, criterion_main};
use failfast::{Breaker, Outcome, Rejected, circuit_breaker};
use failsafe::CircuitBreaker;
use recloser::Recloser;

#[path = "support/call.rs"]
mod call;
#[path = "support/cpu_time.rs"]
mod cpu_time;
#[path = "support/protected.rs"]
mod protected;
use call::{Fault, answer, arg, looped_dyn_on_cpu, looped_on_cpu};
use cpu_time::thread_cpu_time;
use protected::{
    Failsafe, arg_1_in_64, bulkheaded, consecutive, failfast_consecutive, failfast_rate,
    failsafe_consecutive, guarded_async, open, plain_async, rate, rate_some_failing, retried,
    retried_alone, work,
};

static SHARED: AtomicU64 = AtomicU64::new(0);

fn bare() -> Result<(), Fault> {
    work(arg())
}

fn bare_fetch_add() -> Result<(), Fault> {
    SHARED.fetch_add(1, Ordering::Relaxed);
    work(arg())
}

thread_local! {
    /// A count on this thread's own line: what the breaker's running totals
    /// do per call.
    static COUNTED: Cell<u64> = const { Cell::new(0) };
}

/// The floor of counting every call exactly without a shared write: one
/// increment of a counter this thread alone writes.
fn bare_counted() -> Result<(), Fault> {
    COUNTED.set(COUNTED.get() + 1);
    work(arg())
}

static RUNNING: AtomicU32 = AtomicU32::new(0);

/// The floor of any exact concurrency limit: a slot taken with a
/// compare-and-swap (only if one is free) and given back with a `fetch_sub`.
fn bare_enter_leave() -> Result<(), Fault> {
    let running = RUNNING.load(Ordering::Relaxed);
    if running >= 64
        || RUNNING
            .compare_exchange(running, running + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return Err(Fault::Unavailable);
    }
    let result = work(arg());
    RUNNING.fetch_sub(1, Ordering::Release);
    result
}

/// An error that keeps the breaker's `Rejected` (name, state, retry time), as
/// the crate's docs suggest.
#[derive(Debug)]
pub enum Detailed {
    Down,
    Unavailable(Rejected),
}

impl From<Rejected> for Detailed {
    fn from(rejected: Rejected) -> Self {
        Detailed::Unavailable(rejected)
    }
}

#[inline(never)]
#[circuit_breaker(threshold = 1, recovery = "1h")]
fn open_detailed(x: u64) -> Result<(), Detailed> {
    answer(x).map_err(|_| Detailed::Down)
}

/// `guarded_async` with a time limit it never reaches.
#[circuit_breaker(threshold = 5, recovery = "30s", timeout = "30s")]
async fn guarded_timeout(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// Times `call` on this thread, keeping each result alive by reference.
/// (Criterion's `iter` reads each returned value back byte by byte, a cost that
/// grows with the result's size and belongs to the harness, not the breaker.)
fn each<R>(b: &mut Bencher, mut call: impl FnMut() -> R) {
    b.iter(|| {
        black_box(&call());
    });
}

/// Times `iters` calls on this thread in its own CPU time, which leaves out
/// the time it spent descheduled while other work ran on the machine.
fn on_cpu<R>(iters: u64, mut call: impl FnMut() -> R) -> Duration {
    let cpu = thread_cpu_time();
    for _ in 0..iters {
        black_box(&call());
    }
    thread_cpu_time() - cpu
}

/// The floor and each breaker's closure API, in the thread's CPU time.
fn floor_and_peers_on_cpu(
    g: &mut BenchmarkGroup<'_, WallTime>,
    fs: &Failsafe,
    rc: &Recloser,
    ff: &Breaker,
) {
    g.bench_function("floor: bare call", |b| b.iter_custom(|n| on_cpu(n, bare)));
    g.bench_function("failsafe", |b| {
        b.iter_custom(|n| on_cpu(n, || fs.call(|| work(arg()))))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| on_cpu(n, || rc.call(|| work(arg()))))
    });
    g.bench_function("failfast: Breaker::call", |b| {
        b.iter_custom(|n| on_cpu(n, || ff.call(|| work(arg()))))
    });
}

/// `acquire`, the call, and the outcome by hand: what the attribute expands
/// to, written against the runtime.
#[inline(never)]
fn by_permit(breaker: &Breaker, x: u64) -> Result<(), Fault> {
    let permit = breaker.acquire()?;
    let result = answer(x);
    permit.record(if result.is_ok() {
        Outcome::Success
    } else {
        Outcome::Failure
    });
    result
}

/// How two-thread cases are timed.
#[derive(Clone, Copy)]
enum Clock {
    /// From the first thread's start to the last one's finish.
    Wall,
    /// The CPU time of each thread, averaged: the time a call takes while its
    /// thread runs, whatever else the machine is doing.
    Cpu,
}

/// Runs `call` `iters` times on each of two threads released together.
fn two_threads<R>(clock: Clock, iters: u64, call: impl Fn() -> R + Sync) -> Duration {
    let start = Barrier::new(2);
    let spans: Vec<(Instant, Instant, Duration)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let cpu = thread_cpu_time();
                    let began = Instant::now();
                    for _ in 0..iters {
                        // By reference: copying the result out would add a store-forwarding
                        // stall that the calls themselves do not have.
                        black_box(&call());
                    }
                    let ended = Instant::now();
                    (began, ended, thread_cpu_time() - cpu)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect()
    });
    match clock {
        Clock::Wall => {
            let began = spans.iter().map(|s| s.0).min().expect("two threads");
            let ended = spans.iter().map(|s| s.1).max().expect("two threads");
            ended - began
        }
        Clock::Cpu => spans.iter().map(|s| s.2).sum::<Duration>() / 2,
    }
}

/// With the `metrics` feature: a recorder, installed once, as an application
/// exporting metrics would have.
fn install_recorder() {
    #[cfg(feature = "metrics")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let recorder = metrics_util::debugging::DebuggingRecorder::new();
            metrics::set_global_recorder(recorder).expect("the only recorder");
        });
    }
}

fn closed_consecutive(c: &mut Criterion) {
    install_recorder();
    let ff = failfast_consecutive();
    let fs = failsafe_consecutive(5, Duration::from_secs(30));
    let rc = Recloser::default();

    let mut g = c.benchmark_group("closed_1_thread");
    g.bench_function("floor: bare call", |b| each(b, bare));
    g.bench_function("floor: bare call + a count on this thread's line", |b| {
        each(b, bare_counted)
    });
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        each(b, bare_fetch_add)
    });
    g.bench_function("failsafe", |b| each(b, || fs.call(|| work(arg()))));
    g.bench_function("recloser", |b| each(b, || rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        each(b, || ff.call(|| work(arg())))
    });
    g.bench_function("failfast: acquire + record", |b| {
        each(b, || by_permit(&ff, arg()))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        each(b, || consecutive(arg()))
    });
    g.bench_function("failfast: #[circuit_breaker(max_concurrent)]", |b| {
        each(b, || bulkheaded(arg()))
    });
    g.bench_function("floor: bare call + slot in and out", |b| {
        each(b, bare_enter_leave)
    });
    g.finish();

    // The same, in the thread's CPU time.
    let mut g = c.benchmark_group("closed_1_thread_cpu");
    g.bench_function("floor: bare call + slot in and out", |b| {
        b.iter_custom(|n| on_cpu(n, bare_enter_leave))
    });
    g.bench_function("failfast: #[circuit_breaker(max_concurrent)]", |b| {
        b.iter_custom(|n| on_cpu(n, || bulkheaded(arg())))
    });
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        b.iter_custom(|n| on_cpu(n, bare_fetch_add))
    });
    floor_and_peers_on_cpu(&mut g, &fs, &rc, &ff);
    g.bench_function("failfast: acquire + record", |b| {
        b.iter_custom(|n| on_cpu(n, || by_permit(&ff, arg())))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter_custom(|n| on_cpu(n, || consecutive(arg())))
    });
    g.finish();

    for (clock, group) in [
        (Clock::Wall, "closed_2_threads"),
        (Clock::Cpu, "closed_2_threads_cpu"),
    ] {
        let mut g = c.benchmark_group(group);
        g.bench_function("floor: bare call", |b| {
            b.iter_custom(|n| two_threads(clock, n, bare))
        });
        g.bench_function("floor: bare call + shared fetch_add", |b| {
            b.iter_custom(|n| two_threads(clock, n, bare_fetch_add))
        });
        g.bench_function("failsafe", |b| {
            b.iter_custom(|n| two_threads(clock, n, || fs.call(|| work(arg()))))
        });
        g.bench_function("recloser", |b| {
            b.iter_custom(|n| two_threads(clock, n, || rc.call(|| work(arg()))))
        });
        g.bench_function("failfast: Breaker::call", |b| {
            b.iter_custom(|n| two_threads(clock, n, || ff.call(|| work(arg()))))
        });
        g.bench_function("failfast: acquire + record", |b| {
            b.iter_custom(|n| two_threads(clock, n, || by_permit(&ff, arg())))
        });
        g.bench_function("failfast: #[circuit_breaker]", |b| {
            b.iter_custom(|n| two_threads(clock, n, || consecutive(arg())))
        });
        g.bench_function("failfast: #[circuit_breaker(max_concurrent)]", |b| {
            b.iter_custom(|n| two_threads(clock, n, || bulkheaded(arg())))
        });
        g.finish();
    }
}

fn closed_rate(c: &mut Criterion) {
    let ff = failfast_rate();
    // A breaker whose window keeps holding failures: every success takes a slot.
    let ff_some_failing = failfast_rate();
    // recloser's only rule is a failure rate over a 100-call ring.
    let rc = Recloser::default();

    let mut g = c.benchmark_group("rate_1_thread");
    g.bench_function("floor: bare call", |b| each(b, bare));
    g.bench_function("floor: bare call + a count on this thread's line", |b| {
        each(b, bare_counted)
    });
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        each(b, bare_fetch_add)
    });
    g.bench_function("recloser", |b| each(b, || rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        each(b, || ff.call(|| work(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| each(b, || rate(arg())));
    g.bench_function("floor: bare call, 1 in 64 failing", |b| {
        each(b, || work(arg_1_in_64()))
    });
    g.bench_function("failfast: Breaker::call, 1 in 64 failing", |b| {
        each(b, || ff_some_failing.call(|| work(arg_1_in_64())))
    });
    g.bench_function("failfast: #[circuit_breaker], 1 in 64 failing", |b| {
        each(b, || rate_some_failing(arg_1_in_64()))
    });
    g.finish();

    for (clock, group) in [
        (Clock::Wall, "rate_2_threads"),
        (Clock::Cpu, "rate_2_threads_cpu"),
    ] {
        let mut g = c.benchmark_group(group);
        g.bench_function("floor: bare call", |b| {
            b.iter_custom(|n| two_threads(clock, n, bare))
        });
        g.bench_function("floor: bare call + shared fetch_add", |b| {
            b.iter_custom(|n| two_threads(clock, n, bare_fetch_add))
        });
        g.bench_function("recloser", |b| {
            b.iter_custom(|n| two_threads(clock, n, || rc.call(|| work(arg()))))
        });
        g.bench_function("failfast: Breaker::call", |b| {
            b.iter_custom(|n| two_threads(clock, n, || ff.call(|| work(arg()))))
        });
        g.bench_function("failfast: #[circuit_breaker]", |b| {
            b.iter_custom(|n| two_threads(clock, n, || rate(arg())))
        });
        g.bench_function("floor: bare call, 1 in 64 failing", |b| {
            b.iter_custom(|n| two_threads(clock, n, || work(arg_1_in_64())))
        });
        g.bench_function("failfast: Breaker::call, 1 in 64 failing", |b| {
            b.iter_custom(|n| {
                two_threads(clock, n, || ff_some_failing.call(|| work(arg_1_in_64())))
            })
        });
        g.bench_function("failfast: #[circuit_breaker], 1 in 64 failing", |b| {
            b.iter_custom(|n| two_threads(clock, n, || rate_some_failing(arg_1_in_64())))
        });
        g.finish();
    }
}

/// A protected function as a user's code holds it: behind a trait object.
type Protected = std::sync::Arc<dyn Fn() -> Result<(), Fault> + Send + Sync>;

/// The caller a user writes: not inlined, calling through the trait object,
/// so each breaker's whole call path is paid on every call, as it is in an
/// application.
#[inline(never)]
fn through(f: &Protected) -> Result<(), Fault> {
    f()
}

/// The closed paths of both rules and the peers, each called through a
/// `Protected` from `through`.
fn trait_object(c: &mut Criterion) {
    let fs = std::sync::Arc::new(failsafe_consecutive(5, Duration::from_secs(30)));
    let rc = std::sync::Arc::new(Recloser::default());
    let consecutive_breaker = std::sync::Arc::new(failfast_consecutive());
    let rate_breaker = std::sync::Arc::new(failfast_rate());
    let failing_breaker = std::sync::Arc::new(failfast_rate());
    let cases: Vec<(&str, Protected)> = vec![
        ("floor: bare call", std::sync::Arc::new(bare)),
        (
            "failsafe",
            std::sync::Arc::new(move || fs.call(|| work(arg())).map_err(|_| Fault::Unavailable)),
        ),
        (
            "recloser",
            std::sync::Arc::new(move || rc.call(|| work(arg())).map_err(|_| Fault::Unavailable)),
        ),
        (
            "failfast: Breaker::call, consecutive",
            std::sync::Arc::new(move || {
                consecutive_breaker
                    .call(|| work(arg()))
                    .map_err(|_| Fault::Unavailable)
            }),
        ),
        (
            "failfast: #[circuit_breaker], consecutive",
            std::sync::Arc::new(|| consecutive(arg())),
        ),
        (
            "failfast: Breaker::call, rate",
            std::sync::Arc::new(move || {
                rate_breaker
                    .call(|| work(arg()))
                    .map_err(|_| Fault::Unavailable)
            }),
        ),
        (
            "failfast: #[circuit_breaker], rate",
            std::sync::Arc::new(|| rate(arg())),
        ),
        (
            "failfast: Breaker::call, rate, 1 in 64 failing",
            std::sync::Arc::new(move || {
                failing_breaker
                    .call(|| work(arg_1_in_64()))
                    .map_err(|_| Fault::Unavailable)
            }),
        ),
        (
            "failfast: #[circuit_breaker], rate, 1 in 64 failing",
            std::sync::Arc::new(|| rate_some_failing(arg_1_in_64())),
        ),
    ];

    let mut g = c.benchmark_group("dyn_1_thread");
    for (name, f) in &cases {
        g.bench_function(*name, |b| each(b, || through(f)));
    }
    g.finish();

    let mut g = c.benchmark_group("dyn_1_thread_cpu");
    for (name, f) in &cases {
        g.bench_function(*name, |b| b.iter_custom(|n| on_cpu(n, || through(f))));
    }
    g.finish();

    let mut g = c.benchmark_group("dyn_2_threads_cpu");
    for (name, f) in &cases {
        g.bench_function(*name, |b| {
            b.iter_custom(|n| two_threads(Clock::Cpu, n, || through(f)))
        });
    }
    g.finish();
}

/// `iters` awaits of `call()` inside one `block_on`.
fn looped<F: Future>(rt: &tokio::runtime::Runtime, iters: u64, call: impl Fn() -> F) -> Duration {
    rt.block_on(async {
        let began = Instant::now();
        for _ in 0..iters {
            black_box(&call().await);
        }
        began.elapsed()
    })
}

/// `timeout`: the attribute's time limit against `tokio::time::timeout`
/// around the same function, on a current-thread runtime with its timer.
fn timeout(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let limit = Duration::from_secs(30);

    let mut g = c.benchmark_group("timeout_current_thread");
    g.bench_function("plain async fn", |b| {
        b.iter_custom(|n| looped(&rt, n, || plain_async(arg())))
    });
    g.bench_function("tokio::time::timeout(plain async fn)", |b| {
        b.iter_custom(|n| looped(&rt, n, || tokio::time::timeout(limit, plain_async(arg()))))
    });
    g.bench_function("failfast: #[circuit_breaker] async fn", |b| {
        b.iter_custom(|n| looped(&rt, n, || guarded_async(arg())))
    });
    g.bench_function("tokio::time::timeout(#[circuit_breaker] async fn)", |b| {
        b.iter_custom(|n| looped(&rt, n, || tokio::time::timeout(limit, guarded_async(arg()))))
    });
    g.bench_function("failfast: #[circuit_breaker(timeout)] async fn", |b| {
        b.iter_custom(|n| looped(&rt, n, || guarded_timeout(arg())))
    });
    g.finish();
}

fn async_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let ff = failfast_consecutive();

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

    let mut g = c.benchmark_group("async_current_thread_cpu");
    g.bench_function("plain async fn", |b| {
        b.iter_custom(|n| looped_on_cpu(&rt, n, || plain_async(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker] async fn", |b| {
        b.iter_custom(|n| looped_on_cpu(&rt, n, || guarded_async(arg())))
    });
    g.finish();

    let mut g = c.benchmark_group("async_dyn_cpu");
    g.bench_function("plain async fn", |b| {
        b.iter_custom(|n| looped_dyn_on_cpu(&rt, n, || plain_async(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker] async fn", |b| {
        b.iter_custom(|n| looped_dyn_on_cpu(&rt, n, || guarded_async(arg())))
    });
    g.finish();
}

/// Each breaker refusing a call while open (opened for an hour by failures).
fn open_rejected(c: &mut Criterion) {
    let an_hour = Duration::from_secs(3600);
    let ff = Breaker::builder()
        .threshold(1)
        .recovery(an_hour)
        .build()
        .expect("valid settings");
    let _ = ff.call(|| work(u64::MAX));
    assert!(
        ff.call(|| work(arg()))
            .is_err_and(|e| matches!(e, failfast::Error::Rejected(_)))
    );

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
    assert_eq!(open(arg()), Err(Fault::Unavailable));
    let _ = open_detailed(u64::MAX);
    assert!(matches!(
        open_detailed(arg()),
        Err(Detailed::Unavailable(_))
    ));

    let mut g = c.benchmark_group("open_rejected");
    g.bench_function("floor: bare call", |b| each(b, bare));
    g.bench_function("failsafe", |b| each(b, || fs.call(|| work(arg()))));
    g.bench_function("recloser", |b| each(b, || rc.call(|| work(arg()))));
    g.bench_function("failfast: Breaker::call", |b| {
        each(b, || ff.call(|| work(arg())))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| each(b, || open(arg())));
    g.bench_function(
        "failfast: #[circuit_breaker], error keeps the Rejected",
        |b| each(b, || open_detailed(arg())),
    );
    g.finish();

    // The same, in the thread's CPU time.
    let mut g = c.benchmark_group("open_rejected_cpu");
    floor_and_peers_on_cpu(&mut g, &fs, &rc, &ff);
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter_custom(|n| on_cpu(n, || open(arg())))
    });
    g.bench_function(
        "failfast: #[circuit_breaker], error keeps the Rejected",
        |b| b.iter_custom(|n| on_cpu(n, || open_detailed(arg()))),
    );
    g.finish();
}

/// The no-retry-needed path: `#[retry]` above a breaker vs the breaker alone,
/// with the floors and the peers in the same run.
fn retry_first_attempt(c: &mut Criterion) {
    let fs = failsafe_consecutive(5, Duration::from_secs(30));
    let rc = Recloser::default();

    let mut g = c.benchmark_group("retry_1_thread");
    g.bench_function("floor: bare call", |b| each(b, bare));
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        each(b, bare_fetch_add)
    });
    g.bench_function("failsafe", |b| each(b, || fs.call(|| work(arg()))));
    g.bench_function("recloser", |b| each(b, || rc.call(|| work(arg()))));
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        each(b, || consecutive(arg()))
    });
    g.bench_function("failfast: #[retry] #[circuit_breaker]", |b| {
        each(b, || retried(arg()))
    });
    g.bench_function("failfast: #[retry] alone", |b| {
        each(b, || retried_alone(arg()))
    });
    g.finish();

    let mut g = c.benchmark_group("retry_2_threads");
    g.bench_function("floor: bare call + shared fetch_add", |b| {
        b.iter_custom(|n| two_threads(Clock::Wall, n, bare_fetch_add))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| two_threads(Clock::Wall, n, || rc.call(|| work(arg()))))
    });
    g.bench_function("failfast: #[circuit_breaker]", |b| {
        b.iter_custom(|n| two_threads(Clock::Wall, n, || consecutive(arg())))
    });
    g.bench_function("failfast: #[retry] #[circuit_breaker]", |b| {
        b.iter_custom(|n| two_threads(Clock::Wall, n, || retried(arg())))
    });
    g.finish();
}

criterion_group!(
    benches,
    closed_consecutive,
    closed_rate,
    trait_object,
    async_call,
    timeout,
    open_rejected,
    retry_first_attempt
);
criterion_main!(benches);
