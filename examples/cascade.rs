//! Cascade: how one hanging dependency empties a whole server pool, and how a
//! breaker per server keeps it alive.
//!
//! A discrete-event simulation on a virtual clock (it runs in well under a second).
//! 6 servers × 50 worker threads take 4 checkouts per second (Poisson arrivals,
//! seeded) and 20 page views per second that never touch the payment gateway. A
//! checkout holds its worker while it calls the gateway, which answers in 400 ms,
//! hangs from t = 60 s to t = 240 s, then answers in 400 ms again.
//!
//! - Without a breaker: 30 s timeout, 3 attempts, so a checkout holds its worker
//!   for 90 s while the gateway hangs. Little's law: busy workers = arrival rate ×
//!   time held = 4/s × 90 s = 360 > 300, so the pool runs out, and the page views,
//!   which never needed the gateway, are refused along with the checkouts.
//! - With the real failfast breaker on each server (built with
//!   `Breaker::builder().threshold(5).recovery(30s).clock(manual_clock)` and driven
//!   through `acquire()` and `Permit::record(Outcome::Success | Failure)` on
//!   the virtual clock): 3 s timeout, same 3 attempts, a rejection is never
//!   retried. Each breaker opens after 5 consecutive failures, sends one
//!   trial every 30 s, and closes on the first trial after the gateway
//!   recovers.
//! - The same breaker tuned to find the recovery within seconds:
//!   `recovery = "1s..4s"` (open 1 s, doubling while trials fail, at most 4 s),
//!   so a trial goes out at least every 4 s.
//! - Graded shedding, `shed(3)` over a 3 s window from 3 calls ([`SHED_K`],
//!   [`SHED_WINDOW`], [`SHED_MIN_CALLS`]): the breaker never opens; while
//!   the gateway fails, it refuses up to 9 attempts in 10. And the same
//!   beside the classic `threshold(5)`, `recovery = "1s..4s"`, which opens
//!   it as before.
//!
//! The summary compares them all ([`Guard::ALL`]) against the goals: peak
//! busy workers at most 15% of the pool, at least as many checkouts paid
//! within 10 s as without a breaker, no page view refused, and every breaker
//! back to normal (closed, not shedding) within 3 s of the gateway's
//! recovery. It prints busy workers every 10 s for the first two, and writes
//! `docs/cascade.svg` (busy workers over time, the first two runs).
//!
//! What limits graded shedding here is how few calls each breaker sees: each
//! server has a breaker of its own (they share nothing), and a server takes
//! 4/6 ≈ 0.67 checkouts per second. The default 10 s window holds about 7
//! calls while the gateway is healthy, below the default `min_calls` of 10,
//! and about 20 attempts (up to 3 per checkout) while it hangs. So:
//!
//! - The verdict rests on a handful of attempts, each known only at its 3 s
//!   timeout. It starts late, and it flickers: every refusal is an attempt
//!   not made, the window drains below `min_calls`, and the chance falls
//!   back to 0 until the next failures. It is capped at 0.9, so one attempt
//!   in ten still holds a worker for 3 s. What keeps the peak low is mostly
//!   the 3 s timeout: 4/s × 9 s = 36 workers at most without any refusal.
//! - `k` makes no difference while the gateway hangs: it accepts nothing, so
//!   the chance is the cap as soon as `min_calls` attempts are in the window.
//!   It matters only after the heal, when successes must outweigh the hang's
//!   failures (k × accepted ≥ admitted): with 3 calls in the window, 2
//!   failures and 1 success shed (3 − 2)/4 at the usual k = 2, and nothing
//!   at k = 3.
//! - After the heal the window still holds the hang's failures, the last of
//!   them known 3 s later (attempts started just before the heal), and the
//!   chance is worked out again only when a call comes or fails: at 0.67
//!   calls per second a stale chance can last seconds. With the defaults
//!   (10 s, 10 calls) shedding goes on 6 to 9 s after the heal, refusing
//!   checkouts the gateway would pay. Hence the shortest window allowed, the
//!   3 s timeout: the hang leaves it about when its last failure is known.
//!   So few calls are in it that `min_calls` must come down, to 3. Tried
//!   over many runs: k = 2 from 5 calls starts shedding later and passes
//!   45 busy workers in one run in fifteen, from 4 calls in one run in two
//!   thousand; k = 2 from 3 calls goes on shedding more than 3 s after the
//!   heal (up to 6 s) in one run in four; k = 3 from 3 calls met every goal
//!   in each of a thousand runs.
//!
//! ```text
//! cargo run --example cascade
//! cargo run --example cascade -- --seed 7 --svg /tmp/cascade.svg
//! ```

