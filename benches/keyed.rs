//! The keyed path, every figure in the calling thread's CPU time (time spent
//! descheduled on a busy machine is left out; two-thread rows are each
//! thread's CPU time per call, averaged over the two):
//!
//! - `keyed_hit_*_cpu`: a call through the breaker of an existing short
//!   string key (`"10.0.0.1"`), on one thread and on two threads sharing the
//!   key: `#[circuit_breaker(key = host)]` beside the same function without
//!   `key` and a single breaker's `call` (the floor), then `Family::lease`
//!   (what the attribute holds for a call), `Family::get`
//!   (an `Arc` clone per call) and the `RwLock<HashMap<String, Arc<Breaker>>>`
//!   a user writes by hand.
//! - `keyed_scaling_*_cpu/N keys`: `Family::lease` over families of 1, 1,000
//!   and 100,000 keys: a hit (the keys in turn), and a miss (a key the
//!   family has never seen, into a full family: one Closed member evicted,
//!   one built).
//! - `keyed_failover_*_cpu/N members`: `FamilyRef::failover(&labels).next()`,
//!   the pick of the next replica in turn, among 3 and 1,000 members, every
//!   one Closed, and with one replica in three forced open (so a pick lands
//!   on a refusing one a third of the time), on one thread and on two
//!   sharing the family's rotation.
//! - `keyed_map_hit_*_cpu`: the lookup alone in the two lock-free maps
//!   `Family` could stand on, papaya's `HashMap` and scc's `HashIndex`
//!   (1,000 keys, foldhash, a value behind an `Arc`).
//!
//! The memory a key takes is measured once at the start with a counting
//! allocator (bytes held by a family of N keys, over N) and printed.
//!
//! Run with `cargo bench -p failfast-benches --bench keyed -- --warm-up-time 1 --measurement-time 3`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use criterion::{Criterion, criterion_group, criterion_main};
use failfast::{Breaker, Family, Rejected, circuit_breaker};

#[path = "support/mod.rs"]
mod support;
use support::threads::{on_cpu, two_threads_on_cpu as on_two_threads};

/// Counts the bytes held, to measure the memory of a key.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) };
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The family sizes of the scaling rows.
const SIZES: [usize; 3] = [1, 1_000, 100_000];

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

/// The same function as `work`, guarded by one breaker.
#[inline(never)]
#[circuit_breaker(threshold = 5, recovery = "30s")]
fn unkeyed(x: u64) -> Result<(), Fault> {
    work(x)
}

/// The same function as `work`, guarded by the breaker of `host`.
#[inline(never)]
#[circuit_breaker(key = host, threshold = 5, recovery = "30s")]
fn keyed(host: &str, x: u64) -> Result<(), Fault> {
    let _ = host;
    work(x)
}

/// `n` keys of at most 11 bytes, like `"10.1.134.159"`.
fn hosts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255))
        .collect()
}

