//! The protected call of the `breaker`, `call_sites` and `targets` benches.

use std::future::Future;
use std::hint::black_box;
use std::time::Duration;

use failfast::{Rejected, TimedOut};

use crate::cpu_time::thread_cpu_time;

/// The protected call's error. The call returns `Result<(), Fault>`, one byte
/// that comes back in a register, so the figures show the breaker rather than
/// the compiler's copies of a larger result (which cost the same with or without
/// a breaker, and whose cost varies from one build to the next).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Down,
    /// The breaker refused; the attribute converts its `Rejected` into this.
    Unavailable,
    /// The call ran out of its `timeout`.
    TimedOut,
}

impl From<Rejected> for Fault {
    fn from(_: Rejected) -> Self {
        Fault::Unavailable
    }
}

impl From<TimedOut> for Fault {
    fn from(_: TimedOut) -> Self {
        Fault::TimedOut
    }
}

/// The dependency's answer: fails only for `u64::MAX`, so benches pass
/// `black_box(1)`. Inlined into each function that calls it, so that each of
/// them is one call, with or without a breaker.
#[inline(always)]
pub fn answer(x: u64) -> Result<(), Fault> {
    if x == u64::MAX {
        Err(Fault::Down)
    } else {
        Ok(())
    }
}

/// A value the optimiser can't see through.
pub fn arg() -> u64 {
    black_box(1)
}

/// `iters` futures made by `call`, awaited one after the other inside one
/// `block_on` on `rt`, timed in the thread's CPU time (on a current-thread
/// runtime every poll runs on this thread).
pub fn looped_on_cpu<F: Future>(
    rt: &tokio::runtime::Runtime,
    iters: u64,
    call: impl Fn() -> F,
) -> Duration {
    rt.block_on(async {
        let cpu = thread_cpu_time();
        for _ in 0..iters {
            black_box(&call().await);
        }
        thread_cpu_time() - cpu
    })
}

/// `looped_on_cpu`, each future polled through `Pin<&mut dyn Future>`:
/// its poll is a call through a vtable, which the awaiting loop cannot
/// inline, as for an `async fn` whose body does real work. A plain
/// `async fn` awaited by `looped_on_cpu` is otherwise inlined into the loop
/// and never exists in memory, which no annotated function's future
/// matches. Kept apart
/// from `looped_on_cpu`: one function for both (a `const DYN: bool`)
/// changed the code of the plain loop and moved its floor.
pub fn looped_dyn_on_cpu<F: Future>(
    rt: &tokio::runtime::Runtime,
    iters: u64,
    call: impl Fn() -> F,
) -> Duration {
    rt.block_on(async {
        let cpu = thread_cpu_time();
        for _ in 0..iters {
            let future = std::pin::pin!(call());
            let future: std::pin::Pin<&mut dyn Future<Output = F::Output>> = future;
            black_box(&future.await);
        }
        thread_cpu_time() - cpu
    })
}
