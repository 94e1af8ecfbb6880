//! Cascade: a payment gateway hangs, and what each way of calling it does to
//! a pool of servers, over many seeds.
//!
//! A discrete-event simulation of the real library on a virtual clock (the
//! harness is `examples/common/sim.rs`). 6 servers × 50 worker threads take
//! 4 checkouts per second and 20 page views per second (Poisson arrivals,
//! round-robin over the servers); a page view holds a worker for 50 ms and
//! never touches the gateway. A checkout holds its worker while it calls the
//! gateway, up to 3 attempts, each ended by an answer (400 ms) or the
//! timeout; a refusal by the breaker is never retried: the fallback answers
//! at once ("payment pending, we'll email you") and the worker is free. The
//! gateway hangs from t = 60 s to t = 240 s and answers again after.
//!
//! Every row sees the same arrivals for a seed; each server has a breaker
//! of its own, built with the row's settings on the simulation's clock and
//! driven through `acquire()` and `Permit::record`. Rows:
//!
//! - `no breaker, 30 s`: a 30 s timeout, no breaker. A checkout holds its
//!   worker for 3 × 30 s while the gateway hangs; by Little's law 4/s × 90 s
//!   = 360 busy workers, more than the 300 there are: the pool runs out and
//!   page views are refused with the checkouts.
//! - `timeout only, 3 s`: the same 3 s timeout as every breaker row, no
//!   breaker. 4/s × 9 s = 36 workers on average: the pool never runs out.
//!   This is the row a breaker has to beat: most of what the 30 s row loses
//!   is lost to its timeout, not to the want of a breaker.
//! - `classic`: the library's defaults, 5 failures in a row, open 30 s.
//! - `classic, tuned`: `recovery = "1s..4s"`, tuned to find the heal within
//!   seconds (the guide's "closing within seconds of healing").
//! - `failure rate`: `failure_rate = 0.5` at its defaults (the last 100
//!   calls, from 10 calls on, open 30 s). A server makes 0.67 checkouts a
//!   second: the hundred calls before the hang must be outweighed first.
//! - `graded`: `shed = 2` at its defaults (a 10 s window, from 10 calls). A
//!   server's window holds about 7 calls while the gateway is healthy, so
//!   shedding starts late, and after the heal the hang's failures stay in
//!   the window (10 s), refusing checkouts the gateway would pay until
//!   enough successes outweigh them.
//! - `graded, tuned`: `shed = 3, shed_window = "3s", min_calls = 3`, tuned for
//!   this outage: to stop shedding within about 3 s of the heal at 0.67
//!   calls a second per server (the shortest window allowed, the timeout;
//!   so few calls in it that `min_calls` comes down to 3; and k = 3 so that
//!   after the heal one success outweighs two failures).
//! - `adaptive limit`: `max_concurrent = 1..=50`: each timeout cuts a
//!   server's limit by a tenth, down to 1 call at once, and it follows the
//!   calls' latency (a queue cuts it, 20 s at the baseline bring it back
//!   from 1 to 50; `docs/guide/outcomes.md`). Beside `shed = 2`, which here
//!   stands in for the default rule: `max_concurrent` alone keeps
//!   `threshold = 5`, whose 5 timeouts in a row open the breaker before the
//!   limit is ever reached, so that row is the classic row, figure for
//!   figure.
//!
//! Columns (medians over the seeds; the least and the most under each):
//!
//! - *peak busy*: the most workers busy at once, of 300.
//! - *during the outage*, for the checkouts made while the gateway hangs:
//!   *slow failures*, checkouts that got no payment after waiting for at
//!   least one timeout (all attempts timed out, or the breaker refused a
//!   later attempt), and the *seconds* those customers waited in all;
//!   *instant fallbacks*, checkouts the breaker refused at the first
//!   attempt, answered at once.
//! - *after the heal*: attempts refused (breaker open, shedding, limit) once
//!   the gateway answers again, each a checkout it would have paid, and how
//!   long after the heal the *last* one was (0: none).
//! - *paid ≤ 10 s*: checkouts paid within 10 s of arriving, of the whole run.
//! - *page views refused*: page views that found no free worker.
//!
//! It writes `docs/cascade.svg`: busy workers over time, the median over
//! the seeds at each instant.
//!
//! ```text
//! cargo run --release --features testing --example cascade
//! cargo run --release --features testing --example cascade -- --seeds 200 --svg /tmp/cascade.svg
//! ```

