//! Metastable failure: retries keep a server down after what tipped it
//! over has passed, and what failfast does about it, over many seeds.
//!
//! A metastable failure (Bronson et al., "Metastable Failures in
//! Distributed Systems", HotOS 2021; Huang et al., "Metastable Failures in
//! the Wild", OSDI 2022) is a bad state that outlives its trigger: a load
//! spike or a slowdown tips the system over, and a sustaining effect, most
//! often retries, keeps it over once the trigger is gone. Here, on the real
//! library and a virtual clock (the harness is `examples/common/sim.rs`):
//!
//! - Clients make 70 requests a second (Poisson arrivals). An attempt
//!   times out after 1 s; a request is retried as `#[retry]` does by
//!   default: 3 attempts, 100 ms then 200 ms apart; a refusal by a breaker
//!   is never retried (the fallback answers at once).
//! - The server has 10 workers and a queue (first in, first out, no
//!   bound). A request takes 100 ms on average (exponential), so it serves
//!   100 a second. It cannot tell that a caller gave up: it works on every
//!   request it took in, and the work on those whose caller is gone is
//!   wasted.
//! - The trigger: from t = 30 s to t = 40 s the server's capacity halves
//!   (each request takes twice as long), 50 a second against 70 asked. The
//!   queue grows, waits pass the 1 s timeout, callers retry, and the
//!   server, now asked for up to 3 × 70 attempts a second, works on
//!   requests nobody waits for. From t = 40 s its capacity is back;
//!   arrivals stop at t = 120 s, and the run goes on until every request
//!   has its answer.
//!
//! Rows, each the same arrivals and service times for a seed:
//!
//! - `no retries`: the timeout alone. Not a row a user would pick; it shows
//!   what sustains the failure: without retries the queue drains and the
//!   server recovers on its own.
//! - `retries, no budget`: no protection, `#[retry]`'s attempts and backoff
//!   without its budget.
//! - `retries + budget`: `#[retry]`'s policy, its budget included: over the
//!   last 10 s, retries add at most 20% of the calls, plus 10.
//! - `breaker`: retries without a budget, through a breaker at the
//!   library's defaults (5 failures in a row, open 30 s).
//! - `graded`: the same through graded shedding at its defaults (`shed =
//!   2`, a 10 s window, from 10 calls).
//! - `adaptive limit`: the same through `max_concurrent = 1..=50` (with
//!   `shed = 2` in place of the default rule, as in `examples/cascade.rs`).
//! - `breaker + budget`, `breaker 1s..4s + budget` and `graded + budget`:
//!   `#[retry]` over `#[circuit_breaker]`, budget and breaker together,
//!   the breaker at its defaults, with `recovery = "1s..4s"`, or shedding.
//!
//! The retry budget is not `#[retry]`'s own code: its policy reads the
//! system clock (with the `testing` feature, the clock a test binary
//! installs, one for the whole process), which cannot be one virtual clock
//! per run on threads running seeds side by side. This example keeps the
//! same budget on the run's clock: a call counted in its second, ten
//! one-second slots, a retry granted while the retries in the last 10 s
//! stay within 20% of the calls plus 10; and, as the expansion does, no
//! retry after a failure that left the breaker open until past the
//! backoff. The breakers are failfast's own.
//!
//! Columns (medians over the seeds; the least and the most under each):
//! *back to 90% after*, how long after the trigger ended the share of
//! requests answered (by the second they were made in) stays at 90% or
//! more to the end of the run ("never": it does not). 90% of what is
//! asked, that is: the healthy server answers all of it, 70 a second, 70%
//! of its capacity. Then the *answered* share of requests
//! made after the trigger, and the share the breaker refused (*fallback*,
//! answered at once or after a timeout); the server's *load* after the trigger, in
//! attempts a second against its 100; the share of its work *wasted* on
//! requests whose caller was gone, over the whole run; and what customers
//! *waited* after the trigger, median and 99th percentile, until an
//! answer, an error or the fallback.
//!
//! ```text
//! cargo run --release --features testing --example metastable
//! cargo run --release --features testing --example metastable -- --seeds 200
//! ```

use std::collections::VecDeque;
use std::time::Duration;

use failfast::{Breaker, Builder, ManualClock, Outcome, Permit, State};

// Every simulation includes it, so the test binary that replays them
// (`tests/calls`) loads it more than once.
#[allow(clippy::duplicate_mod)]
#[path = "common/sim.rs"]
mod sim;
use sim::{Events, Next, Rng, Spread, Table, Unit, advance_to};

