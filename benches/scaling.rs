//! How the cost of a call and of the registry grows with the work: count
//! windows of 10 to 1,000,000 calls, time windows of 1 s to 1 h, 1 to
//! 100,000 registered breakers, and one thread to two threads sharing a
//! breaker on every path. Each call is the same as in `benches/breaker.rs`
//! (`Breaker::call` of an `#[inline(never)]` function), so the figures
//! compare across rows: a flat row is the claim. Every case is timed in the
//! CPU time of the threads that make the calls (`support/threads.rs`), which
//! leaves out the time they spent descheduled on a busy machine.
//!
//! Run with
//! `cargo bench -p failfast-benches --bench scaling -- --warm-up-time 1 --measurement-time 3`;
//! `python3 benches/scaling_table.py` then prints its tables (how
//! each call path scales from one thread to two).
//!
//! What is not a criterion timing is measured once at setup and written to
//! `scaling_setup.tsv`, beside criterion's results (`criterion/` under
//! `$CARGO_TARGET_DIR`, else `target`):
//!
//! - the heap each window shape takes, measured with the counting allocator
//!   below (a breaker built, boxed, and called once so that its window and
//!   its per-thread totals exist), next to the breaker's inline size;
//! - for 1, 1,000 and 100,000 registered breakers: the CPU time one
//!   `registry::register` took, averaged over the breakers registered to
//!   reach that count, and the heap each breaker and its registry entry take.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use failfast::{Breaker, ManualClock, Rejected, State, circuit_breaker, registry};

#[path = "support/mod.rs"]
mod support;
use support::cpu_time::thread_cpu_time;
use support::threads::{on_cpu, two_threads_on_cpu};

/// The system allocator, keeping the number of bytes live on the heap.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are ours; the count is one atomic
// update beside it, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract; passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes live on the heap now (every thread).
fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Figures measured once at setup, written to `criterion/scaling_setup.tsv`
/// for `benches/scaling_table.py`: one `section, case, value, unit` per line.
fn record(section: &str, case: &str, value: f64, unit: &str) {
    println!("{section}: {case}: {value:.1} {unit}");
    // A bench runs in its package's directory (`benches/`); criterion's
    // results are under the workspace's target directory.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the benches crate is in the workspace");
    let dir = workspace
        .join(
            std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| PathBuf::from("target"), PathBuf::from),
        )
        .join("criterion");
    let path = dir.join("scaling_setup.tsv");
    let mut kept = std::fs::read_to_string(&path).unwrap_or_default();
    let key = format!("{section}\t{case}\t");
    kept =
        kept.lines()
            .filter(|line| !line.starts_with(&key))
            .fold(String::new(), |mut out, line| {
                let _ = writeln!(out, "{line}");
                out
            });
    let _ = writeln!(kept, "{key}{value}\t{unit}");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(&path, kept);
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Fault;

impl From<Rejected> for Fault {
    fn from(_: Rejected) -> Self {
        Fault
    }
}

#[inline(never)]
fn work(x: u64) -> Result<(), Fault> {
    if x == u64::MAX { Err(Fault) } else { Ok(()) }
}

/// `work` behind a bulkhead of 64 places in front of its breaker: every
/// call takes a place and gives it back.
#[circuit_breaker(threshold = 5, recovery = "30s", max_concurrent = 64)]
fn bulkheaded(x: u64) -> Result<(), Fault> {
    work(x)
}

thread_local! {
    static NTH: Cell<u32> = const { Cell::new(0) };
}

/// `u64::MAX` (a failure) once every 64 calls on each thread, else 1.
fn arg_1_in_64() -> u64 {
    let n = NTH.get().wrapping_add(1);
    NTH.set(n);
    if n % 64 == 0 {
        black_box(u64::MAX)
    } else {
        black_box(1)
    }
}

fn rate_breaker(window: impl FnOnce(failfast::Builder) -> failfast::Builder) -> Breaker {
    window(Breaker::builder().failure_rate(0.5).min_calls(10))
        .build()
        .unwrap()
}

/// Records the heap a breaker built by `build` takes besides its inline size
/// once it has recorded a failure (its window and this thread's totals then
/// exist).
fn window_memory(case: &str, build: impl FnOnce() -> Breaker) {
    let before = live();
    let breaker = Box::new(build());
    let _ = breaker.call(|| work(u64::MAX));
    let heap = live() - before - std::mem::size_of::<Breaker>();
    record("memory", case, heap as f64, "bytes on the heap");
    drop(breaker);
}

