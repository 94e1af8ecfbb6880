//! What `#[circuit_breaker]` costs in a crate that protects many functions.
//!
//! Every protected function calls the same runtime entry points
//! (`__private::acquire`, the permit's record, the body's poll). The
//! compiler inlines a small function into each of its callers only while it
//! has few of them; a call that is not inlined returns the permit through
//! memory, and reading it back costs a store-forwarding stall. This bench
//! declares sixteen protected functions, eight sync and eight async, so that
//! the entry points have many callers, and times two of them against the
//! same functions unprotected, as the `closed_1_thread_cpu` and
//! `async_current_thread_cpu` groups of the `breaker` bench do for a crate
//! with few.
//!
//! Run it with `cargo bench -p failfast-benches --bench call_sites`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use failfast::circuit_breaker;

// Not `looped_dyn_on_cpu`, which the `breaker` and `targets` benches use.
#[allow(dead_code)]
#[path = "support/call.rs"]
mod call;
#[path = "support/cpu_time.rs"]
mod cpu_time;
use call::{Fault, answer, arg, looped_on_cpu};
use cpu_time::thread_cpu_time;

/// The floor of the sync cases.
#[inline(never)]
fn bare(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// The floor of the async cases.
async fn plain(x: u64) -> Result<(), Fault> {
    answer(x)
}

macro_rules! protected {
    ($($sync:ident $async_:ident),* $(,)?) => {
        $(
            #[inline(never)]
            #[circuit_breaker(threshold = 5, recovery = "30s")]
            fn $sync(x: u64) -> Result<(), Fault> {
                answer(x)
            }

            #[circuit_breaker(threshold = 5, recovery = "30s")]
            async fn $async_(x: u64) -> Result<(), Fault> {
                answer(x)
            }
        )*

        /// Every protected function, called once before the cases run, so
        /// that none is left out of the build.
        fn call_each(rt: &tokio::runtime::Runtime) {
            $(
                $sync(arg()).expect("closed");
                rt.block_on($async_(arg())).expect("closed");
            )*
        }
    };
}

protected!(
    sync_0 async_0,
    sync_1 async_1,
    sync_2 async_2,
    sync_3 async_3,
    sync_4 async_4,
    sync_5 async_5,
    sync_6 async_6,
    sync_7 async_7,
);

fn looped(iters: u64, call: impl Fn() -> Result<(), Fault>) -> Duration {
    let cpu = thread_cpu_time();
    for _ in 0..iters {
        black_box(call()).expect("closed");
    }
    thread_cpu_time() - cpu
}

fn call_sites(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    call_each(&rt);

    type Call = fn(u64) -> Result<(), Fault>;
    let mut g = c.benchmark_group("call_sites_sync_cpu");
    for (name, call) in [
        ("floor: bare call", bare as Call),
        ("failfast: #[circuit_breaker], first of 8", sync_0),
        ("failfast: #[circuit_breaker], last of 8", sync_7),
    ] {
        g.bench_function(name, |b| b.iter_custom(|n| looped(n, || call(arg()))));
    }
    g.finish();

    let mut g = c.benchmark_group("call_sites_async_cpu");
    macro_rules! case {
        ($name:literal, $call:ident) => {
            g.bench_function($name, |b| {
                b.iter_custom(|n| looped_on_cpu(&rt, n, || $call(arg())))
            });
        };
    }
    case!("plain async fn", plain);
    case!("failfast: #[circuit_breaker] async fn, first of 8", async_0);
    case!("failfast: #[circuit_breaker] async fn, last of 8", async_7);
    g.finish();
}

criterion_group!(benches, call_sites);
criterion_main!(benches);