use std::ops::Index;
use std::time::Duration;

use failfast::{Breaker, Builder, ManualClock, Outcome, Permit, Reason, State};
use plotters::prelude::*;

// Both simulations include it, so the test binary that replays them
// (`tests/calls`) loads it twice.
#[allow(clippy::duplicate_mod)]
#[path = "common/sim.rs"]
mod sim;
use sim::{Events, Rng, advance_to, flag};

const SERVERS: usize = 6;
const WORKERS_PER_SERVER: usize = 50;
pub(crate) const POOL: usize = SERVERS * WORKERS_PER_SERVER;
const CHECKOUTS_PER_SEC: f64 = 4.0;
const PAGE_VIEWS_PER_SEC: f64 = 20.0;
const PAGE_VIEW_MS: u64 = 50;
const GATEWAY_MS: u64 = 400;
const HANG_FROM_MS: u64 = 60_000;
pub(crate) const HANG_UNTIL_MS: u64 = 240_000;
const END_MS: u64 = 360_000;
const ATTEMPTS: u32 = 3;
const TABLE_EVERY_S: u64 = 10;
const SAMPLE_MS: u64 = 100;

/// Graded shedding's settings (see the module's notes): a multiplier of 3,
/// one more than the usual, so that a success outweighs two failures after
/// the heal; the shortest window allowed, the 3 s timeout (an attempt must
/// end in the window it started in), so that the hang leaves it soon after
/// the heal; and 3 attempts in it before any refusal.
pub(crate) const SHED_K: f64 = 3.0;
pub(crate) const SHED_WINDOW: Duration = Duration::from_secs(3);
pub(crate) const SHED_MIN_CALLS: u32 = 3;

/// How each server calls the gateway: one row of the summary.
///
/// To add a row (an adaptive concurrency limit, say): add a variant, its
/// label, timeout and what each server builds below, and list it in
/// [`Guard::ALL`]. A guard that is not a `Breaker` is admitted in
/// [`Sim::admit`] and told how the attempt ended in [`Sim::resolve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    /// No breaker: 30 s timeout × 3.
    NoBreaker,
    /// `threshold(5)`, `recovery = "30s"`.
    Recovery30s,
    /// `threshold(5)`, `recovery = "1s..4s"`.
    Recovery1To4s,
    /// `shed(3)` alone: the breaker never opens.
    Graded,
    /// `shed(3)` beside `threshold(5)`, `recovery = "1s..4s"`.
    GradedThreshold,
    /// `shed(3)` as in `Graded`, and an adaptive concurrency limit of
    /// 1 to 50 calls at once per server.
    GradedAdaptive,
}