fn window_calls(c: &mut Criterion) {
    record(
        "memory",
        "a breaker, inline",
        std::mem::size_of::<Breaker>() as f64,
        "bytes",
    );
    window_memory("consecutive rule, no window", || {
        Breaker::builder().build().unwrap()
    });
    let mut g = c.benchmark_group("scaling_window_calls");
    for calls in [10u32, 100, 10_000, 1_000_000] {
        window_memory(&format!("count window of {calls} calls"), || {
            rate_breaker(|b| b.window_calls(calls))
        });
        let healthy = rate_breaker(|b| b.window_calls(calls));
        g.bench_function(format!("{calls} calls/success"), |b| {
            b.iter_custom(|n| on_cpu(n, || healthy.call(|| work(black_box(1)))));
        });
        let failing = rate_breaker(|b| b.window_calls(calls));
        g.bench_function(format!("{calls} calls/1 in 64 failing"), |b| {
            b.iter_custom(|n| on_cpu(n, || failing.call(|| work(arg_1_in_64()))));
        });
    }
    g.finish();
}

fn window_time(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling_window_time");
    for (label, length) in [
        ("1s", Duration::from_secs(1)),
        ("1m", Duration::from_secs(60)),
        ("1h", Duration::from_secs(3600)),
    ] {
        window_memory(&format!("time window of {label}"), || {
            rate_breaker(|b| b.window_time(length))
        });
        let healthy = rate_breaker(|b| b.window_time(length));
        g.bench_function(format!("{label}/success"), |b| {
            b.iter_custom(|n| on_cpu(n, || healthy.call(|| work(black_box(1)))));
        });
        let failing = rate_breaker(|b| b.window_time(length));
        g.bench_function(format!("{label}/1 in 64 failing"), |b| {
            b.iter_custom(|n| on_cpu(n, || failing.call(|| work(arg_1_in_64()))));
        });
    }
    g.finish();
}

fn registry_size(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling_registry");
    g.sample_size(20);
    let mut kept: Vec<Arc<Breaker>> = Vec::new();
    for n in [1usize, 1_000, 100_000] {
        // Names are made first: they are the application's, not the
        // registry's.
        let names: Vec<&'static str> = (kept.len()..n)
            .map(|i| &*Box::leak(format!("scaling-{i}").into_boxed_str()))
            .collect();
        let added = names.len();
        let before = live();
        let built: Vec<Arc<Breaker>> = names
            .into_iter()
            .map(|name| Arc::new(Breaker::builder().name(name).build().unwrap()))
            .collect();
        let began = thread_cpu_time();
        for breaker in &built {
            registry::register(breaker);
        }
        let took = thread_cpu_time() - began;
        // The `Vec` holding them is the bench's, not the registry's.
        let heap = live() - before - built.capacity() * std::mem::size_of::<Arc<Breaker>>();
        kept.extend(built);
        record(
            "registry",
            &format!("{n} breakers/register"),
            took.as_nanos() as f64 / added as f64,
            &format!("ns per breaker, mean of the {added} registered to reach {n}"),
        );
        record(
            "registry",
            &format!("{n} breakers/memory"),
            heap as f64 / added as f64,
            "bytes on the heap per breaker with its registry entry (consecutive rule)",
        );
        let hit: &'static str = Box::leak(format!("scaling-{}", n / 2).into_boxed_str());
        g.bench_function(format!("{n} breakers/get hit"), |b| {
            b.iter_custom(|n| on_cpu(n, || registry::get(black_box(hit))));
        });
        g.bench_function(format!("{n} breakers/get miss"), |b| {
            b.iter_custom(|n| on_cpu(n, || registry::get(black_box("no-such-breaker"))));
        });
        g.bench_function(format!("{n} breakers/all"), |b| {
            b.iter_custom(|n| on_cpu(n, registry::all));
        });
    }
    g.finish();
}

