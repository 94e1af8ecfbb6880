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
//!   through `acquire()` and `Permit::success()` / `failure()` on the virtual
//!   clock): 3 s timeout, same 3 attempts, a rejection is never retried. Each
//!   breaker opens after 5 consecutive failures, sends one trial every 30 s, and
//!   closes on the first trial after the gateway recovers.
//! - The same breaker tuned to find the recovery within seconds:
//!   `recovery = "1s..4s"` (open 1 s, doubling while trials fail, at most 4 s),
//!   so a trial goes out at least every 4 s; the summary compares the three.
//!
//! It prints busy workers every 10 s for both runs, the peaks, and writes
//! `docs/cascade.svg` (busy workers over time, both runs).
//!
//! ```text
//! cargo run --example cascade
//! cargo run --example cascade -- --seed 7 --svg /tmp/cascade.svg
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use failfast::{Breaker, ManualClock, Permit, State};
use plotters::prelude::*;

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

/// How a server calls the gateway.
struct Policy {
    timeout_ms: u64,
    /// Breaker settings: trip after this many consecutive failures, then stay open
    /// this long before a trial (growing up to the second duration, if any).
    /// `None`: no breaker.
    breaker: Option<(u32, Duration, Option<Duration>)>,
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
    pub(crate) refused_checkouts: u64,
    pub(crate) refused_page_views: u64,
    /// First time after the gateway recovered at which every breaker was closed.
    pub(crate) all_closed_at: Option<u64>,
}

/// One line of the table: what happened in `TABLE_EVERY_S` seconds.
#[derive(Default, Clone)]
struct Row {
    peak_busy: usize,
    max_not_closed: usize,
    refused: u64,
    fast_failed: u64,
}

fn gateway_hangs(t_ms: u64) -> bool {
    (HANG_FROM_MS..HANG_UNTIL_MS).contains(&t_ms)
}

fn simulate(policy: &Policy, arrivals: &[(u64, Request)]) -> Run {
    let clock = ManualClock::new();
    let breakers: Vec<Breaker> = match policy.breaker {
        None => Vec::new(),
        Some((threshold, recovery, max_recovery)) => (0..SERVERS)
            .map(|_| {
                let builder = Breaker::builder()
                    .threshold(threshold)
                    .recovery(recovery)
                    .clock(clock.clone());
                match max_recovery {
                    Some(max) => builder.max_recovery(max),
                    None => builder,
                }
                .build()
                .expect("valid breaker configuration")
            })
            .collect(),
    };
    let mut sim = Sim {
        policy,
        breakers: &breakers,
        clock: &clock,
        queue: BinaryHeap::new(),
        seq: 0,
        jobs: Vec::new(),
        free_jobs: Vec::new(),
        busy: [0; SERVERS],
        next_server: 0,
        run: Run::default(),
    };
    sim.run.rows = vec![Row::default(); (END_MS / 1000 / TABLE_EVERY_S) as usize + 1];
    for &(t, request) in arrivals {
        sim.schedule(t, Event::Arrival(request));
    }
    let mut next_sample = 0u64;
    while let Some(Reverse((t, _, event))) = sim.queue.pop() {
        while next_sample < t.min(END_MS + 1) {
            sim.sample(next_sample);
            next_sample += SAMPLE_MS;
        }
        if t > END_MS {
            break;
        }
        sim.advance_clock(t);
        sim.handle(t, event);
    }
    while next_sample <= END_MS {
        sim.sample(next_sample);
        next_sample += SAMPLE_MS;
    }
    sim.run
}

struct Sim<'b> {
    policy: &'b Policy,
    breakers: &'b [Breaker],
    clock: &'b ManualClock,
    /// (time in ms, sequence number so that equal times run in order, event)
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    jobs: Vec<Option<Job<'b>>>,
    free_jobs: Vec<usize>,
    busy: [usize; SERVERS],
    next_server: usize,
    run: Run,
}

impl<'b> Sim<'b> {
    fn schedule(&mut self, t_ms: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse((t_ms, self.seq, event)));
    }

    fn advance_clock(&self, t_ms: u64) {
        let now = Duration::from_millis(t_ms);
        if now > self.clock.now() {
            self.clock.advance(now - self.clock.now());
        }
    }

    fn total_busy(&self) -> usize {
        self.busy.iter().sum()
    }

    fn row(&mut self, t_ms: u64) -> &mut Row {
        &mut self.run.rows[(t_ms / 1000 / TABLE_EVERY_S) as usize]
    }

    fn sample(&mut self, t_ms: u64) {
        self.advance_clock(t_ms);
        let busy = self.total_busy();
        let not_closed = self
            .breakers
            .iter()
            .filter(|b| b.state() != State::Closed)
            .count();
        self.run.busy.push(busy);
        let row = self.row(t_ms);
        row.peak_busy = row.peak_busy.max(busy);
        row.max_not_closed = row.max_not_closed.max(not_closed);
        if !self.breakers.is_empty()
            && t_ms >= HANG_UNTIL_MS
            && not_closed == 0
            && self.run.all_closed_at.is_none()
        {
            self.run.all_closed_at = Some(t_ms);
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
                    Request::PageView => {
                        self.schedule(t + PAGE_VIEW_MS, Event::PageViewDone { server })
                    }
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
                    if answered {
                        permit.record(failfast::Outcome::Success)
                    } else {
                        permit.record(failfast::Outcome::Failure)
                    }
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

    fn start_attempt(&mut self, t: u64, id: usize) {
        let breakers = self.breakers;
        let job = self.jobs[id].as_mut().expect("job in flight");
        job.attempt += 1;
        if let Some(breaker) = breakers.get(job.server) {
            match breaker.acquire() {
                Ok(permit) => job.permit = Some(permit),
                Err(_rejected) => {
                    // The fallback answers at once ("payment pending, we'll email
                    // you") and a rejection is never retried: the worker is free.
                    self.run.fast_failed += 1;
                    self.row(t).fast_failed += 1;
                    self.finish(id);
                    return;
                }
            }
        }
        let event = if gateway_hangs(t) {
            // A hanging gateway never answers: the attempt ends at the timeout.
            (t + self.policy.timeout_ms, false)
        } else {
            (t + GATEWAY_MS, true)
        };
        self.schedule(
            event.0,
            Event::AttemptEnds {
                job: id,
                answered: event.1,
            },
        );
    }

    fn finish(&mut self, id: usize) {
        let job = self.jobs[id].take().expect("job in flight");
        self.busy[job.server] -= 1;
        self.free_jobs.push(id);
    }
}

/// splitmix64: a small seeded generator, so every run sees the same arrivals.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Poisson arrivals at `rate` per second until `END_MS`, in milliseconds.
    fn poisson(&mut self, rate: f64, request: Request) -> Vec<(u64, Request)> {
        let mut out = Vec::new();
        let mut t = 0.0;
        loop {
            t += -(1.0 - self.next_f64()).ln() / rate;
            let ms = (t * 1000.0) as u64;
            if ms > END_MS {
                return out;
            }
            out.push((ms, request));
        }
    }
}

