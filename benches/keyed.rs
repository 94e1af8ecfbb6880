//! The keyed path: a call through the breaker of an existing key (hit), and
//! through a new key's breaker in a full family (miss: one Closed breaker
//! evicted, one built), on one and two threads.
//!
//! First the two lock-free concurrent maps `Family` could stand on, papaya's
//! `HashMap` and scc's `HashIndex`, measured on the lookup alone (1,024 short
//! string keys, foldhash, a value behind an `Arc`), beside the
//! `RwLock<HashMap>` a user writes by hand. Then the whole call: `Family::with`
//! and `Family::get` against that hand-made map of `Arc<Breaker>` and a single
//! breaker's `call` (the floor: one breaker, no lookup).
//!
//! Run with `cargo bench --bench keyed`; the memory one key takes is measured
//! once at the start (bytes allocated for 1,024 keys, divided by 1,024) and
//! printed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Barrier, RwLock};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use failfast::{Breaker, Family};

/// Counts the bytes held, to measure the memory of a key.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const KEYS: usize = 1024;

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

fn hosts() -> Vec<String> {
    (0..KEYS)
        .map(|i| format!("10.0.{}.{}", i / 256, i % 256))
        .collect()
}

thread_local! {
    static NTH: Cell<usize> = const { Cell::new(0) };
}

/// The next key of `keys`, in turn.
fn next(keys: &[String]) -> &str {
    let n = NTH.get().wrapping_add(1);
    NTH.set(n);
    &keys[n % keys.len()]
}

fn family(max_keys: usize) -> Family<String> {
    Family::builder(Breaker::builder().name("bench.keyed"))
        .max_keys(max_keys)
        .build()
        .unwrap()
}

/// The map a user writes by hand.
type ByHand = RwLock<HashMap<String, Arc<Breaker>, foldhash::fast::RandomState>>;

fn by_hand(keys: &[String]) -> ByHand {
    let map = keys
        .iter()
        .map(|k| (k.clone(), Arc::new(Breaker::builder().build().unwrap())))
        .collect();
    RwLock::new(map)
}

fn by_hand_call(map: &ByHand, key: &str) -> bool {
    let breaker = Arc::clone(map.read().unwrap().get(key).unwrap());
    breaker.call(|| work(black_box(1))).is_ok()
}

/// Runs `call` `iters` times on each of two threads released together; the
/// wall time from the first start to the last finish, per thread's call.
fn on_two_threads<R>(iters: u64, call: impl Fn() -> R + Sync) -> Duration {
    let start = Barrier::new(2);
    let (began, ended) = std::thread::scope(|s| {
        let spans: Vec<(Instant, Instant)> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..iters {
                        black_box(&call());
                    }
                    (began, Instant::now())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect();
        (
            spans.iter().map(|s| s.0).min().unwrap(),
            spans.iter().map(|s| s.1).max().unwrap(),
        )
    });
    ended - began
}

/// Bytes held after `make` minus before, over `KEYS`.
fn bytes_per_key(make: impl FnOnce() -> Box<dyn std::any::Any>) -> isize {
    let before = HELD.load(Ordering::Relaxed);
    let kept = make();
    let per_key = (HELD.load(Ordering::Relaxed) - before) / KEYS as isize;
    drop(kept);
    per_key
}

fn memory() {
    let keys = hosts();
    let family_bytes = bytes_per_key(|| {
        let f = family(KEYS);
        for k in &keys {
            let _ = f.get(k.as_str());
        }
        Box::new(f)
    });
    let hand_bytes = bytes_per_key(|| Box::new(by_hand(&keys)));
    println!(
        "memory per key ({KEYS} keys like \"10.0.3.255\"): Family {family_bytes} bytes, \
         hand-made RwLock<HashMap<String, Arc<Breaker>>> {hand_bytes} bytes \
         (size_of Breaker = {})",
        std::mem::size_of::<Breaker>()
    );
}