pub(crate) const DEMAND_PER_SEC: f64 = 70.0;
const WORKERS: usize = 10;
const SERVICE_MS: f64 = 100.0;
/// Requests a second the server serves: 10 workers × 1 / 100 ms.
pub(crate) const CAPACITY_PER_SEC: f64 = WORKERS as f64 * 1000.0 / SERVICE_MS;
const TIMEOUT_MS: u64 = 1_000;
const ATTEMPTS: u32 = 3;
const BACKOFF_MIN_MS: u64 = 100;
const BACKOFF_MAX_MS: u64 = 2_000;
/// `#[retry]`'s budget: retries over the last 10 s at most this share of
/// the calls, plus `MIN_RETRIES`.
const BUDGET: f64 = 0.2;
const MIN_RETRIES: u64 = 10;
const BUDGET_SECS: u64 = 10;
/// Seeds run when the command line does not say.
pub(crate) const SEEDS: u64 = 50;
/// A request answered counts towards "recovered" at this share.
pub(crate) const RECOVERED_SHARE: f64 = 0.9;

/// When the trigger starts and ends, and when arrivals stop (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Phases {
    pub(crate) trigger_from: u64,
    pub(crate) trigger_until: u64,
    pub(crate) end: u64,
}

impl Phases {
    /// The example's: 30 s healthy, 10 s at half the capacity, 80 s after.
    pub(crate) const EXAMPLE: Phases = Phases {
        trigger_from: 30_000,
        trigger_until: 40_000,
        end: 120_000,
    };

    fn triggered(self, t_ms: u64) -> bool {
        (self.trigger_from..self.trigger_until).contains(&t_ms)
    }
}

/// How clients call the server: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    NoRetries,
    Retries,
    RetriesBudget,
    Breaker,
    Graded,
    Adaptive,
    BreakerBudget,
    BreakerTunedBudget,
    GradedBudget,
}

impl Guard {
    /// Every row, in the order printed.
    pub(crate) const ALL: [Guard; 9] = [
        Guard::NoRetries,
        Guard::Retries,
        Guard::RetriesBudget,
        Guard::Breaker,
        Guard::Graded,
        Guard::Adaptive,
        Guard::BreakerBudget,
        Guard::BreakerTunedBudget,
        Guard::GradedBudget,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Guard::NoRetries => "no retries",
            Guard::Retries => "retries, no budget",
            Guard::RetriesBudget => "retries + budget",
            Guard::Breaker => "breaker",
            Guard::Graded => "graded",
            Guard::Adaptive => "adaptive limit",
            Guard::BreakerBudget => "breaker + budget",
            Guard::BreakerTunedBudget => "breaker 1s..4s + budget",
            Guard::GradedBudget => "graded + budget",
        }
    }

    /// The row's settings, as the attributes write them.
    pub(crate) fn settings(self) -> &'static str {
        match self {
            Guard::NoRetries => "timeout = \"1s\" only",
            Guard::Retries => {
                "retries as #[retry] (attempts = 3, backoff = \"100ms..2s\"), no budget"
            }
            Guard::RetriesBudget => {
                "#[retry] (attempts = 3, backoff = \"100ms..2s\", budget = 0.2)"
            }
            Guard::Breaker => {
                "retries, no budget; #[circuit_breaker] (threshold = 5, recovery = \"30s\": defaults)"
            }
            Guard::Graded => {
                "retries, no budget; shed = 2 (shed_window = \"10s\", min_calls = 10: defaults)"
            }
            Guard::Adaptive => "retries, no budget; max_concurrent = 1..=50, shed = 2",
            Guard::BreakerBudget => "#[retry] over #[circuit_breaker], both at their defaults",
            Guard::BreakerTunedBudget => "#[retry] over #[circuit_breaker(recovery = \"1s..4s\")]",
            Guard::GradedBudget => "#[retry] over #[circuit_breaker(shed = 2)]",
        }
    }

    fn retries(self) -> bool {
        self != Guard::NoRetries
    }

    fn budget(self) -> bool {
        matches!(
            self,
            Guard::RetriesBudget
                | Guard::BreakerBudget
                | Guard::BreakerTunedBudget
                | Guard::GradedBudget
        )
    }

    /// The clients' breaker (on the simulation's clock), if any.
    fn breaker(self) -> Option<Builder> {
        let seconds = Duration::from_secs;
        let builder = Breaker::builder();
        match self {
            Guard::NoRetries | Guard::Retries | Guard::RetriesBudget => None,
            Guard::Breaker | Guard::BreakerBudget => Some(builder),
            Guard::BreakerTunedBudget => {
                Some(builder.recovery(seconds(1)).max_recovery(seconds(4)))
            }
            Guard::Graded | Guard::GradedBudget => Some(builder.shed(2.0)),
            Guard::Adaptive => Some(builder.adaptive_concurrency(1, 50).shed(2.0)),
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Attempt `attempt`'s caller stops waiting for it.
    Timeout { attempt: usize },
    /// A worker finishes attempt `attempt`.
    Served { attempt: usize },
    /// Request `request` tries again.
    Retry { request: usize },
}

/// A client request: up to `ATTEMPTS` attempts.
struct Request {
    arrived: u64,
    attempts: u32,
}

/// One attempt at the server.
struct Attempt<'b> {
    request: usize,
    /// The caller stopped waiting (timed out).
    abandoned: bool,
    /// The caller got the answer.
    answered: bool,
    /// What the server's work on it takes (ms), once started.
    took: f64,
    permit: Option<Permit<'b>>,
}

