//! Capacity: a dependency that can serve only half the load offered, and
//! what each kind of breaker makes of it, over many seeds.
//!
//! A discrete-event simulation of the real library on a virtual clock (the
//! harness is `examples/common/sim.rs`). Callers offer 100 calls per second
//! (Poisson arrivals) to a dependency that answers in 20 ms. From t = 60 s
//! to t = 180 s its capacity drops to 50 calls per second, half the load
//! offered: a token bucket refilled at 50/s, holding at most 5. A call it
//! serves takes a token. A call it cannot serve gets no answer, so the
//! caller gives up at its 1 s timeout; and it is not free: it costs the
//! dependency a share `u` of a served call (the work of taking it in,
//! queueing it, giving up on it), taken from the same bucket. With `u = 0`
//! calls beyond the capacity cost nothing and no breaker is needed to serve
//! it all; with `u = ¼` every call beyond it takes a quarter of a served
//! call away. After t = 180 s it serves everything again, to t = 240 s. A
//! caller never retries; a call the breaker refuses is answered at once by
//! a fallback.
//!
//! Rows (each the real breaker, as the attribute declares it):
//!
//! - `no breaker`: every call reaches the dependency.
//! - `classic`: `threshold = 5, recovery = "5s"`: five failures in a row
//!   open it, and half the calls fail, so it soon finds them; it refuses
//!   everything for 5 s, closes on the first trial, and opens again within
//!   seconds: all or nothing.
//! - `failure rate`: `failure_rate = 0.5, recovery = "5s"` over the last
//!   100 calls (one second of them): at half the capacity half the calls
//!   fail, so it opens within a second or two of each closing.
//! - `failure rate, 10 s`: the same rule over the calls of the last 10 s
//!   instead of the last 100: the only difference between these two rows.
//! - `graded, shed 2` and `graded, shed 1.2`: each call is refused with
//!   chance `(admitted − k × accepted) / (admitted + 1)` over a 10 s window.
//!   With the dependency serving a share `c` of the calls sent, the sent
//!   share settles at `√(k·c)`: with `k = 2` and `c = ½` that is 1, nothing
//!   is shed (the usual k leaves a dependency alone until it serves less
//!   than half); with `k = 1.2` it is about 0.77.
//! - `adaptive limit`: `max_concurrent = 5..=100`, each timeout cutting the
//!   limit by a tenth; beside `shed = 2`, which stands in for the default
//!   rule (`threshold = 5` would make it the classic row) and sheds next to
//!   nothing here.
//!
//! Columns, from t = 60 s to t = 180 s (medians over the seeds; the least
//! and the most under each): *goodput*, calls answered per second and as a
//! share of the 50 the dependency can serve; *fast failures*, calls the
//! breaker refused per second (the fallback answers at once); *slow
//! failures*, calls that waited the whole 1 s timeout, per second; the
//! *load* the dependency sees, calls per second; the callers' *mean* and
//! *p99 wait* (a refusal waits 0 ms); and *every call answered again*: how
//! long after the capacity came back the last call was refused or timed out.
//!
//! ```text
//! cargo run --release --features testing --example capacity
//! cargo run --release --features testing --example capacity -- --seeds 200
//! ```

use std::time::Duration;

use failfast::{Breaker, Builder, ManualClock, Outcome, Permit};

// Every simulation includes it, so the test binary that replays them
// (`tests/calls`) loads it more than once.
#[allow(clippy::duplicate_mod)]
#[path = "common/sim.rs"]
mod sim;
use sim::{Events, Next, Rng, Spread, Table, Unit, advance_to};

const OFFERED_PER_SEC: f64 = 100.0;
/// The dependency's capacity while degraded, in calls per second.
pub(crate) const DEGRADED_CAPACITY: f64 = 50.0;
/// Tokens the bucket holds at most: 100 ms of the degraded capacity.
const BURST: f64 = 5.0;
const ANSWER_MS: u64 = 20;
pub(crate) const TIMEOUT_MS: u64 = 1_000;

/// When the capacity drops, when it comes back, and when the run ends (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Phases {
    pub(crate) degraded_from: u64,
    pub(crate) degraded_until: u64,
    pub(crate) end: u64,
}

impl Phases {
    /// The example's: 60 s healthy, 120 s degraded, 60 s healthy again.
    pub(crate) const EXAMPLE: Phases = Phases {
        degraded_from: 60_000,
        degraded_until: 180_000,
        end: 240_000,
    };

    fn degraded(self, t_ms: u64) -> bool {
        (self.degraded_from..self.degraded_until).contains(&t_ms)
    }

