//! Capacity: a dependency that can serve only half the load offered, and
//! what each kind of breaker makes of it.
//!
//! A discrete-event simulation on a virtual clock (it runs in well under a
//! second), in the style of `examples/cascade.rs`. Callers offer 100 calls
//! per second (Poisson arrivals, seeded) to a dependency that answers in
//! 20 ms. From t = 60 s to t = 180 s its capacity drops to 50 calls per
//! second, half the load offered: it serves at most that many (a token
//! bucket refilled at 50/s, holding at most 5), and a call it cannot serve
//! gets no answer, so the caller gives up at its 1 s timeout. From t = 180 s
//! to the end, t = 300 s, it serves everything again. A caller never
//! retries; a call the breaker refuses is answered at once by a fallback.
//!
//! - No breaker: every call reaches the dependency; half of them wait 1 s
//!   for nothing.
//! - Classic (`threshold(5)`, `recovery(5s)`): five failures in a row open
//!   it. Half the calls fail, so it soon finds five in a row; it then
//!   refuses everything for 5 s, closes on the first trial (the bucket is
//!   full by then), and opens again within seconds: all or nothing, and
//!   little of the capacity used.
//! - Graded (`shed(k)`, 10 s window): each call is refused with chance
//!   `(admitted − k × accepted) / (admitted + 1)`. With the dependency
//!   serving a share `c` of the calls offered, the admitted share settles
//!   at `√(k·c)`: with `k = 2` and `c = ½` that is 1, nothing is shed (the
//!   usual k leaves a dependency alone until it serves less than half);
//!   with `k = 1.2` it is √0.6 ≈ 0.77, so about 77 calls/s reach the
//!   dependency, which still serves its 50.
//!
//! To add a row (an adaptive concurrency limit, say): a variant of [`Guard`],
//! its label and what it builds, and an entry in [`Guard::ALL`]; a guard
//! that is not a `Breaker` is admitted in [`Sim::admit`] and told how the
//! call ended in [`Sim::resolve`].
//!
//! The shedding draws are the breaker's own (not seeded), so the graded
//! rows vary a little from one run to the next; the arrivals do not.
//!
//! ```text
//! cargo run --example capacity
//! cargo run --example capacity -- --seed 11
//! ```

use std::ops::Index;
use std::time::Duration;

use failfast::{Breaker, Builder, ManualClock, Outcome, Permit};

// Both simulations include it, so the test binary that replays them
// (`tests/calls`) loads it twice.
#[allow(clippy::duplicate_mod)]
#[path = "common/sim.rs"]
mod sim;
use sim::{Events, Rng, advance_to, flag};

const OFFERED_PER_SEC: f64 = 100.0;
/// The dependency's capacity while degraded, in calls per second.
pub(crate) const DEGRADED_CAPACITY: f64 = 50.0;
/// Tokens the bucket holds at most: 100 ms of the degraded capacity.
const BURST: f64 = 5.0;
const ANSWER_MS: u64 = 20;
pub(crate) const TIMEOUT_MS: u64 = 1_000;
pub(crate) const DEGRADED_FROM_MS: u64 = 60_000;
pub(crate) const DEGRADED_UNTIL_MS: u64 = 180_000;
const END_MS: u64 = 300_000;

/// How the callers call the dependency: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    /// Every call goes to the dependency.
    NoBreaker,
    /// `threshold(5)`, `recovery(5s)`.
    Classic,
    /// `shed(2)`, the usual multiplier.
    Graded2,
    /// `shed(1.2)`: sheds from a smaller share of failures on.
    Graded1_2,
    /// An adaptive concurrency limit, `adaptive_concurrency(5, 100)`, and
    /// no trip rule (`shed(2)` beside it sheds next to nothing here).
    Adaptive,
}

