//! What a closed call costs with the `metrics` feature, before and after
//! the library finds a recorder: before, the call reads one relaxed atomic
//! more than without the feature; after, every call is timed for
//! `failfast_call_duration_seconds` (two clock readings, off the fast path)
//! and its duration handed to the recorder. The recorder here only counts
//! the values it is given, so the second figure is the library's cost with
//! the cheapest recorder there can be; a real exporter adds its own.
//!
//! ```text
//! cargo bench -p failfast-benches --features metrics --bench durations
//! ```
//!
//! A process of its own: once found, a recorder times calls for the life of
//! the process, so the first case must run before any bench installs one.

use criterion::{Criterion, criterion_group, criterion_main};
use failfast::{Breaker, Outcome, registry};
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A recorder that counts the histogram values it is given and drops
/// everything else.
struct Counting {
    values: Arc<Values>,
}

struct Values(AtomicU64);

impl HistogramFn for Values {
    fn record(&self, _value: f64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Recorder for Counting {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::clone(&self.values))
    }
}

fn call(breaker: &Breaker, x: u64) -> u64 {
    match breaker.acquire() {
        Ok(permit) => {
            let y = black_box(x).wrapping_mul(31);
            permit.record(Outcome::Success);
            y
        }
        Err(_) => 0,
    }
}

fn durations(c: &mut Criterion) {
    let breaker = Arc::new(
        Breaker::builder()
            .name("bench::durations")
            .threshold(5)
            .build()
            .unwrap(),
    );
    // Registered with no recorder installed: none is found, calls go untimed.
    registry::register(&breaker);
    let mut g = c.benchmark_group("closed_durations");
    let mut x = 0u64;
    g.bench_function("unprotected", |b| {
        b.iter(|| {
            x += 1;
            black_box(black_box(x).wrapping_mul(31))
        })
    });
    g.bench_function("metrics feature, no recorder", |b| {
        b.iter(|| {
            x += 1;
            black_box(call(&breaker, x))
        })
    });
    let values = Arc::new(Values(AtomicU64::new(0)));
    metrics::set_global_recorder(Counting {
        values: Arc::clone(&values),
    })
    .expect("the only recorder");
    // Finds the recorder: from now on every call is timed and recorded.
    failfast::metrics::export();
    g.bench_function("durations recorded (a counting recorder)", |b| {
        b.iter(|| {
            x += 1;
            black_box(call(&breaker, x))
        })
    });
    g.finish();
    assert!(
        values.0.load(Ordering::Relaxed) > 0,
        "the calls were recorded"
    );
}

criterion_group!(benches, durations);
criterion_main!(benches);