/// The cases of one thread group, each timed with `$time` (`on_cpu` or
/// `two_threads_on_cpu`).
macro_rules! paths {
    ($group:expr, $time:ident, $paths:expr) => {{
        let (g, p) = (&mut $group, &$paths);
        g.bench_function("floor: bare call", |b| {
            b.iter_custom(|n| $time(n, || work(black_box(1))))
        });
        g.bench_function("closed success, consecutive", |b| {
            b.iter_custom(|n| $time(n, || p.consecutive.call(|| work(black_box(1)))))
        });
        g.bench_function("closed success, rate", |b| {
            b.iter_custom(|n| $time(n, || p.rate.call(|| work(black_box(1)))))
        });
        g.bench_function("rate, 1 in 64 failing", |b| {
            b.iter_custom(|n| $time(n, || p.failing.call(|| work(arg_1_in_64()))))
        });
        g.bench_function("closed success, time-window rate", |b| {
            b.iter_custom(|n| $time(n, || p.timed.call(|| work(black_box(1)))))
        });
        g.bench_function("time-window rate, 1 in 64 failing", |b| {
            b.iter_custom(|n| $time(n, || p.timed_failing.call(|| work(arg_1_in_64()))))
        });
        g.bench_function("open rejection", |b| {
            b.iter_custom(|n| $time(n, || p.open.call(|| work(black_box(1)))))
        });
        g.bench_function("half-open rejection", |b| {
            b.iter_custom(|n| $time(n, || p.half_open.call(|| work(black_box(1)))))
        });
        g.bench_function("bulkhead admission", |b| {
            b.iter_custom(|n| $time(n, || bulkheaded(black_box(1))))
        });
    }};
}

/// The breakers of the thread groups, one per path.
struct Paths<'a> {
    consecutive: &'a Breaker,
    rate: &'a Breaker,
    failing: &'a Breaker,
    timed: &'a Breaker,
    timed_failing: &'a Breaker,
    open: &'a Breaker,
    half_open: &'a Breaker,
}

/// Every path on one thread and on two threads sharing one breaker, in each
/// thread's CPU time per call (the `scaling_threads_1` and
/// `scaling_threads_2` groups have the same cases).
fn threads(c: &mut Criterion) {
    let consecutive = Breaker::builder()
        .threshold(5)
        .recovery(Duration::from_secs(30))
        .build()
        .unwrap();
    let rate = rate_breaker(|b| b.window_calls(100));
    let failing = rate_breaker(|b| b.window_calls(100));
    let timed = rate_breaker(|b| b.window_time(Duration::from_secs(60)));
    let timed_failing = rate_breaker(|b| b.window_time(Duration::from_secs(60)));

    let an_hour = Duration::from_secs(3600);
    let open = Breaker::builder()
        .threshold(1)
        .recovery(an_hour)
        .build()
        .unwrap();
    let _ = open.call(|| work(u64::MAX));
    assert_eq!(open.state(), State::Open);

    // Half-open with its one trial slot taken, on a clock that stands
    // still, so that the trial's lease never runs out and every call is
    // refused.
    let clock = ManualClock::new();
    let half_open = Breaker::builder()
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = half_open.call(|| work(u64::MAX));
    clock.advance(Duration::from_secs(2));
    let trial = half_open.acquire().expect("the trial call");
    assert!(trial.is_trial());
    assert!(
        half_open
            .call(|| work(1))
            .is_err_and(|e| matches!(e, failfast::Error::Rejected(_)))
    );

    let paths = Paths {
        consecutive: &consecutive,
        rate: &rate,
        failing: &failing,
        timed: &timed,
        timed_failing: &timed_failing,
        open: &open,
        half_open: &half_open,
    };
    let mut one = c.benchmark_group("scaling_threads_1");
    paths!(one, on_cpu, paths);
    one.finish();
    let mut two = c.benchmark_group("scaling_threads_2");
    paths!(two, two_threads_on_cpu, paths);
    two.finish();
    assert_eq!(
        half_open.state(),
        State::HalfOpen,
        "the trial slot stayed taken"
    );
    assert_eq!(consecutive.state(), State::Closed);
    assert_eq!(rate.state(), State::Closed);
    assert_eq!(failing.state(), State::Closed);
    assert_eq!(timed.state(), State::Closed);
    assert_eq!(timed_failing.state(), State::Closed);
    drop(trial);
}

criterion_group!(benches, window_calls, window_time, registry_size, threads);
criterion_main!(benches);