use std::time::Duration;

use failfast::{Breaker, Builder, ManualClock, Outcome, Permit};
use plotters::prelude::*;

// Every simulation includes it, so the test binary that replays them
// (`tests/calls`) loads it more than once.
#[allow(clippy::duplicate_mod)]
#[path = "common/sim.rs"]
mod sim;
use sim::{Events, Next, Rng, Spread, Table, Unit, advance_to, flag};

const SERVERS: usize = 6;
const WORKERS_PER_SERVER: usize = 50;
pub(crate) const POOL: usize = SERVERS * WORKERS_PER_SERVER;
const CHECKOUTS_PER_SEC: f64 = 4.0;
const PAGE_VIEWS_PER_SEC: f64 = 20.0;
const PAGE_VIEW_MS: u64 = 50;
const GATEWAY_MS: u64 = 400;
pub(crate) const HANG_FROM_MS: u64 = 60_000;
pub(crate) const HANG_UNTIL_MS: u64 = 240_000;
const END_MS: u64 = 360_000;
const ATTEMPTS: u32 = 3;
const SAMPLE_MS: u64 = 100;
/// Seeds run when the command line does not say.
pub(crate) const SEEDS: u64 = 50;

/// How each server calls the gateway: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    NoBreaker30s,
    TimeoutOnly,
    Classic,
    ClassicTuned,
    FailureRate,
    Graded,
    GradedTuned,
    Adaptive,
}