impl Guard {
    /// Every row, in the order printed.
    pub(crate) const ALL: [Guard; 6] = [
        Guard::NoBreaker,
        Guard::Recovery30s,
        Guard::Recovery1To4s,
        Guard::Graded,
        Guard::GradedThreshold,
        Guard::GradedAdaptive,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Guard::NoBreaker => "no breaker",
            Guard::Recovery30s => "recovery \"30s\"",
            Guard::Recovery1To4s => "recovery \"1s..4s\"",
            Guard::Graded => "graded, shed 3",
            Guard::GradedThreshold => "shed 3 + threshold 5",
            Guard::GradedAdaptive => "shed 3 + adaptive",
        }
    }

    fn timeout_ms(self) -> u64 {
        match self {
            Guard::NoBreaker => 30_000,
            _ => 3_000,
        }
    }

    /// The breaker each server builds (on the simulation's clock), if any.
    fn breaker(self) -> Option<Builder> {
        let classic = |recovery| Breaker::builder().threshold(5).recovery(recovery);
        let graded = || {
            Breaker::builder()
                .shed(SHED_K)
                .window_time(SHED_WINDOW)
                .min_calls(SHED_MIN_CALLS)
        };
        let seconds = Duration::from_secs;
        match self {
            Guard::NoBreaker => None,
            Guard::Recovery30s => Some(classic(seconds(30))),
            Guard::Recovery1To4s => Some(classic(seconds(1)).max_recovery(seconds(4))),
            Guard::Graded => Some(graded()),
            Guard::GradedAdaptive => Some(graded().adaptive_concurrency(1, 50)),
            // No `window_time` here: beside a window, `threshold(5)` would count
            // 5 failures within it; without, it stays the classic rule, 5 in a
            // row. Shedding's window is then the default 10 s, started afresh
            // each time the breaker closes.
            Guard::GradedThreshold => Some(
                Breaker::builder()
                    .shed(SHED_K)
                    .min_calls(SHED_MIN_CALLS)
                    .threshold(5)
                    .recovery(seconds(1))
                    .max_recovery(seconds(4)),
            ),
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
    Arrival(Request),
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
    attempt: u32,
    permit: Option<Permit<'b>>,
}

/// What happened in one run.
#[derive(Default)]
pub(crate) struct Run {
    /// Busy workers (all servers), every `SAMPLE_MS`.
    busy: Vec<usize>,
    /// One row per `TABLE_EVERY_S` seconds.
    rows: Vec<Row>,
    pub(crate) peak: usize,
    /// First time every worker was busy.
    pub(crate) exhausted_at: Option<u64>,
    /// Checkouts the gateway answered, and how many of those waited over 10 s.
    pub(crate) completed: u64,
    pub(crate) completed_slowly: u64,
    /// Checkouts that failed after 3 attempts timed out.
    pub(crate) failed_after_retries: u64,
    /// Checkouts answered by the fallback because the breaker refused the call.
    pub(crate) fast_failed: u64,
    /// Of those, refused by graded shedding while the breaker was closed.
    pub(crate) shed: u64,
    /// Of those, refused after the gateway recovered.
    pub(crate) fast_failed_after_heal: u64,
    pub(crate) refused_checkouts: u64,
    pub(crate) refused_page_views: u64,
    /// The time after the gateway recovered from which every breaker stays
    /// closed and not shedding (`snapshot().shedding == 0`) to the end;
    /// `None` without breakers, or if some breaker is still refusing at the end.
    pub(crate) normal_again_at: Option<u64>,
    /// The last sample after the recovery at which some breaker was open or
    /// shedding.
    abnormal_after_heal: Option<u64>,
}

impl Run {
    pub(crate) fn paid_within_10_s(&self) -> u64 {
        self.completed - self.completed_slowly
    }

    /// How long after the gateway recovered every breaker was back to
    /// normal, in ms.
    pub(crate) fn normal_after_heal_ms(&self) -> Option<u64> {
        self.normal_again_at.map(|t| t - HANG_UNTIL_MS)
    }
}

/// One line of the table: what happened in `TABLE_EVERY_S` seconds.
#[derive(Default, Clone)]
struct Row {
    peak_busy: usize,
    /// The most breakers at once not back to normal: not closed, or shedding.
    max_not_normal: usize,
    refused: u64,
    fast_failed: u64,
}

fn gateway_hangs(t_ms: u64) -> bool {
    (HANG_FROM_MS..HANG_UNTIL_MS).contains(&t_ms)
}

fn simulate(guard: Guard, arrivals: &[(u64, Request)]) -> Run {
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
        clock: &clock,
        events: Events::new(),
        jobs: Vec::new(),
        free_jobs: Vec::new(),
        busy: [0; SERVERS],
        next_server: 0,
        run: Run::default(),
    };
    sim.run.rows = vec![Row::default(); (END_MS / 1000 / TABLE_EVERY_S) as usize + 1];
    for &(t, request) in arrivals {
        sim.events.schedule(t, Event::Arrival(request));
    }
    let mut next_sample = 0u64;
    while let Some((t, event)) = sim.events.pop() {
        while next_sample < t.min(END_MS + 1) {
            sim.sample(next_sample);
            next_sample += SAMPLE_MS;
        }
        if t > END_MS {
            break;
        }
        advance_to(sim.clock, t);
        sim.handle(t, event);
    }
    while next_sample <= END_MS {
        sim.sample(next_sample);
        next_sample += SAMPLE_MS;
    }
    let mut run = sim.run;
    if !breakers.is_empty() {
        run.normal_again_at = match run.abnormal_after_heal {
            None => Some(HANG_UNTIL_MS),
            Some(t) if t + SAMPLE_MS > END_MS => None,
            Some(t) => Some(t + SAMPLE_MS),
        };
    }
    run
}