fn maps(c: &mut Criterion) {
    memory();
    let keys = hosts();
    let papaya: papaya::HashMap<String, Arc<u64>, foldhash::fast::RandomState> =
        papaya::HashMap::builder()
            .hasher(foldhash::fast::RandomState::default())
            .build();
    let scc: scc::HashIndex<String, Arc<u64>, foldhash::fast::RandomState> =
        scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
    let std: RwLock<HashMap<String, Arc<u64>, foldhash::fast::RandomState>> =
        RwLock::new(HashMap::default());
    for (i, k) in keys.iter().enumerate() {
        papaya.pin().insert(k.clone(), Arc::new(i as u64));
        let _ = scc.insert_sync(k.clone(), Arc::new(i as u64));
        std.write().unwrap().insert(k.clone(), Arc::new(i as u64));
    }
    for (label, n) in [("3 keys", 3), ("1024 keys", KEYS)] {
        let keys = &keys[..n];
        let papaya_get = || {
            let guard = papaya.guard();
            **papaya.get(next(keys), &guard).unwrap()
        };
        let scc_get = || scc.peek_with(next(keys), |_, v| **v).unwrap();
        let std_get = || **std.read().unwrap().get(next(keys)).unwrap();

        let mut g = c.benchmark_group(format!("keyed_map_hit_1_thread/{label}"));
        g.bench_function("papaya HashMap", |b| b.iter(papaya_get));
        g.bench_function("scc HashIndex", |b| b.iter(scc_get));
        g.bench_function("std RwLock<HashMap>", |b| b.iter(std_get));
        g.finish();

        let mut g = c.benchmark_group(format!("keyed_map_hit_2_threads/{label}"));
        g.bench_function("papaya HashMap", |b| {
            b.iter_custom(|n| on_two_threads(n, papaya_get))
        });
        g.bench_function("scc HashIndex", |b| {
            b.iter_custom(|n| on_two_threads(n, scc_get))
        });
        g.bench_function("std RwLock<HashMap>", |b| {
            b.iter_custom(|n| on_two_threads(n, std_get))
        });
        g.finish();
    }
}

fn calls(c: &mut Criterion) {
    let keys = hosts();
    let hits = family(KEYS);
    for k in &keys {
        let _ = hits.get(k.as_str());
    }
    let hand = by_hand(&keys);
    let single = Breaker::builder().build().unwrap();
    let floor = || single.call(|| work(black_box(1))).is_ok();

    for (label, n) in [("3 keys", 3), ("1024 keys", KEYS)] {
        let keys = &keys[..n];
        let with = || hits.with(next(keys), |m| m.call(|| work(black_box(1))).is_ok());
        let get = || hits.get(next(keys)).call(|| work(black_box(1))).is_ok();
        let hand_call = || by_hand_call(&hand, next(keys));

        let mut g = c.benchmark_group(format!("keyed_hit_1_thread/{label}"));
        g.bench_function("floor: one breaker, no key", |b| b.iter(floor));
        g.bench_function("Family::with", |b| b.iter(with));
        g.bench_function("Family::get", |b| b.iter(get));
        g.bench_function("by hand: RwLock<HashMap<String, Arc<Breaker>>>", |b| {
            b.iter(hand_call)
        });
        g.finish();

        let mut g = c.benchmark_group(format!("keyed_hit_2_threads/{label}"));
        g.bench_function("floor: one breaker, no key", |b| {
            b.iter_custom(|n| on_two_threads(n, floor))
        });
        g.bench_function("Family::with", |b| {
            b.iter_custom(|n| on_two_threads(n, with))
        });
        g.bench_function("Family::get", |b| b.iter_custom(|n| on_two_threads(n, get)));
        g.bench_function("by hand: RwLock<HashMap<String, Arc<Breaker>>>", |b| {
            b.iter_custom(|n| on_two_threads(n, hand_call))
        });
        g.finish();
    }

    // Misses: every call a key the family has not seen, the family full of
    // Closed breakers, so each call evicts one and builds one.
    let full = family(KEYS);
    for k in &keys {
        let _ = full.get(k.as_str());
    }
    let fresh: Vec<String> = (0..1 << 16).map(|i| format!("fresh-{i}")).collect();
    let miss = || full.with(next(&fresh), |m| m.call(|| work(black_box(1))).is_ok());
    let mut g = c.benchmark_group("keyed_miss");
    g.bench_function("1 thread, full family of 1024", |b| b.iter(miss));
    g.bench_function("2 threads, full family of 1024", |b| {
        b.iter_custom(|n| on_two_threads(n, miss))
    });
    g.finish();
}

criterion_group!(benches, maps, calls);
criterion_main!(benches);