/// What happened in one run (one row, one seed).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    phases: Phases,
    /// Per second of arrival: requests, and those answered.
    pub(crate) requests: Vec<u32>,
    pub(crate) answered: Vec<u32>,
    /// Per second: attempts that reached the server.
    pub(crate) load: Vec<u32>,
    /// Work done by the server, and of it, on attempts whose caller was
    /// gone when it finished (ms).
    pub(crate) work_ms: f64,
    pub(crate) wasted_ms: f64,
    /// What customers who arrived after the trigger waited, in ms: median
    /// and 99th percentile.
    pub(crate) wait_p50_ms: f64,
    pub(crate) wait_p99_ms: f64,
    /// Requests refused by the breaker (answered at once by the fallback,
    /// or after a timeout), after the trigger.
    pub(crate) refused_after: u64,
    pub(crate) longest_queue: usize,
}

impl Run {
    /// The share of requests made in second `s` that got an answer.
    pub(crate) fn answered_share(&self, s: usize) -> f64 {
        if self.requests[s] == 0 {
            1.0
        } else {
            f64::from(self.answered[s]) / f64::from(self.requests[s])
        }
    }

    fn seconds(&self) -> std::ops::Range<usize> {
        (self.phases.trigger_until / 1000) as usize..(self.phases.end / 1000) as usize
    }

    /// How long after the trigger ended the answered share stays at 90% or
    /// more, second by second, to the end (s); infinite when it does not.
    pub(crate) fn recovered_after(&self) -> f64 {
        let seconds = self.seconds();
        let from = seconds.start;
        match seconds
            .clone()
            .rev()
            .find(|&s| self.answered_share(s) < RECOVERED_SHARE)
        {
            None => 0.0,
            Some(s) if s + 1 == seconds.end => f64::INFINITY,
            Some(s) => (s + 1 - from) as f64,
        }
    }

    /// The share of requests made after the trigger that got an answer.
    pub(crate) fn answered_after(&self) -> f64 {
        let s = self.seconds();
        let asked: u32 = self.requests[s.clone()].iter().sum();
        let answered: u32 = self.answered[s].iter().sum();
        f64::from(answered) / f64::from(asked.max(1))
    }

    /// The share of requests made after the trigger that the breaker
    /// refused (answered by the fallback).
    pub(crate) fn fallback_after(&self) -> f64 {
        let asked: u32 = self.requests[self.seconds()].iter().sum();
        self.refused_after as f64 / f64::from(asked.max(1))
    }

    /// Attempts a second at the server after the trigger.
    pub(crate) fn load_after(&self) -> f64 {
        let s = self.seconds();
        let n = s.len();
        f64::from(self.load[s].iter().sum::<u32>()) / n as f64
    }

    /// The share of the server's work spent on attempts nobody waited for.
    pub(crate) fn wasted(&self) -> f64 {
        self.wasted_ms / self.work_ms.max(1.0)
    }
}

/// `#[retry]`'s budget on the run's clock: calls and retries per second
/// over the last `BUDGET_SECS` seconds.
struct Budget {
    /// (second, calls, retries), one slot per second of the window.
    slots: [(u64, u64, u64); BUDGET_SECS as usize],
}