/// The three runs over the same traffic (seeded by `seed`).
pub(crate) struct Runs {
    pub(crate) checkouts: usize,
    pub(crate) page_views: usize,
    /// No breaker: 30 s timeout × 3.
    pub(crate) naive: Run,
    /// A breaker per server, `recovery = "30s"`.
    pub(crate) guarded: Run,
    /// A breaker per server, `recovery = "1s..4s"`.
    pub(crate) tuned: Run,
}

pub(crate) fn runs(seed: u64) -> Runs {
    let mut rng = Rng(seed);
    let mut arrivals = rng.poisson(CHECKOUTS_PER_SEC, Request::Checkout);
    let checkouts = arrivals.len();
    arrivals.extend(rng.poisson(PAGE_VIEWS_PER_SEC, Request::PageView));
    arrivals.sort_by_key(|a| a.0);
    let page_views = arrivals.len() - checkouts;
    let breaker = |recovery, max_recovery| Policy {
        timeout_ms: 3_000,
        breaker: Some((5, recovery, max_recovery)),
    };
    Runs {
        checkouts,
        page_views,
        naive: simulate(
            &Policy {
                timeout_ms: 30_000,
                breaker: None,
            },
            &arrivals,
        ),
        guarded: simulate(&breaker(Duration::from_secs(30), None), &arrivals),
        tuned: simulate(
            &breaker(Duration::from_secs(1), Some(Duration::from_secs(4))),
            &arrivals,
        ),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed: u64 = flag("seed", 7);
    let svg: String = flag(
        "svg",
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cascade.svg").to_string(),
    );
    let Runs {
        checkouts,
        page_views,
        naive,
        guarded,
        tuned,
    } = runs(seed);

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
            format!("{}/{SERVERS}", g.max_not_closed),
            g.fast_failed,
        );
    }
    println!(
        "busy: the most workers busy at once in those {TABLE_EVERY_S} s (█ = 20); refused: requests (checkouts \
         and page views) that found no free worker;\nopen: breakers not closed; fallback: checkouts \
         answered at once because the breaker refused the call.\n"
    );

    println!("Peak busy workers (pool: {POOL})");
    for (name, run) in [
        ("no breaker          ", &naive),
        ("failfast            ", &guarded),
        ("failfast, \"1s..4s\"  ", &tuned),
    ] {
        let verdict = match run.exhausted_at {
            Some(t) => format!("POOL EXHAUSTED at t = {:.1} s", t as f64 / 1000.0),
            None => "pool never exhausted".to_string(),
        };
        println!("  {name}  {:>3} / {POOL}   {verdict}", run.peak);
    }
    println!(
        "\nCheckouts ({checkouts})                    no breaker   failfast   failfast, recovery \"1s..4s\""
    );
    type Count = fn(&Run) -> u64;
    let lines: [(&str, Count); 6] = [
        ("paid", |r| r.completed),
        ("  of which after waiting over 10 s", |r| r.completed_slowly),
        ("  paid within 10 s", |r| r.completed - r.completed_slowly),
        ("failed after 3 timeouts", |r| r.failed_after_retries),
        ("answered by the fallback at once", |r| r.fast_failed),
        ("refused: no free worker", |r| r.refused_checkouts),
    ];
    for (label, value) in lines {
        println!(
            "  {label:<36} {:>8} {:>10} {:>10}",
            value(&naive),
            value(&guarded),
            value(&tuned)
        );
    }
    println!(
        "Page views ({page_views}) refused: no free worker {:>8} {:>10} {:>10}",
        naive.refused_page_views, guarded.refused_page_views, tuned.refused_page_views
    );
    for (name, run) in [
        ("recovery \"30s\"", &guarded),
        ("recovery \"1s..4s\"", &tuned),
    ] {
        if let Some(t) = run.all_closed_at {
            println!(
                "The gateway recovered at t = {} s; with {name} every breaker was closed again at \
                 t = {:.1} s.",
                HANG_UNTIL_MS / 1000,
                t as f64 / 1000.0
            );
        }
    }

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

    plot(&svg, &naive, &guarded)?;
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

/// The value after `--name` on the command line, or `default`.
fn flag<T: std::str::FromStr>(name: &str, default: T) -> T {
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