    fn degraded_secs(self) -> f64 {
        (self.degraded_until - self.degraded_from) as f64 / 1000.0
    }
}
/// Seeds run when the command line does not say.
pub(crate) const SEEDS: u64 = 50;
/// What a call the dependency cannot serve costs it, as a share of a served
/// call: the two tables.
pub(crate) const UNSERVED_COSTS: [f64; 2] = [0.0, 0.25];

/// How the callers call the dependency: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    NoBreaker,
    Classic,
    FailureRate,
    FailureRate10s,
    Graded2,
    Graded1_2,
    Adaptive,
}

impl Guard {
    /// Every row, in the order printed.
    pub(crate) const ALL: [Guard; 7] = [
        Guard::NoBreaker,
        Guard::Classic,
        Guard::FailureRate,
        Guard::FailureRate10s,
        Guard::Graded2,
        Guard::Graded1_2,
        Guard::Adaptive,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Guard::NoBreaker => "no breaker",
            Guard::Classic => "classic",
            Guard::FailureRate => "failure rate",
            Guard::FailureRate10s => "failure rate, 10 s",
            Guard::Graded2 => "graded, shed 2",
            Guard::Graded1_2 => "graded, shed 1.2",
            Guard::Adaptive => "adaptive limit",
        }
    }

    /// The row's settings, as the attribute writes them.
    pub(crate) fn settings(self) -> &'static str {
        match self {
            Guard::NoBreaker => "no breaker",
            Guard::Classic => "threshold = 5, recovery = \"5s\"",
            Guard::FailureRate => {
                "failure_rate = 0.5, recovery = \"5s\" (window = 100 calls, min_calls = 10: defaults)"
            }
            Guard::FailureRate10s => "failure_rate = 0.5, recovery = \"5s\", window = \"10s\"",
            Guard::Graded2 => "shed = 2 (shed_window = \"10s\", min_calls = 10: the defaults)",
            Guard::Graded1_2 => "shed = 1.2 (shed_window = \"10s\", min_calls = 10)",
            Guard::Adaptive => "max_concurrent = 5..=100, shed = 2 (in place of the default rule)",
        }
    }

    /// The callers' breaker (on the simulation's clock), if any.
    fn breaker(self) -> Option<Builder> {
        let five = Duration::from_secs(5);
        let builder = Breaker::builder();
        match self {
            Guard::NoBreaker => None,
            Guard::Classic => Some(builder.threshold(5).recovery(five)),
            Guard::FailureRate => Some(builder.failure_rate(0.5).recovery(five)),
            Guard::FailureRate10s => Some(
                builder
                    .failure_rate(0.5)
                    .recovery(five)
                    .window_time(Duration::from_secs(10)),
            ),
            Guard::Graded2 => Some(builder.shed(2.0)),
            Guard::Graded1_2 => Some(builder.shed(1.2)),
            Guard::Adaptive => Some(builder.shed(2.0).adaptive_concurrency(5, 100)),
        }
    }
}

/// Call `call` ends: answered (`true`) or timed out.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Ends {
    call: usize,
    answered: bool,
}

/// What happened in one run (one row, one seed, one cost).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    phases: Phases,
    /// Calls made while the dependency was degraded, and of those: answered,
    /// sent to the dependency, refused by the breaker, timed out.
    pub(crate) degraded_calls: u64,
    pub(crate) degraded_answered: u64,
    pub(crate) degraded_sent: u64,
    pub(crate) degraded_refused: u64,
    pub(crate) degraded_timed_out: u64,
    /// The mean and the 99th percentile of what callers waited for the
    /// calls made while degraded, in ms (0 for a refusal).
    pub(crate) mean_wait_ms: f64,
    pub(crate) p99_wait_ms: f64,
    /// The last call made after the capacity came back that did not get an
    /// answer (refused or timed out), if any.
    pub(crate) last_miss_after: Option<u64>,
}

impl Run {
    /// Calls answered per second while degraded.
    pub(crate) fn goodput(&self) -> f64 {
        self.degraded_answered as f64 / self.phases.degraded_secs()
    }

    /// Goodput while degraded as a share of the capacity then.
    pub(crate) fn goodput_share(&self) -> f64 {
        self.goodput() / DEGRADED_CAPACITY
    }

    /// Calls refused per second while degraded: fast failures.
    pub(crate) fn fast_failures(&self) -> f64 {
        self.degraded_refused as f64 / self.phases.degraded_secs()
    }

    /// Calls timed out per second while degraded: slow failures.
    pub(crate) fn slow_failures(&self) -> f64 {
        self.degraded_timed_out as f64 / self.phases.degraded_secs()
    }

