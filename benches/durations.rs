//! What a closed call costs with the `metrics` feature, before and after
//! the library finds a recorder: before, the call reads one relaxed atomic
//! more than without the feature; after, every call is timed for
//! `failfast_call_duration_seconds` (two clock readings, off the fast path)
//! and its duration handed to the recorder. Two recorders, in the same
//! run: one that only counts the values it is given (the cheapest there
//! can be, so that figure is the library's own cost), and
//! `metrics-exporter-prometheus`'s, as a service installs it. Beside each,
//! what the recorder costs without a breaker (`histogram!(…).record(x)`,
//! the series' name and labels), and two readings of the precise clock
//! (`Instant::now()`, what the library adds to time a call): the share of
//! the timed call that is the recorder's, the clock's and the rest.
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
use std::time::{Duration, Instant};

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

/// What a service's own code costs to record one value into the duration
/// histogram under the series a breaker writes: the macro builds its key
/// from the literals, the recorder finds the series and records.
fn bare_record(x: u64) {
    #[allow(clippy::cast_precision_loss)]
    let seconds = (x & 0xff) as f64 * 1e-6;
    metrics::histogram!(
        "failfast_call_duration_seconds",
        "breaker" => "bench::durations",
        "outcome" => "success"
    )
    .record(black_box(seconds));
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
    g.bench_function("bare record (a counting recorder)", |b| {
        b.iter(|| {
            x += 1;
            bare_record(x);
        })
    });
    g.bench_function("two clock readings", |b| {
        b.iter(|| {
            let start = Instant::now();
            black_box(start);
            black_box(Instant::now().duration_since(start))
        })
    });
    // The exporter keeps every value until its upkeep drains them into the
    // series' summary (a service's exporter does so on a timer, off the
    // calls' threads): drained between batches, outside the time measured.
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = prometheus.handle();
    let batches = |run: &mut dyn FnMut(u64), iters: u64| {
        let mut took = Duration::ZERO;
        let mut done = 0;
        while done < iters {
            let n = (iters - done).min(1 << 16);
            let start = Instant::now();
            for i in 0..n {
                run(done + i);
            }
            took += start.elapsed();
            handle.run_upkeep();
            done += n;
        }
        took
    };
    metrics::with_local_recorder(&prometheus, || {
        g.bench_function("durations recorded (prometheus recorder)", |b| {
            b.iter_custom(|iters| {
                batches(
                    &mut |i| {
                        black_box(call(&breaker, i));
                    },
                    iters,
                )
            })
        });
        g.bench_function("bare record (prometheus recorder)", |b| {
            b.iter_custom(|iters| batches(&mut bare_record, iters))
        });
    });
    g.finish();
    assert!(
        values.0.load(Ordering::Relaxed) > 0,
        "the calls were recorded"
    );
    let text = handle.render();
    assert!(
        text.contains(
            "failfast_call_duration_seconds_count{breaker=\"bench::durations\",outcome=\"success\"}"
        ),
        "the prometheus recorder holds the durations:\n{text}"
    );
}

criterion_group!(benches, durations);
criterion_main!(benches);