impl Budget {
    fn slot(&mut self, t_ms: u64) -> &mut (u64, u64, u64) {
        let second = t_ms / 1000;
        let slot = &mut self.slots[(second % BUDGET_SECS) as usize];
        if slot.0 != second {
            *slot = (second, 0, 0);
        }
        slot
    }

    fn call(&mut self, t_ms: u64) {
        self.slot(t_ms).1 += 1;
    }

    /// Takes a retry if the window has one.
    fn spend(&mut self, t_ms: u64) -> bool {
        let second = t_ms / 1000;
        self.slot(t_ms);
        let (calls, retries) = self
            .slots
            .iter()
            .filter(|s| s.0 + BUDGET_SECS > second)
            .fold((0, 0), |(c, r), s| (c + s.1, r + s.2));
        let allowed = (retries + 1) as f64 <= BUDGET * calls as f64 + MIN_RETRIES as f64;
        if allowed {
            self.slot(t_ms).2 += 1;
        }
        allowed
    }
}

/// One seed's draws: request arrivals, and each attempt's service time in
/// the order the server starts them.
pub(crate) struct Draws {
    arrivals: Vec<u64>,
    service: Rng,
}

pub(crate) fn draws(seed: u64, phases: Phases) -> Draws {
    Draws {
        arrivals: Rng::stream(seed, 0).poisson(DEMAND_PER_SEC, phases.end - 1),
        service: Rng::stream(seed, 1),
    }
}

/// One row over one seed.
pub(crate) fn simulate(guard: Guard, phases: Phases, seed: u64, draws: &Draws) -> Run {
    let row = Guard::ALL.iter().position(|g| *g == guard).unwrap_or(0);
    sim::seed_draws(seed, row);
    let clock = ManualClock::new();
    let breaker = guard.breaker().map(|builder| {
        builder
            .clock(clock.clone())
            .build()
            .expect("valid breaker configuration")
    });
    let seconds = (phases.end / 1000) as usize + 30;
    let mut sim = Sim {
        guard,
        phases,
        breaker: breaker.as_ref(),
        service: draws.service.clone(),
        events: Events::new(),
        requests: Vec::with_capacity(draws.arrivals.len()),
        attempts: Vec::new(),
        queue: VecDeque::new(),
        busy: 0,
        budget: Budget {
            slots: [(u64::MAX - BUDGET_SECS, 0, 0); BUDGET_SECS as usize],
        },
        unresolved: 0,
        waits: Vec::new(),
        run: Run {
            phases,
            requests: vec![0; seconds],
            answered: vec![0; seconds],
            load: vec![0; seconds],
            work_ms: 0.0,
            wasted_ms: 0.0,
            wait_p50_ms: 0.0,
            wait_p99_ms: 0.0,
            refused_after: 0,
            longest_queue: 0,
        },
    };
    let mut next = 0;
    while let Some((t, what)) = sim.events.next(&draws.arrivals, &mut next) {
        if t >= phases.end && sim.unresolved == 0 {
            // Every request has its answer: what is left is work nobody
            // waits for.
            break;
        }
        advance_to(&clock, t);
        match what {
            Next::Arrival(_) => sim.arrival(t),
            Next::Event(Event::Timeout { attempt }) => sim.timeout(t, attempt),
            Next::Event(Event::Served { attempt }) => sim.served(t, attempt),
            Next::Event(Event::Retry { request }) => sim.attempt(t, request),
        }
    }
    let waits = std::mem::take(&mut sim.waits);
    let mut run = sim.run;
    if !waits.is_empty() {
        run.wait_p50_ms = Spread::quantile(waits.iter().copied(), 0.5);
        run.wait_p99_ms = Spread::quantile(waits.iter().copied(), 0.99);
    }
    run
}

struct Sim<'b> {
    guard: Guard,
    phases: Phases,
    breaker: Option<&'b Breaker>,
    service: Rng,
    events: Events<Event>,
    requests: Vec<Request>,
    attempts: Vec<Attempt<'b>>,
    /// Attempts waiting for a worker, oldest first.
    queue: VecDeque<usize>,
    busy: usize,
    budget: Budget,
    /// Requests without their answer yet.
    unresolved: usize,
    /// What customers who arrived after the trigger waited (ms).
    waits: Vec<f64>,
    run: Run,
}

