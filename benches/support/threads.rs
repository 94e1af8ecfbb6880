//! Timing a call in the CPU time of the threads that make it, on one thread
//! or on two threads sharing whatever the call touches. CPU time leaves out
//! the time a thread spent descheduled while other work ran on the machine.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Duration;

use super::cpu_time::thread_cpu_time;

/// Times `iters` calls on this thread, in its own CPU time.
pub fn on_cpu<R>(iters: u64, mut call: impl FnMut() -> R) -> Duration {
    let cpu = thread_cpu_time();
    for _ in 0..iters {
        // By reference: copying the result out would add a store-forwarding
        // stall that the calls themselves do not have.
        black_box(&call());
    }
    thread_cpu_time() - cpu
}

/// Runs `call` `iters` times on each of two threads released together, and
/// returns the CPU time each thread spent, averaged: the time per call as a
/// thread sees it while the other thread makes the same calls.
pub fn two_threads_on_cpu<R>(iters: u64, call: impl Fn() -> R + Sync) -> Duration {
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    on_cpu(iters, &call)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .sum::<Duration>()
            / 2
    })
}