thread_local! {
    static NTH: Cell<usize> = const { Cell::new(0) };
    static FRESH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The next key of `keys`, in turn.
fn next(keys: &[String]) -> &str {
    let n = NTH.get().wrapping_add(1);
    NTH.set(n);
    &keys[n % keys.len()]
}

/// Keys no family has seen yet.
static FRESH_KEYS: AtomicU64 = AtomicU64::new(0);

/// Runs `f` with a key never used before (written into a reused buffer).
fn fresh<R>(f: impl FnOnce(&str) -> R) -> R {
    FRESH.with_borrow_mut(|key| {
        key.clear();
        let _ = write!(key, "f-{}", FRESH_KEYS.fetch_add(1, Ordering::Relaxed));
        f(key.as_str())
    })
}

fn family(max_keys: usize) -> Family<String> {
    Family::builder(Breaker::builder().name("bench.keyed").max_keys(max_keys))
        .build()
        .unwrap()
}

/// A family holding a breaker for each of `keys`.
fn filled(keys: &[String]) -> Family<String> {
    let f = family(keys.len());
    for k in keys {
        drop(f.lease(k.as_str()));
    }
    f
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

/// Bytes held after `make` minus before, over `n`.
fn bytes_per_key(n: usize, make: impl FnOnce() -> Box<dyn std::any::Any>) -> isize {
    let before = HELD.load(Ordering::Relaxed);
    let kept = make();
    let per_key = (HELD.load(Ordering::Relaxed) - before) / n as isize;
    drop(kept);
    per_key
}

fn memory() {
    for n in SIZES {
        let keys = hosts(n);
        let family_bytes = bytes_per_key(n, || Box::new(filled(&keys)));
        let hand_bytes = bytes_per_key(n, || Box::new(by_hand(&keys)));
        println!(
            "memory per key ({n} keys like \"10.0.3.255\"): Family {family_bytes} bytes, \
             hand-made RwLock<HashMap<String, Arc<Breaker>>> {hand_bytes} bytes \
             (size_of Breaker = {}, Member = {})",
            std::mem::size_of::<Breaker>(),
            std::mem::size_of::<failfast::Member>(),
        );
    }
}

fn hits(c: &mut Criterion) {
    memory();
    let host = "10.0.0.1";
    let one = family(16);
    drop(one.lease(host));
    let hand = by_hand(&[host.to_owned()]);
    let single = Breaker::builder().build().unwrap();
    let floor = || single.call(|| work(black_box(1))).is_ok();
    // What sharing one counter costs when both threads do run at once: if
    // this row is not slower on two threads than on one, the machine did
    // not run the two threads together enough for the run to show it.
    let shared = AtomicU64::new(0);
    let floor_shared = || {
        shared.fetch_add(1, Ordering::Relaxed);
        single.call(|| work(black_box(1))).is_ok()
    };
    let attribute = || unkeyed(black_box(1)).is_ok();
    let attribute_keyed = || keyed(black_box(host), black_box(1)).is_ok();
    let lease = || {
        one.lease(black_box(host))
            .call(|| work(black_box(1)))
            .is_ok()
    };
    let get = || one.get(black_box(host)).call(|| work(black_box(1))).is_ok();
    let hand_call = || by_hand_call(&hand, black_box(host));

    let mut g = c.benchmark_group("keyed_hit_1_thread_cpu");
    g.bench_function("floor: one breaker, no key", |b| {
        b.iter_custom(|n| on_cpu(n, floor))
    });
    g.bench_function("floor + a shared fetch_add", |b| {
        b.iter_custom(|n| on_cpu(n, floor_shared))
    });
    g.bench_function("#[circuit_breaker]", |b| {
        b.iter_custom(|n| on_cpu(n, attribute))
    });
    g.bench_function("#[circuit_breaker(key = host)]", |b| {
        b.iter_custom(|n| on_cpu(n, attribute_keyed))
    });
    g.bench_function("Family::lease", |b| b.iter_custom(|n| on_cpu(n, lease)));
    g.bench_function("Family::get (Arc clone)", |b| {
        b.iter_custom(|n| on_cpu(n, get))
    });
    g.bench_function("by hand: RwLock<HashMap<String, Arc<Breaker>>>", |b| {
        b.iter_custom(|n| on_cpu(n, hand_call))
    });
    g.finish();

    let mut g = c.benchmark_group("keyed_hit_2_threads_cpu");
    g.bench_function("floor: one breaker, no key", |b| {
        b.iter_custom(|n| on_two_threads(n, floor))
    });
    g.bench_function("floor + a shared fetch_add", |b| {
        b.iter_custom(|n| on_two_threads(n, floor_shared))
    });
    g.bench_function("#[circuit_breaker]", |b| {
        b.iter_custom(|n| on_two_threads(n, attribute))
    });
    g.bench_function("#[circuit_breaker(key = host)]", |b| {
        b.iter_custom(|n| on_two_threads(n, attribute_keyed))
    });
    g.bench_function("Family::lease", |b| {
        b.iter_custom(|n| on_two_threads(n, lease))
    });
    g.bench_function("Family::get (Arc clone)", |b| {
        b.iter_custom(|n| on_two_threads(n, get))
    });
    g.bench_function("by hand: RwLock<HashMap<String, Arc<Breaker>>>", |b| {
        b.iter_custom(|n| on_two_threads(n, hand_call))
    });
    g.finish();
}

fn scaling(c: &mut Criterion) {
    for n in SIZES {
        let keys = hosts(n);
        let full = filled(&keys);
        let label = format!("{n} keys");
        let hit = || full.lease(next(&keys)).call(|| work(black_box(1))).is_ok();
        // Each miss evicts one of the keys above, so later hits in this
        // family would miss: the hit rows run first.
        let miss = || fresh(|key| full.lease(key).call(|| work(black_box(1))).is_ok());

        let mut g = c.benchmark_group("keyed_scaling_hit_1_thread_cpu");
        g.bench_function(&label, |b| b.iter_custom(|n| on_cpu(n, hit)));
        g.finish();
        let mut g = c.benchmark_group("keyed_scaling_hit_2_threads_cpu");
        g.bench_function(&label, |b| b.iter_custom(|n| on_two_threads(n, hit)));
        g.finish();
        let mut g = c.benchmark_group("keyed_scaling_miss_1_thread_cpu");
        g.bench_function(&label, |b| b.iter_custom(|n| on_cpu(n, miss)));
        g.finish();
        let mut g = c.benchmark_group("keyed_scaling_miss_2_threads_cpu");
        g.bench_function(&label, |b| b.iter_custom(|n| on_two_threads(n, miss)));
        g.finish();
    }
}

fn failover(c: &mut Criterion) {
    for n in [3, 1_000] {
        let keys = hosts(n);
        let healthy = filled(&keys);
        let sick = filled(&keys);
        for key in keys.iter().step_by(3) {
            sick.get(key.as_str()).set_mode(failfast::Mode::ForcedOpen);
        }
        let label = format!("{n} members");
        let pick = |family: &Family<String>| family.failover(&keys).next().is_some();
        for (group, family) in [("all closed", &healthy), ("1 in 3 open", &sick)] {
            let mut g = c.benchmark_group(format!("keyed_failover_1_thread_cpu/{group}"));
            g.bench_function(&label, |b| b.iter_custom(|n| on_cpu(n, || pick(family))));
            g.finish();
            let mut g = c.benchmark_group(format!("keyed_failover_2_threads_cpu/{group}"));
            g.bench_function(&label, |b| {
                b.iter_custom(|n| on_two_threads(n, || pick(family)))
            });
            g.finish();
        }
    }
}

fn maps(c: &mut Criterion) {
    let keys = hosts(1_000);
    let papaya: papaya::HashMap<String, Arc<u64>, foldhash::fast::RandomState> =
        papaya::HashMap::builder()
            .hasher(foldhash::fast::RandomState::default())
            .build();
    let scc: scc::HashIndex<String, Arc<u64>, foldhash::fast::RandomState> =
        scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
    for (i, k) in keys.iter().enumerate() {
        papaya.pin().insert(k.clone(), Arc::new(i as u64));
        let _ = scc.insert_sync(k.clone(), Arc::new(i as u64));
    }
    let papaya_get = || {
        let guard = papaya.guard();
        **papaya.get(next(&keys), &guard).unwrap()
    };
    let scc_get = || scc.peek_with(next(&keys), |_, v| **v).unwrap();

    let mut g = c.benchmark_group("keyed_map_hit_1_thread_cpu");
    g.bench_function("papaya HashMap", |b| {
        b.iter_custom(|n| on_cpu(n, papaya_get))
    });
    g.bench_function("scc HashIndex", |b| b.iter_custom(|n| on_cpu(n, scc_get)));
    g.finish();
    let mut g = c.benchmark_group("keyed_map_hit_2_threads_cpu");
    g.bench_function("papaya HashMap", |b| {
        b.iter_custom(|n| on_two_threads(n, papaya_get))
    });
    g.bench_function("scc HashIndex", |b| {
        b.iter_custom(|n| on_two_threads(n, scc_get))
    });
    g.finish();
}

criterion_group!(benches, hits, scaling, failover, maps);
criterion_main!(benches);