impl Sim<'_> {
    fn arrival(&mut self, t: u64) {
        let request = self.requests.len();
        self.requests.push(Request {
            arrived: t,
            attempts: 0,
        });
        self.run.requests[(t / 1000) as usize] += 1;
        self.unresolved += 1;
        if self.guard.budget() {
            self.budget.call(t);
        }
        self.attempt(t, request);
    }

    /// Request `request` makes an attempt, if its guard lets it.
    fn attempt(&mut self, t: u64, request: usize) {
        let permit = match self.breaker {
            None => None,
            Some(breaker) => match breaker.acquire() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    // The fallback answers; a refusal is never retried.
                    let arrived = self.requests[request].arrived;
                    if arrived >= self.phases.trigger_until {
                        self.run.refused_after += 1;
                    }
                    self.resolve(t, request, false);
                    return;
                }
            },
        };
        self.requests[request].attempts += 1;
        let attempt = self.attempts.len();
        self.attempts.push(Attempt {
            request,
            abandoned: false,
            answered: false,
            took: 0.0,
            permit,
        });
        self.run.load[(t / 1000) as usize] += 1;
        self.events
            .schedule(t + TIMEOUT_MS, Event::Timeout { attempt });
        if self.busy < WORKERS {
            self.start(t, attempt);
        } else {
            self.queue.push_back(attempt);
            self.run.longest_queue = self.run.longest_queue.max(self.queue.len());
        }
    }

    /// A worker starts on `attempt`.
    fn start(&mut self, t: u64, attempt: usize) {
        self.busy += 1;
        let mean = if self.phases.triggered(t) {
            2.0 * SERVICE_MS
        } else {
            SERVICE_MS
        };
        let took = self.service.exp(mean).max(1.0);
        self.attempts[attempt].took = took;
        self.run.work_ms += took;
        self.events
            .schedule(t + took as u64, Event::Served { attempt });
    }

    fn served(&mut self, t: u64, attempt: usize) {
        self.busy -= 1;
        let a = &mut self.attempts[attempt];
        if a.abandoned {
            self.run.wasted_ms += a.took;
        } else {
            a.answered = true;
            if let Some(permit) = a.permit.take() {
                permit.record(Outcome::Success);
            }
            let request = a.request;
            self.resolve(t, request, true);
        }
        if let Some(next) = self.queue.pop_front() {
            self.start(t, next);
        }
    }

    fn timeout(&mut self, t: u64, attempt: usize) {
        let a = &mut self.attempts[attempt];
        if a.answered {
            return;
        }
        a.abandoned = true;
        if let Some(permit) = a.permit.take() {
            permit.record(Outcome::Failure);
        }
        let request = a.request;
        match self.retry_delay(t, request) {
            Some(delay) => self.events.schedule(t + delay, Event::Retry { request }),
            None => self.resolve(t, request, false),
        }
    }

    /// After a timeout: the backoff before the next attempt, or `None` to
    /// give up (no attempts left, the budget spent, or the breaker open
    /// past the backoff).
    fn retry_delay(&mut self, t: u64, request: usize) -> Option<u64> {
        let made = self.requests[request].attempts;
        if !self.guard.retries() || made >= ATTEMPTS {
            return None;
        }
        let delay = (BACKOFF_MIN_MS << (made - 1)).min(BACKOFF_MAX_MS);
        if let Some(breaker) = self.breaker.filter(|b| b.state() == State::Open) {
            let after = breaker.snapshot().retry_after;
            if after.is_none_or(|after| after > Duration::from_millis(delay)) {
                return None;
            }
        }
        if self.guard.budget() && !self.budget.spend(t) {
            return None;
        }
        Some(delay)
    }

    /// Request `request` ends at `t`: answered or not.
    fn resolve(&mut self, t: u64, request: usize, answered: bool) {
        self.unresolved -= 1;
        let arrived = self.requests[request].arrived;
        if answered {
            self.run.answered[(arrived / 1000) as usize] += 1;
        }
        if arrived >= self.phases.trigger_until && arrived < self.phases.end {
            self.waits.push((t - arrived) as f64);
        }
    }
}

/// Each row of `guards` over each seed: `runs[row][seed]`.
pub(crate) fn runs(guards: &[Guard], phases: Phases, seeds: std::ops::Range<u64>) -> Vec<Vec<Run>> {
    let by_seed = sim::over_seeds(seeds, |seed| {
        let draws = draws(seed, phases);
        guards
            .iter()
            .map(|&guard| simulate(guard, phases, seed, &draws))
            .collect::<Vec<_>>()
    });
    (0..guards.len())
        .map(|row| by_seed.iter().map(|runs| runs[row].clone()).collect())
        .collect()
}

