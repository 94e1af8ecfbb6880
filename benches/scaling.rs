//! How the cost of a call and of the registry grows with the work: count
//! windows of 10 to 1,000,000 calls, time windows of 1 s to 1 h, and 1 to
//! 100,000 registered breakers. Each group is one thread, the same call as in
//! `benches/breaker.rs` (`Breaker::call` of an `#[inline(never)]` function),
//! so the figures compare across rows: a flat row is the claim.
//!
//! Run with `cargo bench --bench scaling`; the memory each window shape takes
//! is printed once at the start (it is computed from the layout, not
//! measured).

use std::cell::Cell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use failfast::{registry, Breaker};

#[derive(Debug, Clone, Copy)]
pub struct Fault;

#[inline(never)]
fn work(x: u64) -> Result<(), Fault> {
    if x == u64::MAX {
        Err(Fault)
    } else {
        Ok(())
    }
}

thread_local! {
    static NTH: Cell<u32> = const { Cell::new(0) };
}

/// `u64::MAX` (a failure) once every 64 calls, else 1.
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

/// Bytes a count window of `calls` keeps besides the breaker itself: a
/// failure bit and a slow bit per call.
fn count_window_bytes(calls: u32) -> usize {
    2 * (calls as usize).div_ceil(64) * 8
}

fn window_calls(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling_window_calls");
    for calls in [10u32, 100, 10_000, 1_000_000] {
        println!(
            "count window of {calls} calls: {} bytes of bits beside the breaker",
            count_window_bytes(calls)
        );
        let healthy = rate_breaker(|b| b.window_calls(calls));
        g.bench_function(format!("{calls} calls/success"), |b| {
            b.iter(|| black_box(healthy.call(|| work(black_box(1)))).is_ok());
        });
        let failing = rate_breaker(|b| b.window_calls(calls));
        g.bench_function(format!("{calls} calls/1 in 64 failing"), |b| {
            b.iter(|| black_box(failing.call(|| work(arg_1_in_64()))).is_ok());
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
        let healthy = rate_breaker(|b| b.window_time(length));
        g.bench_function(format!("{label}/success"), |b| {
            b.iter(|| black_box(healthy.call(|| work(black_box(1)))).is_ok());
        });
        let failing = rate_breaker(|b| b.window_time(length));
        g.bench_function(format!("{label}/1 in 64 failing"), |b| {
            b.iter(|| black_box(failing.call(|| work(arg_1_in_64()))).is_ok());
        });
    }
    g.finish();
}

fn registry_size(c: &mut Criterion) {
    println!(
        "a breaker: {} bytes (consecutive rule, no window)",
        std::mem::size_of::<Breaker>()
    );
    let mut g = c.benchmark_group("scaling_registry");
    g.sample_size(20);
    let mut kept: Vec<Arc<Breaker>> = Vec::new();
    for n in [1usize, 1_000, 100_000] {
        while kept.len() < n {
            let name: &'static str = Box::leak(format!("scaling-{}", kept.len()).into_boxed_str());
            let breaker = Arc::new(Breaker::builder().name(name).build().unwrap());
            registry::register(&breaker);
            kept.push(breaker);
        }
        let hit: &'static str = Box::leak(format!("scaling-{}", n / 2).into_boxed_str());
        g.bench_function(format!("{n} breakers/get hit"), |b| {
            b.iter(|| registry::get(black_box(hit)).is_some());
        });
        g.bench_function(format!("{n} breakers/get miss"), |b| {
            b.iter(|| registry::get(black_box("no-such-breaker")).is_none());
        });
        g.bench_function(format!("{n} breakers/all"), |b| {
            b.iter(|| black_box(registry::all()).len());
        });
    }
    g.finish();
}

criterion_group!(benches, window_calls, window_time, registry_size);
criterion_main!(benches);