struct Sim<'b> {
    timeout_ms: u64,
    breakers: &'b [Breaker],
    clock: &'b ManualClock,
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

    fn row(&mut self, t_ms: u64) -> &mut Row {
        &mut self.run.rows[(t_ms / 1000 / TABLE_EVERY_S) as usize]
    }

    fn sample(&mut self, t_ms: u64) {
        advance_to(self.clock, t_ms);
        let busy = self.total_busy();
        let not_normal = self
            .breakers
            .iter()
            .filter(|b| {
                let s = b.snapshot();
                s.state != State::Closed || s.shedding > 0.0
            })
            .count();
        self.run.busy.push(busy);
        let row = self.row(t_ms);
        row.peak_busy = row.peak_busy.max(busy);
        row.max_not_normal = row.max_not_normal.max(not_normal);
        if t_ms >= HANG_UNTIL_MS && not_normal > 0 {
            self.run.abnormal_after_heal = Some(t_ms);
        }
    }

    /// Round-robin load balancing; `None` when that server has no free worker.
    fn take_worker(&mut self, t_ms: u64) -> Option<usize> {
        let server = self.next_server;
        self.next_server = (self.next_server + 1) % SERVERS;
        if self.busy[server] == WORKERS_PER_SERVER {
            return None;
        }
        self.busy[server] += 1;
        let busy = self.total_busy();
        self.run.peak = self.run.peak.max(busy);
        let row = self.row(t_ms);
        row.peak_busy = row.peak_busy.max(busy);
        if busy == POOL && self.run.exhausted_at.is_none() {
            self.run.exhausted_at = Some(t_ms);
        }
        Some(server)
    }

    fn handle(&mut self, t: u64, event: Event) {
        match event {
            Event::Arrival(request) => {
                let Some(server) = self.take_worker(t) else {
                    match request {
                        Request::Checkout => self.run.refused_checkouts += 1,
                        Request::PageView => self.run.refused_page_views += 1,
                    }
                    self.row(t).refused += 1;
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
                            attempt: 0,
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
            Event::PageViewDone { server } => self.busy[server] -= 1,
            Event::AttemptEnds { job: id, answered } => {
                let job = self.jobs[id].as_mut().expect("job in flight");
                if let Some(permit) = job.permit.take() {
                    Self::resolve(permit, answered);
                }
                if answered {
                    self.run.completed += 1;
                    if t - job.arrived_ms > 10_000 {
                        self.run.completed_slowly += 1;
                    }
                    self.finish(id);
                } else if job.attempt == ATTEMPTS {
                    self.run.failed_after_retries += 1;
                    self.finish(id);
                } else {
                    self.start_attempt(t, id);
                }
            }
        }
    }

    /// Asks the server's guard to let an attempt through: `Ok` with what to
    /// resolve when it ends (nothing without a guard), `Err` with whether
    /// graded shedding refused it.
    fn admit(&self, server: usize) -> Result<Option<Permit<'b>>, bool> {
        let breakers = self.breakers;
        match breakers.get(server) {
            None => Ok(None),
            Some(breaker) => match breaker.acquire() {
                Ok(permit) => Ok(Some(permit)),
                Err(rejected) => Err(rejected.reason() == Reason::Shed),
            },
        }
    }

    /// Tells the guard how an attempt it let through ended.
    fn resolve(permit: Permit<'_>, answered: bool) {
        permit.record(if answered {
            Outcome::Success
        } else {
            Outcome::Failure
        });
    }

    fn start_attempt(&mut self, t: u64, id: usize) {
        let server = self.jobs[id].as_ref().expect("job in flight").server;
        match self.admit(server) {
            Ok(permit) => {
                let job = self.jobs[id].as_mut().expect("job in flight");
                job.attempt += 1;
                job.permit = permit;
            }
            Err(shed) => {
                // The fallback answers at once ("payment pending, we'll email
                // you") and a rejection is never retried: the worker is free.
                self.run.fast_failed += 1;
                self.run.shed += u64::from(shed);
                if t >= HANG_UNTIL_MS {
                    self.run.fast_failed_after_heal += 1;
                }
                self.row(t).fast_failed += 1;
                self.finish(id);
                return;
            }
        }
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

/// Every row of [`Guard::ALL`] over the same traffic (seeded by `seed`).
pub(crate) struct Runs {
    pub(crate) checkouts: usize,
    pub(crate) page_views: usize,
    pub(crate) runs: Vec<(Guard, Run)>,
}

impl Index<Guard> for Runs {
    type Output = Run;

    fn index(&self, guard: Guard) -> &Run {
        sim::row(&self.runs, guard)
    }
}

pub(crate) fn runs(seed: u64) -> Runs {
    let mut rng = Rng(seed);
    let mut arrivals: Vec<(u64, Request)> = rng
        .poisson(CHECKOUTS_PER_SEC, END_MS)
        .into_iter()
        .map(|t| (t, Request::Checkout))
        .collect();
    let checkouts = arrivals.len();
    arrivals.extend(
        rng.poisson(PAGE_VIEWS_PER_SEC, END_MS)
            .into_iter()
            .map(|t| (t, Request::PageView)),
    );
    arrivals.sort_by_key(|a| a.0);
    let page_views = arrivals.len() - checkouts;
    Runs {
        checkouts,
        page_views,
        runs: Guard::ALL
            .iter()
            .map(|&guard| (guard, simulate(guard, &arrivals)))
            .collect(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed: u64 = flag("seed", 7);
    let svg: String = flag(
        "svg",
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cascade.svg").to_string(),
    );
    let all = runs(seed);
    let (checkouts, page_views) = (all.checkouts, all.page_views);
    let naive = &all[Guard::NoBreaker];
    let guarded = &all[Guard::Recovery30s];

    println!(
        "{SERVERS} servers × {WORKERS_PER_SERVER} workers = {POOL} workers. Per second: \
         {CHECKOUTS_PER_SEC} checkouts (they call the payment gateway), \
         {PAGE_VIEWS_PER_SEC} page views (they don't)."
    );
    println!(
        "The gateway answers in {GATEWAY_MS} ms, hangs from t = {} s to t = {} s, then recovers. \
         Seed {seed}: {checkouts} checkouts, {page_views} page views in {} s.\n",
        HANG_FROM_MS / 1000,
        HANG_UNTIL_MS / 1000,
        END_MS / 1000
    );
    println!(
        "{:17} │{:<31}│ FAILFAST: 3 s timeout × 3, breaker per server",
        "", " NO BREAKER: 30 s timeout × 3"
    );
    println!(
        "{:<17} │ {:<19} {:>9} │ {:<19} {:>4} {:>8}",
        " seconds  gateway",
        "busy workers (peak)",
        "refused",
        "busy workers (peak)",
        "open",
        "fallback"
    );
    println!("{}┼{}┼{}", "─".repeat(18), "─".repeat(31), "─".repeat(48));
    for (i, (n, g)) in naive.rows.iter().zip(&guarded.rows).enumerate() {
        let from = i as u64 * TABLE_EVERY_S;
        if from * 1000 >= END_MS {
            break;
        }
        let gateway = if gateway_hangs(from * 1000) {
            "hangs"
        } else {
            "ok"
        };
        println!(
            "{:>4}–{:<4}  {:<6} │ {:>3} {:<15} {:>9} │ {:>3} {:<15} {:>4} {:>8}",
            from,
            from + TABLE_EVERY_S,
            gateway,
            n.peak_busy,
            bar(n.peak_busy),
            n.refused,
            g.peak_busy,
            bar(g.peak_busy),
            format!("{}/{SERVERS}", g.max_not_normal),
            g.fast_failed,
        );
    }
    println!(
        "busy: the most workers busy at once in those {TABLE_EVERY_S} s (█ = 20); refused: requests (checkouts \
         and page views) that found no free worker;\nopen: breakers not closed; fallback: checkouts \
         answered at once because the breaker refused the call.\n"
    );

    println!("Peak busy workers (pool: {POOL})");
    for (guard, run) in &all.runs {
        let verdict = match run.exhausted_at {
            Some(t) => format!("POOL EXHAUSTED at t = {:.1} s", t as f64 / 1000.0),
            None => "pool never exhausted".to_string(),
        };
        println!(
            "  {:<22}  {:>3} / {POOL}   {verdict}",
            guard.label(),
            run.peak
        );
    }

    println!(
        "\nCheckouts ({checkouts}) and page views ({page_views}), graded rows: shed {SHED_K} over \
         {} s from {SHED_MIN_CALLS} calls",
        SHED_WINDOW.as_secs()
    );
    let line = |cells: [&str; 10]| {
        println!(
            "{:<22} {:>5} {:>5} {:>8} {:>7} {:>9} {:>7} {:>8} {:>8} {:>11}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9]
        )
    };
    line([
        "", "peak", "paid", "paid in", "failed", "fallback", "(shed)", "no free", "page v.",
        "normal",
    ]);
    line([
        "",
        "busy",
        "",
        "≤ 10 s",
        "3 times",
        "",
        "",
        "worker",
        "refused",
        "after heal",
    ]);
    println!("{}", "─".repeat(100));
    for (guard, run) in &all.runs {
        let normal = match (guard.breaker().is_some(), run.normal_after_heal_ms()) {
            (false, _) => "-".to_string(),
            (true, None) => "never".to_string(),
            (true, Some(ms)) => format!("{:.1} s", ms as f64 / 1000.0),
        };
        line([
            guard.label(),
            &run.peak.to_string(),
            &run.completed.to_string(),
            &run.paid_within_10_s().to_string(),
            &run.failed_after_retries.to_string(),
            &run.fast_failed.to_string(),
            &run.shed.to_string(),
            &run.refused_checkouts.to_string(),
            &run.refused_page_views.to_string(),
            &normal,
        ]);
    }
    line([
        "goal for a breaker",
        &format!("≤ {}", POOL * 15 / 100),
        "",
        &format!("≥ {}", naive.paid_within_10_s()),
        "",
        "",
        "",
        "",
        "0",
        "≤ 3.0 s",
    ]);
    println!(
        "fallback: checkouts answered at once because the breaker refused an attempt; (shed): \
         of those, by graded shedding.\nnormal after heal: every breaker closed and not shedding \
         (snapshot().shedding == 0) from then on. Graded shedding draws\nits refusals from the \
         breaker's own generator, not from the seed: the graded rows vary a little between runs."
    );

    println!("\nLittle's law: busy workers = arrival rate × time a request holds a worker");
    println!(
        "  gateway healthy:            {CHECKOUTS_PER_SEC}/s × 0.4 s                   = {:>5.1}",
        CHECKOUTS_PER_SEC * GATEWAY_MS as f64 / 1000.0
    );
    println!(
        "  gateway hangs, no breaker:  {CHECKOUTS_PER_SEC}/s × (3 × 30 s = 90 s)       = {:>5.1} > {POOL}: \
         exhausted after {:.0} s of hanging",
        CHECKOUTS_PER_SEC * 90.0,
        POOL as f64 / CHECKOUTS_PER_SEC
    );
    println!(
        "  gateway hangs, failfast:    {CHECKOUTS_PER_SEC}/s × (3 × 3 s = 9 s) at most = {:>5.1}, \
         until the breakers open; then about 0",
        CHECKOUTS_PER_SEC * 9.0
    );

    plot(&svg, naive, guarded)?;
    println!("\nPlot written to {svg}");
    Ok(())
}

/// `█` per 20 busy workers, so 300 workers is 15 blocks.
fn bar(busy: usize) -> String {
    "█".repeat(busy.div_ceil(20))
}

fn plot(path: &str, naive: &Run, guarded: &Run) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let end_s = (END_MS / 1000) as f64;
    let top = (POOL + 100) as f64;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Busy workers: 6 servers × 50 workers, 4 checkouts/s, payment gateway hangs from 60 s to 240 s",
            ("sans-serif", 18),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..end_s, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("busy workers")
        .x_labels(13)
        .y_labels(9)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;

    let hang = RGBColor(255, 236, 204);
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [
                (HANG_FROM_MS as f64 / 1000.0, 0.0),
                (HANG_UNTIL_MS as f64 / 1000.0, top),
            ],
            hang.filled(),
        )))?
        .label("gateway hanging")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], hang.filled()));

    let grey = RGBColor(120, 120, 120);
    chart
        .draw_series(LineSeries::new(
            [(0.0, POOL as f64), (end_s, POOL as f64)],
            grey.stroke_width(1),
        ))?
        .label("pool size: 300 workers")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], grey.stroke_width(1)));

    let red = RGBColor(200, 30, 30);
    chart
        .draw_series(LineSeries::new(series(&naive.busy), red.stroke_width(2)))?
        .label("no breaker (30 s timeout × 3 attempts)")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], red.stroke_width(2)));

    let blue = RGBColor(20, 90, 200);
    chart
        .draw_series(LineSeries::new(series(&guarded.busy), blue.stroke_width(2)))?
        .label("failfast breaker per server (3 s timeout × 3)")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], blue.stroke_width(2)));

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn series(busy: &[usize]) -> Vec<(f64, f64)> {
    busy.iter()
        .enumerate()
        .map(|(i, &b)| ((i as u64 * SAMPLE_MS) as f64 / 1000.0, b as f64))
        .collect()
}