impl Guard {
    /// Every row, in the order printed.
    pub(crate) const ALL: [Guard; 8] = [
        Guard::NoBreaker30s,
        Guard::TimeoutOnly,
        Guard::Classic,
        Guard::ClassicTuned,
        Guard::FailureRate,
        Guard::Graded,
        Guard::GradedTuned,
        Guard::Adaptive,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Guard::NoBreaker30s => "no breaker, 30 s",
            Guard::TimeoutOnly => "timeout only, 3 s",
            Guard::Classic => "classic",
            Guard::ClassicTuned => "classic, tuned",
            Guard::FailureRate => "failure rate",
            Guard::Graded => "graded",
            Guard::GradedTuned => "graded, tuned",
            Guard::Adaptive => "adaptive limit",
        }
    }

    /// The row's settings, as the attribute writes them.
    pub(crate) fn settings(self) -> &'static str {
        match self {
            Guard::NoBreaker30s => "timeout = \"30s\", no breaker",
            Guard::TimeoutOnly => "timeout = \"3s\", no breaker",
            Guard::Classic => "threshold = 5, recovery = \"30s\" (the defaults)",
            Guard::ClassicTuned => {
                "threshold = 5, recovery = \"1s..4s\" (TUNED: to find the heal within seconds)"
            }
            Guard::FailureRate => {
                "failure_rate = 0.5 (window = 100 calls, min_calls = 10, recovery = \"30s\": defaults)"
            }
            Guard::Graded => "shed = 2 (shed_window = \"10s\", min_calls = 10: the defaults)",
            Guard::GradedTuned => {
                "shed = 3, shed_window = \"3s\", min_calls = 3 (TUNED: to stop shedding within 3 s \
                 of the heal at 0.67 calls/s per server)"
            }
            Guard::Adaptive => {
                "max_concurrent = 1..=50, shed = 2 (shed in place of the default rule, which \
                 would open first)"
            }
        }
    }

    pub(crate) fn timeout_ms(self) -> u64 {
        match self {
            Guard::NoBreaker30s => 30_000,
            _ => 3_000,
        }
    }

    /// The breaker each server builds (on the simulation's clock), if any.
    fn breaker(self) -> Option<Builder> {
        let seconds = Duration::from_secs;
        let builder = Breaker::builder();
        match self {
            Guard::NoBreaker30s | Guard::TimeoutOnly => None,
            Guard::Classic => Some(builder),
            Guard::ClassicTuned => Some(builder.recovery(seconds(1)).max_recovery(seconds(4))),
            Guard::FailureRate => Some(builder.failure_rate(0.5)),
            Guard::Graded => Some(builder.shed(2.0)),
            Guard::GradedTuned => Some(builder.shed(3.0).shed_window(seconds(3)).min_calls(3)),
            // `shed` for want of another way to leave the default rule out:
            // beside `threshold = 5` (what `max_concurrent` alone declares) the
            // breaker opens before the limit acts, and the row is the classic
            // row, figure for figure.
            Guard::Adaptive => Some(builder.adaptive_concurrency(1, 50).shed(2.0)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Request {
    Checkout,
    PageView,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A gateway attempt of a checkout ends: answered (`true`) or timed out.
    AttemptEnds {
        job: usize,
        answered: bool,
    },
    PageViewDone {
        server: usize,
    },
}

/// A checkout in progress: it holds one worker of `server`.
struct Job<'b> {
    server: usize,
    arrived_ms: u64,
    /// Attempts made so far.
    attempts: u32,
    permit: Option<Permit<'b>>,
}

/// What happened in one run (one row, one seed).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Run {
    /// Busy workers (all servers), every `SAMPLE_MS`, when asked for.
    pub(crate) busy: Vec<u16>,
    pub(crate) peak: usize,
    /// Checkouts made while the gateway hangs that got no payment after
    /// waiting at least one timeout, what they waited in all (ms), and of
    /// them, those whose every attempt timed out.
    pub(crate) slow_failures: u64,
    pub(crate) slow_wait_ms: u64,
    pub(crate) failed_every_attempt: u64,
    /// Checkouts made while the gateway hangs that the breaker refused at
    /// the first attempt.
    pub(crate) instant_fallbacks: u64,
    /// Attempts refused once the gateway answers again, and the time of
    /// the last, after the heal (ms; 0: none).
    pub(crate) refused_after_heal: u64,
    pub(crate) last_refused_after_heal_ms: u64,
    pub(crate) paid: u64,
    pub(crate) paid_within_10_s: u64,
    /// Requests that found no free worker.
    pub(crate) refused_checkouts: u64,
    pub(crate) refused_page_views: u64,
}

fn gateway_hangs(t_ms: u64) -> bool {
    (HANG_FROM_MS..HANG_UNTIL_MS).contains(&t_ms)
}

/// One seed's arrivals, in time order: when, and what.
pub(crate) struct Arrivals {
    times: Vec<u64>,
    requests: Vec<Request>,
}

/// One row over one seed's arrivals; `samples`: keep busy workers over time.
pub(crate) fn simulate(guard: Guard, seed: u64, arrivals: &Arrivals, samples: bool) -> Run {
    let row = Guard::ALL.iter().position(|g| *g == guard).unwrap_or(0);
    sim::seed_draws(seed, row);
    let clock = ManualClock::new();
    let breakers: Vec<Breaker> = match guard.breaker() {
        None => Vec::new(),
        Some(builder) => (0..SERVERS)
            .map(|_| {
                builder
                    .clone()
                    .clock(clock.clone())
                    .build()
                    .expect("valid breaker configuration")
            })
            .collect(),
    };
    let mut sim = Sim {
        timeout_ms: guard.timeout_ms(),
        breakers: &breakers,
        events: Events::new(),
        jobs: Vec::new(),
        free_jobs: Vec::new(),
        busy: [0; SERVERS],
        next_server: 0,
        run: Run::default(),
    };
    let (mut next, mut next_sample) = (0, 0u64);
    while let Some((t, what)) = sim.events.next(&arrivals.times, &mut next) {
        if t > END_MS {
            break;
        }
        while samples && next_sample < t {
            sim.run.busy.push(sim.total_busy() as u16);
            next_sample += SAMPLE_MS;
        }
        advance_to(&clock, t);
        match what {
            Next::Arrival(i) => sim.arrival(t, arrivals.requests[i]),
            Next::Event(event) => sim.handle(t, event),
        }
    }
    while samples && next_sample <= END_MS {
        sim.run.busy.push(sim.total_busy() as u16);
        next_sample += SAMPLE_MS;
    }
    sim.run
}

struct Sim<'b> {
    timeout_ms: u64,
    breakers: &'b [Breaker],
    events: Events<Event>,
    jobs: Vec<Option<Job<'b>>>,
    free_jobs: Vec<usize>,
    busy: [usize; SERVERS],
    next_server: usize,
    run: Run,
}

