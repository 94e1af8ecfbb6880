//! What `failfast::tower::CircuitBreakerLayer` adds to a call through a
//! tower service, side by side with the bare service and with
//! tower-resilience's circuit breaker layer (`tower-resilience-circuitbreaker`
//! 0.14, its defaults).
//!
//! Each case is a caller's loop on a thread of its own: poll the service
//! until it is ready, call it, poll the response future until it is done.
//! The futures are polled in place with a no-op waker (inside a
//! current-thread tokio runtime's context, which tower-resilience's timers
//! need), so the harness adds no scheduler to the figures; a future that is
//! not ready yet (tower-resilience's `tokio::sync::Mutex` under contention)
//! is polled again at once. The inner service is a `tower::service_fn`
//! answering `200 OK` at once (an empty `http::Response<()>`), so the
//! figures are the layers' own cost. Beside the layer on one breaker
//! (`&'static` and `Arc`), `per_key` looks each request's breaker up in a
//! keyed `Family` (one key here: a hit every time), and a pass-through
//! layer (`map_err` boxing the error) is a second floor.
//!
//! Two-thread cases run that loop on two threads, each with its own clone of
//! the service, sharing one breaker. The time per call is each thread's own
//! CPU time per call, averaged over the threads: the machine these figures
//! come from is shared with other builds, and wall time would count the
//! time a thread spent descheduled.
//!
//! ```sh
//! cargo bench -p failfast-benches --bench tower
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "support/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_time;
use failfast::Breaker;
use failfast::tower::CircuitBreakerLayer;
use tower::{Layer, Service, ServiceExt, service_fn};

type Response = http::Response<()>;

/// The inner service: answers `200 OK` at once.
fn ok_service()
-> impl Service<u64, Response = Response, Error = Infallible, Future: Send> + Clone + Send {
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

/// Polls `future` in place until it is done.
#[inline]
fn finish<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::hint::spin_loop();
    }
}

/// `iters` calls of `service`, each made once it is ready.
fn calls<S>(service: &mut S, iters: u64)
where
    S: Service<u64, Response = Response>,
    S::Error: std::fmt::Debug,
{
    for i in 0..iters {
        finish(std::future::poll_fn(|cx| service.poll_ready(cx))).expect("ready");
        let response = finish(service.call(i)).expect("admitted");
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
    let spent: Vec<Duration> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let mut service = service.clone();
                let start = &start;
                s.spawn(move || {
                    let rt = runtime();
                    let _context = rt.enter();
                    start.wait();
                    let began = thread_cpu_time();
                    calls(&mut service, iters);
                    thread_cpu_time() - began
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect()
    });
    spent.iter().sum::<Duration>() / u32::try_from(threads).expect("a few threads")
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

/// A layer that does nothing but what every layer in a `BoxError` stack
/// does: its own response future around the inner one, the error boxed.
fn pass_through<S>(
    inner: S,
) -> impl Service<u64, Response = Response, Error: std::fmt::Debug, Future: Send> + Clone + Send
where
    S: Service<u64, Response = Response, Error = Infallible> + Clone + Send,
    S::Future: Send,
{
    inner.map_err(|e: Infallible| -> tower::BoxError { match e {} })
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
    g.bench_function("floor: pass-through layer (map_err to BoxError)", |b| {
        b.iter_custom(|iters| on_threads(threads, pass_through(ok_service()), iters))
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
    let family: failfast::Family<u64> =
        failfast::Family::builder(Breaker::builder().name("bench-tower-keyed"))
            .build()
            .expect("valid");
    g.bench_function("failfast: per_key layer, one key", |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                CircuitBreakerLayer::per_key(family.clone(), |_: &u64| 7_u64).layer(ok_service()),
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