    /// Calls per second that reached the dependency while degraded.
    pub(crate) fn load(&self) -> f64 {
        self.degraded_sent as f64 / self.phases.degraded_secs()
    }

    /// How long after the capacity came back every call got an answer
    /// again, in s: up to just after the last call that did not.
    pub(crate) fn every_call_answered_after(&self) -> f64 {
        self.last_miss_after.map_or(0.0, |t| {
            (t + 1 - self.phases.degraded_until) as f64 / 1000.0
        })
    }
}

/// The dependency: serves every call, except while degraded, when it serves
/// those its token bucket allows, and a call it cannot serve costs it
/// `unserved_cost` of a token.
struct Dependency {
    phases: Phases,
    tokens: f64,
    refilled_ms: u64,
    unserved_cost: f64,
}

impl Dependency {
    /// Whether a call reaching it at `t_ms` is served.
    fn serves(&mut self, t_ms: u64) -> bool {
        if !self.phases.degraded(t_ms) {
            self.tokens = BURST;
            self.refilled_ms = t_ms;
            return true;
        }
        let elapsed = (t_ms - self.refilled_ms) as f64 / 1000.0;
        self.tokens = (self.tokens + elapsed * DEGRADED_CAPACITY).min(BURST);
        self.refilled_ms = t_ms;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            // Owed work, at most a second of the capacity.
            self.tokens = (self.tokens - self.unserved_cost).max(-DEGRADED_CAPACITY);
            false
        }
    }
}

/// One row over one seed's arrivals, an unserved call costing
/// `unserved_cost` of a served one.
pub(crate) fn simulate(
    guard: Guard,
    phases: Phases,
    seed: u64,
    arrivals: &[u64],
    unserved_cost: f64,
) -> Run {
    let row = Guard::ALL.iter().position(|g| *g == guard).unwrap_or(0);
    sim::seed_draws(seed, row);
    let clock = ManualClock::new();
    let breaker = guard.breaker().map(|builder| {
        builder
            .clock(clock.clone())
            .build()
            .expect("valid breaker configuration")
    });
    let mut sim = Sim {
        breaker: breaker.as_ref(),
        arrivals,
        permits: (0..arrivals.len()).map(|_| None).collect(),
        phases,
        dependency: Dependency {
            phases,
            tokens: BURST,
            refilled_ms: 0,
            unserved_cost,
        },
        events: Events::new(),
        waits: Vec::new(),
        run: Run {
            phases,
            degraded_calls: 0,
            degraded_answered: 0,
            degraded_sent: 0,
            degraded_refused: 0,
            degraded_timed_out: 0,
            mean_wait_ms: 0.0,
            p99_wait_ms: 0.0,
            last_miss_after: None,
        },
    };
    let mut next = 0;
    while let Some((t, what)) = sim.events.next(arrivals, &mut next) {
        advance_to(&clock, t);
        match what {
            Next::Arrival(call) => sim.arrival(t, call),
            Next::Event(ends) => sim.ends(t, ends),
        }
    }
    let waits = std::mem::take(&mut sim.waits);
    let mut run = sim.run;
    run.mean_wait_ms = waits.iter().sum::<u64>() as f64 / waits.len().max(1) as f64;
    run.p99_wait_ms = Spread::quantile(waits.iter().map(|&w| w as f64), 0.99);
    run
}

struct Sim<'b> {
    breaker: Option<&'b Breaker>,
    arrivals: &'b [u64],
    /// The permit of each call in flight.
    permits: Vec<Option<Permit<'b>>>,
    phases: Phases,
    dependency: Dependency,
    events: Events<Ends>,
    /// What callers waited for each call made while degraded, in ms.
    waits: Vec<u64>,
    run: Run,
}

impl Sim<'_> {
    /// A caller makes call number `call`.
    fn arrival(&mut self, t: u64, call: usize) {
        let in_phase = self.phases.degraded(t);
        self.run.degraded_calls += u64::from(in_phase);
        let admitted = match self.breaker {
            None => Ok(None),
            Some(breaker) => breaker.acquire().map(Some),
        };
        let Ok(permit) = admitted else {
            // The fallback answers at once.
            if in_phase {
                self.run.degraded_refused += 1;
                self.waits.push(0);
            }
            self.missed(t);
            return;
        };
        self.permits[call] = permit;
        self.run.degraded_sent += u64::from(in_phase);
        let (ends, answered) = if self.dependency.serves(t) {
            (t + ANSWER_MS, true)
        } else {
            (t + TIMEOUT_MS, false)
        };
        self.events.schedule(ends, Ends { call, answered });
    }

    fn ends(&mut self, t: u64, Ends { call, answered }: Ends) {
        if let Some(permit) = self.permits[call].take() {
            permit.record(if answered {
                Outcome::Success
            } else {
                Outcome::Failure
            });
        }
        let started = self.arrivals[call];
        if self.phases.degraded(started) {
            self.waits.push(t - started);
            self.run.degraded_answered += u64::from(answered);
            self.run.degraded_timed_out += u64::from(!answered);
        }
        if !answered {
            self.missed(started);
        }
    }

    /// A call made at `t` got no answer.
    fn missed(&mut self, t: u64) {
        if t >= self.phases.degraded_until {
            self.run.last_miss_after = Some(self.run.last_miss_after.unwrap_or(0).max(t));
        }
    }
}