impl<'b> Sim<'b> {
    fn total_busy(&self) -> usize {
        self.busy.iter().sum()
    }

    /// Round-robin load balancing; `None` when that server has no free worker.
    fn take_worker(&mut self) -> Option<usize> {
        let server = self.next_server;
        self.next_server = (self.next_server + 1) % SERVERS;
        if self.busy[server] == WORKERS_PER_SERVER {
            return None;
        }
        self.busy[server] += 1;
        self.run.peak = self.run.peak.max(self.total_busy());
        Some(server)
    }

    fn arrival(&mut self, t: u64, request: Request) {
        let Some(server) = self.take_worker() else {
            match request {
                Request::Checkout => self.run.refused_checkouts += 1,
                Request::PageView => self.run.refused_page_views += 1,
            }
            return;
        };
        match request {
            Request::PageView => self
                .events
                .schedule(t + PAGE_VIEW_MS, Event::PageViewDone { server }),
            Request::Checkout => {
                let job = Job {
                    server,
                    arrived_ms: t,
                    attempts: 0,
                    permit: None,
                };
                let id = match self.free_jobs.pop() {
                    Some(id) => {
                        self.jobs[id] = Some(job);
                        id
                    }
                    None => {
                        self.jobs.push(Some(job));
                        self.jobs.len() - 1
                    }
                };
                self.start_attempt(t, id);
            }
        }
    }

    fn handle(&mut self, t: u64, event: Event) {
        match event {
            Event::PageViewDone { server } => self.busy[server] -= 1,
            Event::AttemptEnds { job: id, answered } => {
                let job = self.jobs[id].as_mut().expect("job in flight");
                if let Some(permit) = job.permit.take() {
                    permit.record(if answered {
                        Outcome::Success
                    } else {
                        Outcome::Failure
                    });
                }
                let (arrived, attempts) = (job.arrived_ms, job.attempts);
                if answered {
                    self.run.paid += 1;
                    if t - arrived <= 10_000 {
                        self.run.paid_within_10_s += 1;
                    }
                    self.finish(id);
                } else if attempts == ATTEMPTS {
                    self.unpaid(t, arrived, true);
                    self.finish(id);
                } else {
                    self.start_attempt(t, id);
                }
            }
        }
    }

    /// A checkout made at `arrived` got no payment at `t`, after waiting
    /// for at least one timeout.
    fn unpaid(&mut self, t: u64, arrived: u64, every_attempt: bool) {
        if gateway_hangs(arrived) {
            self.run.slow_failures += 1;
            self.run.slow_wait_ms += t - arrived;
            self.run.failed_every_attempt += u64::from(every_attempt);
        }
    }

    fn start_attempt(&mut self, t: u64, id: usize) {
        let job = self.jobs[id].as_ref().expect("job in flight");
        let (server, arrived, attempts) = (job.server, job.arrived_ms, job.attempts);
        let admitted = match self.breakers.get(server) {
            None => Ok(None),
            Some(breaker) => breaker.acquire().map(Some),
        };
        let Ok(permit) = admitted else {
            // The fallback answers at once and a refusal is never retried:
            // the worker is free.
            if attempts == 0 {
                self.run.instant_fallbacks += u64::from(gateway_hangs(arrived));
            } else {
                self.unpaid(t, arrived, false);
            }
            if t >= HANG_UNTIL_MS {
                self.run.refused_after_heal += 1;
                self.run.last_refused_after_heal_ms = t - HANG_UNTIL_MS;
            }
            self.finish(id);
            return;
        };
        let job = self.jobs[id].as_mut().expect("job in flight");
        job.attempts += 1;
        job.permit = permit;
        let (ends, answered) = if gateway_hangs(t) {
            // A hanging gateway never answers: the attempt ends at the timeout.
            (t + self.timeout_ms, false)
        } else {
            (t + GATEWAY_MS, true)
        };
        self.events
            .schedule(ends, Event::AttemptEnds { job: id, answered });
    }

    fn finish(&mut self, id: usize) {
        let job = self.jobs[id].take().expect("job in flight");
        self.busy[job.server] -= 1;
        self.free_jobs.push(id);
    }
}

