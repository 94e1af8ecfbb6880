//! What `failfast::tower::CircuitBreakerLayer` adds to a call through a
//! tower service, side by side with the bare service and with
//! tower-resilience's circuit breaker layer (`tower-resilience-circuitbreaker`
//! 0.14, its defaults).
//!
//! Each case is a caller's loop on a current-thread tokio runtime (on a
//! thread of its own): wait for
//! the service to be ready, call it, await the response. The inner service is
//! a `tower::service_fn` answering `200 OK` at once (an empty
//! `http::Response<()>`), so the figures are the layer's own cost.
//!
//! Two-thread cases run that loop on two threads, each with its own clone of
//! the service and its own runtime, sharing one breaker; the time per call is
//! the wall time from the first thread's start to the last one's finish,
//! divided by the calls one thread made.
//!
//! ```sh
//! cargo bench --bench tower --features tower
//! ```

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use failfast::tower::CircuitBreakerLayer;
use failfast::Breaker;
use tower::{service_fn, Layer, Service, ServiceExt};

type Response = http::Response<()>;

/// The inner service: answers `200 OK` at once.
fn ok_service(
) -> impl Service<u64, Response = Response, Error = Infallible, Future: Send> + Clone + Send {
    service_fn(|x: u64| {
        black_box(x);
        std::future::ready(Ok::<_, Infallible>(http::Response::new(())))
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// `iters` calls of `service`, each awaited after waiting for readiness.
async fn calls<S>(service: &mut S, iters: u64)
where
    S: Service<u64, Response = Response>,
    S::Error: std::fmt::Debug,
{
    for i in 0..iters {
        let ready = service.ready().await.expect("ready");
        let response = ready.call(i).await.expect("admitted");
        black_box(&response);
    }
}

/// `iters` calls on each of `threads` threads released together, each with
/// a clone of `service` and a runtime of its own.
fn on_threads<S>(threads: usize, service: S, iters: u64) -> Duration
where
    S: Service<u64, Response = Response> + Clone + Send,
    S::Error: std::fmt::Debug,
    S::Future: Send,
{
    let start = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let mut service = service.clone();
                let start = &start;
                s.spawn(move || {
                    let rt = runtime();
                    start.wait();
                    let began = Instant::now();
                    rt.block_on(calls(&mut service, iters));
                    (began, Instant::now())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect()
    });
    let began = spans.iter().map(|s| s.0).min().expect("a thread");
    let ended = spans.iter().map(|s| s.1).max().expect("a thread");
    ended - began
}

fn leaked_breaker() -> &'static Breaker {
    Box::leak(Box::new(
        Breaker::builder()
            .name("bench-tower")
            .build()
            .expect("valid"),
    ))
}

fn arc_breaker() -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name("bench-tower-arc")
            .build()
            .expect("valid"),
    )
}

fn tower_resilience<S>(
    inner: S,
) -> impl Service<u64, Response = Response, Error: std::fmt::Debug, Future: Send> + Clone + Send
where
    S: Service<u64, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("valid settings")
        .layer(inner)
}

/// The cases, each on `threads` threads sharing one breaker.
fn group(c: &mut Criterion, name: &str, threads: usize) {
    let leaked = leaked_breaker();
    let shared = arc_breaker();
    let mut g = c.benchmark_group(name);
    g.bench_function("floor: bare service_fn", |b| {
        b.iter_custom(|iters| on_threads(threads, ok_service(), iters))
    });
    g.bench_function("failfast: layer, &'static Breaker", |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                CircuitBreakerLayer::new(leaked).layer(ok_service()),
                iters,
            )
        })
    });
    g.bench_function("failfast: layer, Arc<Breaker>", |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                CircuitBreakerLayer::new(shared.clone()).layer(ok_service()),
                iters,
            )
        })
    });
    g.bench_function("tower-resilience", |b| {
        b.iter_custom(|iters| on_threads(threads, tower_resilience(ok_service()), iters))
    });
    g.finish();
}

fn one_thread(c: &mut Criterion) {
    group(c, "tower_1_thread", 1);
}

fn two_threads(c: &mut Criterion) {
    group(c, "tower_2_threads", 2);
}

criterion_group!(benches, one_thread, two_threads);
criterion_main!(benches);
