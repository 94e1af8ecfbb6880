//! The harness of the simulations (`examples/cascade.rs`,
//! `examples/capacity.rs`, `examples/metastable.rs`) and of the tests that
//! replay them: the real library on a virtual clock, every random source
//! seeded, and each row reported over many seeds.
//!
//! - Time is virtual: each run builds its breakers with
//!   `Builder::clock(ManualClock)` and moves that clock from one event to
//!   the next ([`Events`], [`advance_to`]). A run of minutes takes
//!   milliseconds.
//! - Every random source is seeded: arrivals and service times from
//!   [`Rng`] (splitmix64), and graded shedding's draws with
//!   `failfast::testing::seed_shedding` ([`seed_draws`]), which seeds the
//!   calling thread's generator. A run is one thread from start to end, so
//!   the same seed gives the same run, refusal for refusal, whichever
//!   thread runs it and whatever ran there before.
//! - A row is reported over seeds ([`over_seeds`], [`Spread`]): the median
//!   and the least and the most of the runs (`--seeds N`, 50 by default,
//!   from `--first-seed S`, 1 by default). Seeds run on as many threads as
//!   the machine has.
//!
//! Each example includes this file by path (`mod sim`), apart from the
//! rest of `common`, which starts real servers.

#![allow(dead_code)] // each simulation uses a part of it

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use failfast::ManualClock;

/// splitmix64: a small seeded generator.
#[derive(Clone)]
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A generator for one stream of `seed`'s run (arrivals, service
    /// times, …): streams of one seed, and seeds, start far apart.
    pub(crate) fn stream(seed: u64, stream: u64) -> Self {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next_u64();
        rng
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An exponential draw of mean `mean`.
    pub(crate) fn exp(&mut self, mean: f64) -> f64 {
        -(1.0 - self.next_f64()).ln() * mean
    }

    /// Poisson arrivals at `rate` per second up to `end_ms`, in milliseconds.
    pub(crate) fn poisson(&mut self, rate: f64, end_ms: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut t = 0.0;
        loop {
            t += self.exp(1.0 / rate);
            let ms = (t * 1000.0) as u64;
            if ms > end_ms {
                return out;
            }
            out.push(ms);
        }
    }
}

/// Seeds this thread's graded-shedding draws for row `row` of `seed`'s run.
/// Call it on the thread that runs the row, before its first call.
pub(crate) fn seed_draws(seed: u64, row: usize) {
    failfast::testing::seed_shedding(Rng::stream(seed, 1000 + row as u64).next_u64());
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

    /// The earliest of the next arrival (`arrivals[*next]`, in time order)
    /// and the earliest event, with its time; an arrival first at the same
    /// instant. Arrivals stay out of the queue, which holds only what is in
    /// flight.
    pub(crate) fn next(&mut self, arrivals: &[u64], next: &mut usize) -> Option<(u64, Next<E>)> {
        let arrival = arrivals.get(*next).copied();
        let event = self.queue.peek().map(|Reverse((t, _, _))| *t);
        match (arrival, event) {
            (Some(a), e) if e.is_none_or(|e| a <= e) => {
                *next += 1;
                Some((a, Next::Arrival(*next - 1)))
            }
            _ => self.pop().map(|(t, e)| (t, Next::Event(e))),
        }
    }
}

/// What [`Events::next`] found.
pub(crate) enum Next<E> {
    /// The arrival of that index.
    Arrival(usize),
    Event(E),
}

/// Moves the virtual clock forward to `t_ms` (never back).
pub(crate) fn advance_to(clock: &ManualClock, t_ms: u64) {
    let now = Duration::from_millis(t_ms);
    if now > clock.now() {
        clock.advance(now - clock.now());
    }
}

/// The value after `--name` (or in `--name=value`) on the command line, or
/// `default`.
pub(crate) fn flag<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    let key = format!("--{name}");
    for (i, arg) in args.iter().enumerate() {
        let value = if *arg == key {
            args.get(i + 1).cloned()
        } else {
            arg.strip_prefix(&format!("{key}=")).map(str::to_owned)
        };
        if let Some(value) = value {
            return value.parse().unwrap_or_else(|_| {
                eprintln!("error: --{name}: cannot read {value:?}");
                std::process::exit(2)
            });
        }
    }
    default
}

/// The seeds the command line asks for: `--seeds N` (default `default`)
/// from `--first-seed S` (default 1).
pub(crate) fn seeds_from_args(default: u64) -> Range<u64> {
    let first: u64 = flag("first-seed", 1);
    let n: u64 = flag("seeds", default).max(1);
    first..first + n
}