/// `figure` of each run, over the runs.
pub(crate) fn spread(runs: &[Run], figure: impl Fn(&Run) -> f64) -> Spread {
    Spread::of(runs.iter().map(figure))
}

/// The answered share per `step` seconds, the median over the runs, as a
/// line of blocks (· none, ▁ almost none … █ all).
fn shape(runs: &[Run], step: usize) -> String {
    const BLOCKS: [char; 9] = ['·', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let seconds = (runs[0].phases.end / 1000) as usize;
    (0..seconds / step)
        .map(|i| {
            let share = Spread::of(runs.iter().map(|r| {
                let asked: u32 = r.requests[i * step..(i + 1) * step].iter().sum();
                let answered: u32 = r.answered[i * step..(i + 1) * step].iter().sum();
                f64::from(answered) / f64::from(asked.max(1))
            }))
            .median;
            BLOCKS[((share * 8.0).round() as usize)
                .min(8)
                .max(usize::from(share > 0.0))]
        })
        .collect()
}

fn main() {
    let seeds = sim::seeds_from_args(SEEDS);
    let phases = Phases::EXAMPLE;
    let all = runs(&Guard::ALL, phases, seeds.clone());
    println!(
        "Clients ask {DEMAND_PER_SEC} requests/s of a server with {WORKERS} workers ({} ms a \
         request: {CAPACITY_PER_SEC} a second)\nand a queue with no bound, which serves requests \
         whose caller gave up. An attempt times out after {TIMEOUT_MS} ms.\nFrom t = {} s to \
         t = {} s the server's capacity halves. Arrivals stop at t = {} s.\n",
        SERVICE_MS,
        phases.trigger_from / 1000,
        phases.trigger_until / 1000,
        phases.end / 1000,
    );
    println!("Rows:");
    for guard in Guard::ALL {
        println!("  {:<23} {}", guard.label(), guard.settings());
    }
    let step = 5;
    println!(
        "\nRequests answered, per {step} s (median over the seeds; █ all, ▁ almost none, · none); the trigger is {}–{} s:",
        phases.trigger_from / 1000,
        phases.trigger_until / 1000,
    );
    let seconds = phases.end / 1000;
    let ticks: String = (0..seconds / step as u64)
        .map(|i| {
            if (i * step as u64) % 30 == 0 {
                '|'
            } else {
                ' '
            }
        })
        .collect();
    println!("  {:<23} {ticks}", "t = 0, 30, 60, 90 s");
    for (guard, runs) in Guard::ALL.iter().zip(&all) {
        println!("  {:<23} {}", guard.label(), shape(runs, step));
    }
    let table = Table::new(
        23,
        &[
            ("back to 90%", "after (s)", 11),
            ("answered", "after", 9),
            ("fallback", "after", 9),
            ("server load", "(of 100/s)", 11),
            ("work", "wasted", 7),
            ("wait p50", "(ms)", 9),
            ("wait p99", "(ms)", 9),
        ],
    );
    println!("\n{}", table.header());
    for (guard, runs) in Guard::ALL.iter().zip(&all) {
        let s = |f: fn(&Run) -> f64| spread(runs, f);
        println!(
            "{}",
            table.row(
                guard.label(),
                &[
                    (s(Run::recovered_after), Unit::Secs(0)),
                    (s(Run::answered_after), Unit::Percent),
                    (s(Run::fallback_after), Unit::Percent),
                    (s(Run::load_after), Unit::Plain(0)),
                    (s(Run::wasted), Unit::Percent),
                    (s(|r| r.wait_p50_ms), Unit::Plain(0)),
                    (s(|r| r.wait_p99_ms), Unit::Plain(0)),
                ]
            )
        );
    }
    println!(
        "Medians over the seeds; under each, the least and the most. back to 90%: from the end \
         of the trigger to the\nsecond from which 90% or more of the requests made in each \
         second are answered, to the end (never: not by then).\nanswered (by the server), \
         fallback (refused by the breaker), server load and waits: from the end of the trigger \
         on;\nwork wasted: of the whole run."
    );
    println!("\n{}", sim::provenance("metastable", &seeds));
}
