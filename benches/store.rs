//! What a call through a failfast breaker joined to a fleet costs, with the
//! store healthy and with it stopped (`SIGSTOP`: the server keeps its socket
//! open and never answers, the worst way for a store to fail). The store is
//! never on a call's path, so both should read the same.
//!
//! ```text
//! cargo bench -p failfast-benches --bench store -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Starts its own `redis-server` (on PATH: `apt-get install redis-server`).

#[path = "../fleet/tests/support/mod.rs"]
mod support;

#[path = "support/cpu_time.rs"]
mod cpu_time;

use criterion::{Criterion, criterion_group, criterion_main};
use failfast::{Breaker, State};
use failfast_fleet::{Breakers, Fleet};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A fleet with two breakers: one closed, one open on its own evidence.
struct Setup {
    fleet: Fleet,
    closed: Arc<Breaker>,
    open: Arc<Breaker>,
}

fn setup(rt: &tokio::runtime::Runtime, url: &str) -> Setup {
    let _enter = rt.enter();
    let mut cfg = support::config(url, "bench");
    cfg.breakers = Breakers::Explicit;
    let fleet = failfast_fleet::join(cfg).unwrap();
    let build = |name: &'static str| {
        Arc::new(
            Breaker::builder()
                .name(name)
                .threshold(1)
                .recovery(Duration::from_secs(3600))
                .build()
                .unwrap(),
        )
    };
    let (closed, open) = (build("bench-closed"), build("bench-open"));
    fleet.attach_breaker(closed.clone()).unwrap();
    fleet.attach_breaker(open.clone()).unwrap();
    wait("connected", || fleet.stats().connected);
    let _ = open.call(|| Err::<(), _>("down"));
    assert_eq!(open.state(), State::Open);
    Setup {
        fleet,
        closed,
        open,
    }
}

fn wait(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wall time per call, and the calling thread's CPU time per call (`_cpu`,
/// the figure to compare on a machine shared with other work).
fn calls(c: &mut Criterion, group: &str, s: &Setup) {
    let call = |b: &Breaker| black_box(b.call(|| Ok::<_, ()>(black_box(1u8))));
    let mut g = c.benchmark_group(group);
    g.bench_function("closed call", |b| b.iter(|| call(&s.closed)));
    g.bench_function("rejected call", |b| b.iter(|| call(&s.open)));
    g.finish();
    let mut g = c.benchmark_group(format!("{group}_cpu"));
    for (name, breaker) in [("closed call", &s.closed), ("rejected call", &s.open)] {
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let start = cpu_time::thread_cpu_time();
                for _ in 0..n {
                    let _ = call(breaker);
                }
                cpu_time::thread_cpu_time() - start
            });
        });
    }
    g.finish();
}

fn healthy_vs_stopped(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = support::RedisServer::start();
    let s = setup(&rt, &server.url());
    calls(c, "fleet_store_healthy", &s);

    server.freeze();
    // The next read-back (every 500 ms here) times out: local-only.
    wait("the fleet notices the stopped store", || {
        !s.fleet.stats().connected
    });
    calls(c, "fleet_store_stopped", &s);
    let stats = s.fleet.stats();
    assert!(!stats.connected && stats.ops_failed > 0, "{stats:?}");
    server.thaw();
}

criterion_group!(benches, healthy_vs_stopped);
criterion_main!(benches);
