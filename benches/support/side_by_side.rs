//! Two threads calling side by side for a span of wall time, with how much
//! they overlapped: on a shared host, two threads released together do not
//! always run together.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::cpu_time::thread_cpu_time;
/// What [`side_by_side`] measured.
#[derive(Clone, Copy, Debug)]
pub struct SideBySide {
    /// CPU time per call in nanoseconds, over both threads' calls.
    pub per_call_ns: f64,
    /// The share of the span during which both threads could run: one less
    /// the time they spent waiting for a CPU (the kernel's run delay, from
    /// `/proc/thread-self/schedstat`) over twice the span. Near 1.0 they ran
    /// side by side; near 0.5 the host gave them one CPU in turn, and they
    /// did not contend at all. Time a thread spent blocked (a peer's lock)
    /// is not waiting for a CPU. Where the run delay cannot be read, the
    /// two threads' CPU time over twice the span.
    pub parallel: f64,
}

/// Runs `call` on two threads released together, for about `span` of wall
/// time, and returns the CPU time per call and how much the two threads
/// overlapped. Unlike `threads::two_threads_on_cpu`, whose fixed call count lets a
/// thread that was started late run alone, the threads stop together.
pub fn side_by_side<R>(span: Duration, call: impl Fn() -> R + Sync) -> SideBySide {
    let start = Barrier::new(3);
    let stop = AtomicBool::new(false);
    let (runs, wall) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let delay = run_delay();
                    let cpu = thread_cpu_time();
                    let mut calls = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..256 {
                            black_box(&call());
                        }
                        calls += 256;
                    }
                    let cpu = thread_cpu_time() - cpu;
                    let waited = run_delay().zip(delay).map(|(end, start)| end - start);
                    (calls, cpu, waited)
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        std::thread::sleep(span);
        stop.store(true, Ordering::Relaxed);
        let runs: Vec<(u64, Duration, Option<Duration>)> = workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect();
        (runs, began.elapsed())
    });
    let calls: u64 = runs.iter().map(|r| r.0).sum();
    let cpu: Duration = runs.iter().map(|r| r.1).sum();
    let waited: Option<Duration> = runs.iter().map(|r| r.2).sum();
    let twice = 2.0 * wall.as_secs_f64();
    SideBySide {
        per_call_ns: cpu.as_nanos() as f64 / calls.max(1) as f64,
        parallel: match waited {
            Some(waited) => 1.0 - waited.as_secs_f64() / twice,
            None => cpu.as_secs_f64() / twice,
        },
    }
}

/// The time this thread has spent waiting for a CPU while runnable (Linux).
fn run_delay() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}