/// Each row of `guards` over each seed, for each cost: `runs[cost][row][seed]`.
pub(crate) fn runs(
    guards: &[Guard],
    phases: Phases,
    seeds: std::ops::Range<u64>,
    costs: &[f64],
) -> Vec<Vec<Vec<Run>>> {
    let by_seed = sim::over_seeds(seeds, |seed| {
        let arrivals = Rng::stream(seed, 0).poisson(OFFERED_PER_SEC, phases.end);
        costs
            .iter()
            .map(|&cost| {
                guards
                    .iter()
                    .map(|&guard| simulate(guard, phases, seed, &arrivals, cost))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    });
    (0..costs.len())
        .map(|c| {
            (0..guards.len())
                .map(|row| by_seed.iter().map(|runs| runs[c][row].clone()).collect())
                .collect()
        })
        .collect()
}

/// `figure` of each run, over the runs.
pub(crate) fn spread(runs: &[Run], figure: impl Fn(&Run) -> f64) -> Spread {
    Spread::of(runs.iter().map(figure))
}

fn main() {
    let seeds = sim::seeds_from_args(SEEDS);
    let phases = Phases::EXAMPLE;
    let all = runs(&Guard::ALL, phases, seeds.clone(), &UNSERVED_COSTS);
    println!(
        "Callers offer {OFFERED_PER_SEC} calls/s to a dependency that answers in {ANSWER_MS} ms. \
         From t = {} s to t = {} s it serves at most\n{DEGRADED_CAPACITY} calls/s; the others time \
         out after {TIMEOUT_MS} ms, and each costs it a share u of a served call. No retries.\n",
        phases.degraded_from / 1000,
        phases.degraded_until / 1000,
    );
    println!("Rows:");
    for guard in Guard::ALL {
        println!("  {:<19} {}", guard.label(), guard.settings());
    }
    let table = Table::new(
        17,
        &[
            ("goodput", "(calls/s)", 10),
            ("of", "capacity", 9),
            ("fast fails", "(refused/s)", 11),
            ("slow fails", "(timed out/s)", 13),
            ("load on", "dependency/s", 12),
            ("mean", "wait (ms)", 9),
            ("p99", "wait (ms)", 9),
            ("all answered", "again after (s)", 15),
        ],
    );
    for (cost, rows) in UNSERVED_COSTS.iter().zip(&all) {
        let what = if *cost == 0.0 {
            "u = 0: a call the dependency cannot serve costs it nothing".to_string()
        } else {
            format!(
                "u = {cost}: a call the dependency cannot serve costs it {cost} of a served one"
            )
        };
        println!("\n{what}\n{}", table.header());
        for (guard, runs) in Guard::ALL.iter().zip(rows) {
            let s = |f: fn(&Run) -> f64| spread(runs, f);
            println!(
                "{}",
                table.row(
                    guard.label(),
                    &[
                        (s(Run::goodput), Unit::Plain(1)),
                        (s(Run::goodput_share), Unit::Percent),
                        (s(Run::fast_failures), Unit::Plain(1)),
                        (s(Run::slow_failures), Unit::Plain(1)),
                        (s(Run::load), Unit::Plain(1)),
                        (s(|r| r.mean_wait_ms), Unit::Plain(0)),
                        (s(|r| r.p99_wait_ms), Unit::Plain(0)),
                        (s(Run::every_call_answered_after), Unit::Secs(1)),
                    ]
                )
            );
        }
    }
    println!(
        "Medians over the seeds; under each, the least and the most. Figures for calls made \
         from t = {} s to t = {} s;\na refused call waits 0 ms (the fallback answers at once). \
         All answered again: after the capacity came back,\nfrom just after the last call that \
         was refused or timed out.",
        phases.degraded_from / 1000,
        phases.degraded_until / 1000,
    );
    println!("\n{}", sim::provenance("capacity", &seeds));
}
