//! The registry with many breakers, as keyed breakers (one per host or tenant)
//! will create them: registering a batch of 10,000 or 40,000 breakers, and
//! looking up a name that is not there with 40,000 registered.
//!
//! Run with `cargo bench -p failfast-benches --bench registry`. Registration
//! used to rescan every entry under the lock (10,000 in 161 ms, 40,000 in
//! 4.45 s; a miss 1.4 ms at 40,000); it is now O(1) amortised, so the
//! per-breaker cost stays flat.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use failfast::{Breaker, registry};

fn breakers(n: usize) -> Vec<Arc<Breaker>> {
    (0..n)
        .map(|i| {
            let name: &'static str = Box::leak(format!("host-{i}").into_boxed_str());
            Arc::new(Breaker::builder().name(name).build().unwrap())
        })
        .collect()
}

fn register_batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry_register");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for n in [10_000, 40_000] {
        g.bench_function(format!("{n} breakers"), |b| {
            b.iter_batched(
                || breakers(n),
                |batch| {
                    for breaker in &batch {
                        registry::register(breaker);
                    }
                    batch // dropped outside the timing
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

fn get_miss(c: &mut Criterion) {
    let kept = breakers(40_000);
    for breaker in &kept {
        registry::register(breaker);
    }
    c.bench_function("registry_get/miss with 40000 registered", |b| {
        b.iter(|| registry::get(black_box("no-such-breaker")).is_none());
    });
    c.bench_function("registry_get/hit with 40000 registered", |b| {
        b.iter(|| registry::get(black_box("host-20000")).is_some());
    });
    drop(kept);
}

criterion_group!(benches, register_batch, get_miss);
criterion_main!(benches);
