//! What the two discrete-event simulations, `examples/cascade.rs` and
//! `examples/capacity.rs`, share: seeded arrivals, a queue of timed events,
//! and the command line. Each includes this file by path (`mod sim`), apart
//! from the rest of `common`, which starts real servers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use failfast::ManualClock;

/// splitmix64: a small seeded generator, so every run sees the same arrivals.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A uniform draw in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Poisson arrivals at `rate` per second up to `end_ms`, in milliseconds.
    pub(crate) fn poisson(&mut self, rate: f64, end_ms: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut t = 0.0;
        loop {
            t += -(1.0 - self.next_f64()).ln() / rate;
            let ms = (t * 1000.0) as u64;
            if ms > end_ms {
                return out;
            }
            out.push(ms);
        }
    }
}

/// Events in time order (in milliseconds); events at the same time in the
/// order they were scheduled.
pub(crate) struct Events<E: Ord> {
    queue: BinaryHeap<Reverse<(u64, u64, E)>>,
    seq: u64,
}

impl<E: Ord> Events<E> {
    pub(crate) fn new() -> Self {
        Self {
            queue: BinaryHeap::new(),
            seq: 0,
        }
    }

    pub(crate) fn schedule(&mut self, t_ms: u64, event: E) {
        self.seq += 1;
        self.queue.push(Reverse((t_ms, self.seq, event)));
    }

    /// The earliest event, and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        self.queue.pop().map(|Reverse((t, _, event))| (t, event))
    }
}

/// Moves the virtual clock forward to `t_ms` (never back).
pub(crate) fn advance_to(clock: &ManualClock, t_ms: u64) {
    let now = Duration::from_millis(t_ms);
    if now > clock.now() {
        clock.advance(now - clock.now());
    }
}

/// The value after `--name` on the command line, or `default`.
pub(crate) fn flag<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| *a == format!("--{name}"))
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("error: --{name}: cannot read {v:?}");
                std::process::exit(2)
            })
        })
        .unwrap_or(default)
}

/// The run of `guard` among `runs`, one per row of a table.
pub(crate) fn row<G: PartialEq, R>(runs: &[(G, R)], guard: G) -> &R {
    &runs
        .iter()
        .find(|(g, _)| *g == guard)
        .expect("every guard is run")
        .1
}