/// One seed's arrivals: checkouts and page views, in time order.
fn arrivals(seed: u64) -> Arrivals {
    let mut arrivals: Vec<(u64, Request)> = Rng::stream(seed, 0)
        .poisson(CHECKOUTS_PER_SEC, END_MS)
        .into_iter()
        .map(|t| (t, Request::Checkout))
        .collect();
    arrivals.extend(
        Rng::stream(seed, 1)
            .poisson(PAGE_VIEWS_PER_SEC, END_MS)
            .into_iter()
            .map(|t| (t, Request::PageView)),
    );
    arrivals.sort_by_key(|a| a.0);
    Arrivals {
        times: arrivals.iter().map(|a| a.0).collect(),
        requests: arrivals.iter().map(|a| a.1).collect(),
    }
}

/// Each row of `guards` over each seed: `runs[row][seed]`.
pub(crate) fn runs(guards: &[Guard], seeds: std::ops::Range<u64>, samples: bool) -> Vec<Vec<Run>> {
    let by_seed = sim::over_seeds(seeds, |seed| {
        let arrivals = arrivals(seed);
        guards
            .iter()
            .map(|&guard| simulate(guard, seed, &arrivals, samples))
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

/// `figure` of each run of `a` less that of `b` on the same seed, over the
/// seeds.
pub(crate) fn paired(a: &[Run], b: &[Run], figure: impl Fn(&Run) -> f64) -> Spread {
    Spread::of(a.iter().zip(b).map(|(a, b)| figure(a) - figure(b)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seeds = sim::seeds_from_args(SEEDS);
    let svg: String = flag(
        "svg",
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cascade.svg").to_string(),
    );
    let all = runs(&Guard::ALL, seeds.clone(), true);

    println!(
        "{SERVERS} servers × {WORKERS_PER_SERVER} workers = {POOL}. Per second: {CHECKOUTS_PER_SEC} \
         checkouts (3 attempts each at the payment gateway), {PAGE_VIEWS_PER_SEC} page views \
         (no gateway).\nThe gateway answers in {GATEWAY_MS} ms, hangs from t = {} s to t = {} s, \
         answers again until t = {} s. A breaker per server.\n",
        HANG_FROM_MS / 1000,
        HANG_UNTIL_MS / 1000,
        END_MS / 1000
    );
    println!(
        "Rows (3 attempts per checkout, 3 s timeout unless said; a refusal is never retried):"
    );
    for guard in Guard::ALL {
        println!("  {:<18} {}", guard.label(), guard.settings());
    }
    println!();
    let table = Table::new(
        18,
        &[
            ("peak", "busy", 8),
            ("OUTAGE: slow", "failures", 12),
            ("customers", "waited (s)", 11),
            ("instant", "fallbacks", 9),
            ("HEAL: payable", "refused", 13),
            ("last (s", "after heal)", 11),
            ("paid", "≤ 10 s", 10),
            ("page views", "refused", 10),
        ],
    );
    println!("{}", table.header());
    for (guard, runs) in Guard::ALL.iter().zip(&all) {
        let s = |f: fn(&Run) -> f64| spread(runs, f);
        println!(
            "{}",
            table.row(
                guard.label(),
                &[
                    (s(|r| r.peak as f64), Unit::Plain(0)),
                    (s(|r| r.slow_failures as f64), Unit::Plain(0)),
                    (s(|r| r.slow_wait_ms as f64 / 1000.0), Unit::Plain(0)),
                    (s(|r| r.instant_fallbacks as f64), Unit::Plain(0)),
                    (s(|r| r.refused_after_heal as f64), Unit::Plain(0)),
                    (
                        s(|r| r.last_refused_after_heal_ms as f64 / 1000.0),
                        Unit::Secs(1)
                    ),
                    (s(|r| r.paid_within_10_s as f64), Unit::Plain(0)),
                    (s(|r| r.refused_page_views as f64), Unit::Plain(0)),
                ]
            )
        );
    }
    println!(
        "Medians over the seeds; under each, the least and the most. OUTAGE: checkouts made \
         while the gateway hangs that\ngot no payment after waiting for a timeout (every \
         attempt timed out, or the breaker refused a later one), the seconds\nthose customers \
         waited in all, and checkouts answered at once by the fallback. HEAL: attempts refused \
         after the\ngateway answers again (each a checkout it would have paid), and the last \
         of them. paid ≤ 10 s: the whole run."
    );
    let naive = &all[0];
    println!(
        "no breaker, 30 s: also {} checkouts refused for want of a worker (median); every other \
         row: {}.",
        spread(naive, |r| r.refused_checkouts as f64).median,
        all[1..]
            .iter()
            .map(|runs| spread(runs, |r| r.refused_checkouts as f64).max)
            .fold(0.0, f64::max)
    );
    let timeout = &all[1];
    let against = Table::new(
        18,
        &[
            ("peak", "busy", 11),
            ("OUTAGE: slow", "failures", 13),
            ("customers", "waited (s)", 15),
            ("paid", "≤ 10 s", 11),
        ],
    );
    println!(
        "\nEach row less `timeout only, 3 s` on the same seed: what the breaker adds to the timeout.\n{}",
        against.header()
    );
    for (guard, runs) in Guard::ALL.iter().zip(&all).skip(2) {
        let d = |f: fn(&Run) -> f64| paired(runs, timeout, f);
        println!(
            "{}",
            against.row(
                guard.label(),
                &[
                    (d(|r| r.peak as f64), Unit::Plain(0)),
                    (d(|r| r.slow_failures as f64), Unit::Plain(0)),
                    (d(|r| r.slow_wait_ms as f64 / 1000.0), Unit::Plain(0)),
                    (d(|r| r.paid_within_10_s as f64), Unit::Plain(0)),
                ]
            )
        );
    }
    println!("\n{}", sim::provenance("cascade", &seeds));

    plot(&svg, &all)?;
    println!("\nPlot written to {svg}");
    Ok(())
}

/// The median over the runs of busy workers at each sample.
fn median_busy(runs: &[Run]) -> Vec<(f64, f64)> {
    let len = runs.iter().map(|r| r.busy.len()).min().unwrap_or(0);
    (0..len)
        .map(|i| {
            let t = (i as u64 * SAMPLE_MS) as f64 / 1000.0;
            (
                t,
                Spread::of(runs.iter().map(|r| f64::from(r.busy[i]))).median,
            )
        })
        .collect()
}

fn plot(path: &str, all: &[Vec<Run>]) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let end_s = (END_MS / 1000) as f64;
    let root = SVGBackend::new(path, (960, 720)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(400);
    let hang = RGBColor(255, 236, 204);
    let lines = [
        (Guard::NoBreaker30s, RGBColor(200, 30, 30), 2),
        (Guard::TimeoutOnly, RGBColor(230, 140, 0), 2),
        (Guard::Classic, RGBColor(20, 90, 200), 2),
        (Guard::GradedTuned, RGBColor(40, 150, 60), 1),
    ];
    let panels = [
        (
            &top,
            (POOL + 60) as f64,
            "Busy workers (median over the seeds): 6 servers × 50, gateway hangs 60–240 s",
            &lines[..],
        ),
        (
            &bottom,
            70.0,
            "The same, rows with the 3 s timeout, up to 70 workers",
            &lines[1..],
        ),
    ];
    for (area, y_top, caption, lines) in panels {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 17))
            .margin(15)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..end_s, 0f64..y_top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("busy workers")
            .x_labels(13)
            .y_labels(8)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(WHITE)
            .draw()?;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [
                    (HANG_FROM_MS as f64 / 1000.0, 0.0),
                    (HANG_UNTIL_MS as f64 / 1000.0, y_top),
                ],
                hang.filled(),
            )))?
            .label("gateway hanging")
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], hang.filled()));
        if y_top > POOL as f64 {
            let grey = RGBColor(120, 120, 120);
            chart
                .draw_series(LineSeries::new(
                    [(0.0, POOL as f64), (end_s, POOL as f64)],
                    grey.stroke_width(1),
                ))?
                .label("pool: 300 workers")
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], grey.stroke_width(1))
                });
        }
        for &(guard, color, width) in lines {
            let row = Guard::ALL.iter().position(|g| *g == guard).unwrap_or(0);
            chart
                .draw_series(LineSeries::new(
                    median_busy(&all[row]),
                    color.stroke_width(width),
                ))?
                .label(guard.label())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(width))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