/// `run` for each seed, on as many threads as the machine has; the results
/// in the order of `seeds`. Each run seeds what it draws itself
/// ([`seed_draws`]), so which thread runs it does not matter.
pub(crate) fn over_seeds<R: Send>(seeds: Range<u64>, run: impl Fn(u64) -> R + Sync) -> Vec<R> {
    let seeds: Vec<u64> = seeds.collect();
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<Option<R>>> = seeds.iter().map(|_| Mutex::new(None)).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(seeds.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&seed) = seeds.get(i) else { break };
                    let result = run(seed);
                    *out[i].lock().unwrap() = Some(result);
                }
            });
        }
    });
    out.into_iter()
        .map(|r| r.into_inner().unwrap().expect("every seed is run"))
        .collect()
}

/// One figure over the runs: its median, least and most. "Never" and
/// similar are `f64::INFINITY`, which sorts last.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// Over `values` (at least one). The median is the middle run (of an
    /// even number, the lower of the two middle ones): a figure some run
    /// had.
    pub(crate) fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut v: Vec<f64> = values.into_iter().collect();
        assert!(!v.is_empty(), "a spread over no runs");
        v.sort_by(f64::total_cmp);
        Spread {
            median: v[(v.len() - 1) / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }

    /// The `q` quantile (0 to 1) of `values`, nearest rank.
    pub(crate) fn quantile(values: impl IntoIterator<Item = f64>, q: f64) -> f64 {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        let rank = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }
}

/// How a figure is written in a table.
#[derive(Clone, Copy)]
pub(crate) enum Unit {
    /// A count, or a figure to `n` decimals.
    Plain(usize),
    /// A share, as a percentage.
    Percent,
    /// Seconds, to `n` decimals; `f64::INFINITY` is "never".
    Secs(usize),
}

impl Unit {
    pub(crate) fn show(self, x: f64) -> String {
        if x.is_infinite() {
            return "never".to_string();
        }
        match self {
            Unit::Plain(d) => format!("{x:.d$}"),
            Unit::Percent => format!("{:.0}%", x * 100.0),
            Unit::Secs(d) => format!("{x:.d$}"),
        }
    }

    /// `lo–hi` (`lo to hi` below zero), or one figure when they are the
    /// same.
    pub(crate) fn range(self, s: Spread) -> String {
        let (lo, hi) = (self.show(s.min), self.show(s.max));
        match () {
            () if lo == hi => lo,
            () if s.min < 0.0 => format!("{lo} to {hi}"),
            () => format!("{lo}–{hi}"),
        }
    }
}

/// A table of rows over seeds: each row is a line of medians and, under
/// it, a line of ranges (least–most).
pub(crate) struct Table {
    label_width: usize,
    /// Each column's two header lines and width.
    columns: Vec<(&'static str, &'static str, usize)>,
}

impl Table {
    pub(crate) fn new(label_width: usize, columns: &[(&'static str, &'static str, usize)]) -> Self {
        Table {
            label_width,
            columns: columns.to_vec(),
        }
    }

    fn line(&self, label: &str, cells: &[String]) -> String {
        let mut out = format!("{label:<w$}", w = self.label_width);
        for (cell, (_, _, width)) in cells.iter().zip(&self.columns) {
            out.push_str(&format!(" {cell:>width$}"));
        }
        out.trim_end().to_string()
    }

    pub(crate) fn header(&self) -> String {
        let first: Vec<String> = self.columns.iter().map(|c| c.0.to_string()).collect();
        let second: Vec<String> = self.columns.iter().map(|c| c.1.to_string()).collect();
        let width = self.label_width + self.columns.iter().map(|c| c.2 + 1).sum::<usize>();
        format!(
            "{}\n{}\n{}",
            self.line("", &first),
            self.line("", &second),
            "─".repeat(width)
        )
    }

    /// A row: medians on the first line, ranges on the second.
    pub(crate) fn row(&self, label: &str, cells: &[(Spread, Unit)]) -> String {
        let medians: Vec<String> = cells.iter().map(|(s, u)| u.show(s.median)).collect();
        let ranges: Vec<String> = cells.iter().map(|(s, u)| u.range(*s)).collect();
        format!("{}\n{}", self.line(label, &medians), self.line("", &ranges))
    }
}

/// Under a table: how to run it again, over how many seeds, at which commit.
pub(crate) fn provenance(example: &str, seeds: &Range<u64>) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Changes not yet committed to what the simulation runs.
    let changed = git(&[
        "status",
        "--porcelain",
        "--",
        "examples",
        "runtime/src",
        "src",
        "macros/src",
        "rules/src",
    ])
    .is_some_and(|s| !s.is_empty());
    let first = if seeds.start == 1 {
        String::new()
    } else {
        format!(" --first-seed {}", seeds.start)
    };
    format!(
        "cargo run --release --features testing --example {example} -- --seeds {}{first}\n\
         {} seeds ({}–{}), commit {commit}{}",
        seeds.end - seeds.start,
        seeds.end - seeds.start,
        seeds.start,
        seeds.end - 1,
        if changed { " with local changes" } else { "" }
    )
}