impl Guard {
    /// Every row, in the order printed.
    pub(crate) const ALL: [Guard; 5] = [
        Guard::NoBreaker,
        Guard::Classic,
        Guard::Graded2,
        Guard::Graded1_2,
        Guard::Adaptive,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Guard::NoBreaker => "no breaker",
            Guard::Classic => "classic: 5 in a row, 5 s",
            Guard::Graded2 => "graded, shed 2",
            Guard::Graded1_2 => "graded, shed 1.2",
            Guard::Adaptive => "adaptive limit 5..=100",
        }
    }

    /// The callers' breaker (on the simulation's clock), if any.
    fn breaker(self) -> Option<Builder> {
        match self {
            Guard::NoBreaker => None,
            Guard::Classic => Some(
                Breaker::builder()
                    .threshold(5)
                    .recovery(Duration::from_secs(5)),
            ),
            // The default window, 10 s: at least the 1 s timeout.
            Guard::Graded2 => Some(Breaker::builder().shed(2.0)),
            Guard::Graded1_2 => Some(Breaker::builder().shed(1.2)),
            Guard::Adaptive => Some(Breaker::builder().shed(2.0).adaptive_concurrency(5, 100)),
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A caller makes call number `call`.
    Arrival { call: usize },
    /// Call `call` ends: answered (`true`) or timed out.
    Ends { call: usize, answered: bool },
}

/// What happened in one run.
#[derive(Default)]
pub(crate) struct Run {
    /// Calls made while the dependency was degraded, and of those: answered,
    /// let through to the dependency, refused by the breaker.
    pub(crate) degraded_calls: u64,
    pub(crate) degraded_answered: u64,
    pub(crate) degraded_sent: u64,
    pub(crate) degraded_refused: u64,
    /// What callers waited, in ms, for each call made while degraded (0 for
    /// a refusal).
    latencies: Vec<u64>,
    /// The last call made after the capacity came back that did not get an
    /// answer (refused or timed out), if any.
    pub(crate) last_miss_after: Option<u64>,
    /// Calls made over the whole run, and answered.
    pub(crate) calls: u64,
    pub(crate) answered: u64,
}

impl Run {
    fn degraded_secs() -> f64 {
        (DEGRADED_UNTIL_MS - DEGRADED_FROM_MS) as f64 / 1000.0
    }

    /// Calls answered per second while degraded.
    pub(crate) fn goodput(&self) -> f64 {
        self.degraded_answered as f64 / Self::degraded_secs()
    }

    /// Goodput while degraded as a share of the capacity then.
    pub(crate) fn goodput_share(&self) -> f64 {
        self.goodput() / DEGRADED_CAPACITY
    }

    /// Calls per second that reached the dependency while degraded.
    pub(crate) fn load(&self) -> f64 {
        self.degraded_sent as f64 / Self::degraded_secs()
    }

    /// The `q` quantile (0 to 1) of what callers waited while degraded, in ms.
    pub(crate) fn latency_ms(&self, q: f64) -> u64 {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// The mean of what callers waited while degraded, in ms.
    pub(crate) fn mean_latency_ms(&self) -> f64 {
        self.latencies.iter().sum::<u64>() as f64 / self.latencies.len() as f64
    }

    /// How long after the capacity came back every call got an answer again,
    /// in ms: up to just after the last call that did not.
    pub(crate) fn full_goodput_after_ms(&self) -> u64 {
        self.last_miss_after
            .map_or(0, |t| t + 1 - DEGRADED_UNTIL_MS)
    }
}

fn degraded(t_ms: u64) -> bool {
    (DEGRADED_FROM_MS..DEGRADED_UNTIL_MS).contains(&t_ms)
}

/// The dependency: serves every call, except while degraded, when it serves
/// those its token bucket allows.
struct Dependency {
    tokens: f64,
    refilled_ms: u64,
}

impl Dependency {
    /// Whether a call reaching it at `t_ms` is served.
    fn serves(&mut self, t_ms: u64) -> bool {
        if !degraded(t_ms) {
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
            false
        }
    }
}

fn simulate(guard: Guard, arrivals: &[u64]) -> Run {
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
        dependency: Dependency {
            tokens: BURST,
            refilled_ms: 0,
        },
        events: Events::new(),
        run: Run::default(),
    };
    for (call, &t) in arrivals.iter().enumerate() {
        sim.events.schedule(t, Event::Arrival { call });
    }
    while let Some((t, event)) = sim.events.pop() {
        advance_to(&clock, t);
        sim.handle(t, event);
    }
    sim.run
}

struct Sim<'b> {
    breaker: Option<&'b Breaker>,
    arrivals: &'b [u64],
    /// The permit of each call in flight.
    permits: Vec<Option<Permit<'b>>>,
    dependency: Dependency,
    events: Events<Event>,
    run: Run,
}

impl<'b> Sim<'b> {
    /// Asks the guard to let a call through: `Ok` with what to resolve when
    /// it ends (nothing without a guard), `Err` when refused.
    fn admit(&self) -> Result<Option<Permit<'b>>, ()> {
        match self.breaker {
            None => Ok(None),
            Some(breaker) => breaker.acquire().map(Some).map_err(drop),
        }
    }

    /// Tells the guard how a call it let through ended.
    fn resolve(permit: Permit<'_>, answered: bool) {
        permit.record(if answered {
            Outcome::Success
        } else {
            Outcome::Failure
        });
    }

    fn handle(&mut self, t: u64, event: Event) {
        match event {
            Event::Arrival { call } => {
                self.run.calls += 1;
                let in_phase = degraded(t);
                self.run.degraded_calls += u64::from(in_phase);
                match self.admit() {
                    Err(()) => {
                        // The fallback answers at once.
                        if in_phase {
                            self.run.degraded_refused += 1;
                            self.run.latencies.push(0);
                        }
                        self.missed(t);
                    }
                    Ok(permit) => {
                        self.permits[call] = permit;
                        self.run.degraded_sent += u64::from(in_phase);
                        let event = if self.dependency.serves(t) {
                            (t + ANSWER_MS, true)
                        } else {
                            (t + TIMEOUT_MS, false)
                        };
                        self.events.schedule(
                            event.0,
                            Event::Ends {
                                call,
                                answered: event.1,
                            },
                        );
                    }
                }
            }
            Event::Ends { call, answered } => {
                if let Some(permit) = self.permits[call].take() {
                    Self::resolve(permit, answered);
                }
                let started = self.arrivals[call];
                if degraded(started) {
                    self.run.latencies.push(t - started);
                    self.run.degraded_answered += u64::from(answered);
                }
                if answered {
                    self.run.answered += 1;
                } else {
                    self.missed(started);
                }
            }
        }
    }

    /// A call made at `t` got no answer.
    fn missed(&mut self, t: u64) {
        if t >= DEGRADED_UNTIL_MS {
            self.run.last_miss_after = Some(self.run.last_miss_after.unwrap_or(0).max(t));
        }
    }
}

/// Every row of [`Guard::ALL`] over the same calls (seeded by `seed`).
pub(crate) struct Runs {
    pub(crate) calls: usize,
    pub(crate) runs: Vec<(Guard, Run)>,
}

impl Index<Guard> for Runs {
    type Output = Run;

    fn index(&self, guard: Guard) -> &Run {
        sim::row(&self.runs, guard)
    }
}

pub(crate) fn runs(seed: u64) -> Runs {
    let arrivals = Rng(seed).poisson(OFFERED_PER_SEC, END_MS);
    Runs {
        calls: arrivals.len(),
        runs: Guard::ALL
            .iter()
            .map(|&guard| (guard, simulate(guard, &arrivals)))
            .collect(),
    }
}

fn main() {
    let seed: u64 = flag("seed", 7);
    let all = runs(seed);
    println!(
        "Callers offer {OFFERED_PER_SEC} calls/s (seed {seed}: {} calls in {} s) to a dependency \
         that answers in {ANSWER_MS} ms.\nFrom t = {} s to t = {} s it serves at most \
         {DEGRADED_CAPACITY} calls/s; the others time out after {TIMEOUT_MS} ms.\n",
        all.calls,
        END_MS / 1000,
        DEGRADED_FROM_MS / 1000,
        DEGRADED_UNTIL_MS / 1000,
    );
    println!(
        "{:<25} {:>15} {:>11} {:>7} {:>7} {:>11}",
        "", "goodput", "load on", "mean", "p99", "every call"
    );
    println!(
        "{:<25} {:>15} {:>11} {:>7} {:>7} {:>11}",
        "", "(of capacity)", "dependency", "wait", "wait", "answered"
    );
    println!(
        "{:<25} {:>15} {:>11} {:>7} {:>7} {:>11}",
        "", "", "", "", "", "again after"
    );
    println!("{}", "─".repeat(82));
    for (guard, run) in &all.runs {
        println!(
            "{:<25} {:>6.1}/s ({:>3.0}%) {:>9.1}/s {:>4.0} ms {:>4} ms {:>9.1} s",
            guard.label(),
            run.goodput(),
            run.goodput_share() * 100.0,
            run.load(),
            run.mean_latency_ms(),
            run.latency_ms(0.99),
            run.full_goodput_after_ms() as f64 / 1000.0,
        );
    }
    println!(
        "Goodput, load and waits from t = {} s to t = {} s; a refused call waits 0 ms (the \
         fallback answers at once).\nEvery call answered again: after the capacity came back at \
         t = {} s, from just after the last call that was refused or timed out.",
        DEGRADED_FROM_MS / 1000,
        DEGRADED_UNTIL_MS / 1000,
        DEGRADED_UNTIL_MS / 1000,
    );
}
