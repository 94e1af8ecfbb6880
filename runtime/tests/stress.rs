//! Stress test: threads and tokio tasks hammer one breaker with random outcomes
//! (successes, counted failures, neutral errors, panics inside the protected
//! body, abandoned futures), short and growing open times with jitter, and
//! `trial_calls` / `success_threshold` from 1 to 3, on a manual clock (advanced
//! 1–60 µs by every rejected caller) and on the system clock.
//!
//! A monitor checks while the load runs:
//!
//! - **trials**: never more than `trial_calls` trial bodies run at once in one
//!   half-open period (see [`Periods`] for how bodies are told apart by period
//!   through the public API alone);
//! - **counters in range** in every `snapshot()`: `consecutive_failures <
//!   threshold`, `trials_in_flight <= trial_calls`, `trial_successes <
//!   success_threshold`, `window_failures <= window_calls <= window`,
//!   `failure_rate <= 1`, `retry_after <= max_recovery × (1 + jitter)`;
//!
//! and once the load stops, **liveness**: calling with successes only closes the
//! breaker within two of the longest open periods (plus slack on the system
//! clock, explained at [`closes_again`]).
//!
//! The short configurations run in `cargo test`, 1 s each (`STRESS_SHORT_SECS`
//! changes it; CI runs 4 s). The long run, random setups for minutes, with their figures
//! printed:
//!
//! ```text
//! STRESS_SECS=300 cargo test --release -p failfast-runtime --test stress -- --ignored --nocapture
//! ```
//!
//! Every run prints its setup with its seed; `STRESS_SEED` fixes the seed (the
//! interleavings still vary from run to run).
//!
//! Also here: the count window's totals while `reset()` races records.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use failfast_runtime::{Breaker, Builder, ManualClock, Mode, Outcome, Permit, State};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Sets the trial lease. Kept in one place: the only setting this file uses that
/// is newer than the rest of the builder.
fn with_trial_lease(b: Builder, lease: Duration) -> Builder {
    b.trial_lease(lease)
}

// ------------------------------------------------------------------ settings

#[derive(Clone, Copy, Debug)]
enum Rule {
    Consecutive(u32),
    /// failure_rate, window (calls), min_calls
    Rate(f64, u32, u32),
}

#[derive(Clone, Debug)]
struct Setup {
    manual: bool,
    threads: usize,
    tasks: usize,
    run_for: Duration,
    rule: Rule,
    recovery: Duration,
    max_recovery: Duration,
    jitter: f64,
    trial_calls: u32,
    success_threshold: u32,
    /// Share of calls that fail (counted), out of 100; 10 more are neutral.
    fail_pct: u32,
    seed: u64,
}

impl Setup {
    fn build(&self, clock: Option<&ManualClock>) -> Breaker {
        let mut b = Breaker::builder()
            .name("stress")
            .recovery(self.recovery)
            .max_recovery(self.max_recovery)
            .jitter(self.jitter)
            .trial_calls(self.trial_calls)
            .success_threshold(self.success_threshold);
        if let Some(clock) = clock {
            b = b.clock(clock.clone());
            // On the manual clock, rejected callers move time by up to 60 µs
            // each, so a trial body that is descheduled for a while can see
            // seconds of manual time pass. No trial runs for an hour of it: with
            // this lease no trial is ever presumed lost, and "at most
            // `trial_calls` trial bodies at once" is exact.
            b = with_trial_lease(b, Duration::from_secs(3600));
        }
        // On the system clock the default lease (at least 60 s) is far longer
        // than any body here (at most a few milliseconds).
        b = match self.rule {
            Rule::Consecutive(t) => b.threshold(t),
            Rule::Rate(rate, window, min_calls) => b
                .failure_rate(rate)
                .window_calls(window)
                .min_calls(min_calls),
        };
        b.build().expect("valid stress settings")
    }

    /// The longest a single open period can last.
    fn longest_open(&self) -> Duration {
        self.max_recovery.mul_f64(1.0 + self.jitter)
    }
}

fn seed() -> u64 {
    std::env::var("STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random)
}

// ------------------------------------------------------------------- periods

/// Tells trial bodies apart by half-open period, through the public API alone.
///
/// A half-open period ends only when a trial's outcome is recorded (a failure
/// reopens, the last needed success closes; no trial is presumed lost here, see
/// the lease above, and no manual control runs during the load). So every
/// recording that may end a period is bracketed by two counters: `started` is
/// bumped before it, `finished` after it. A trial admitted while no recording is
/// in progress and with `s` recordings finished (both read before `acquire()`,
/// `started` read again after it) was admitted between the `s`-th and the
/// `s+1`-th recordings: all trials in bucket `s` belong to one half-open period,
/// so at most `trial_calls` of them may be running at once. A trial admitted
/// while a recording was in progress is not counted (it could belong to either
/// period): the check may miss an excess, never invent one.
///
/// A trial body leaves its bucket before its permit is resolved: the slot it
/// gives back cannot be taken by another trial while it still counts.
#[derive(Default)]
struct Periods {
    started: AtomicU64,
    finished: AtomicU64,
    running: Mutex<HashMap<u64, u32>>,
}

impl Periods {
    /// Read before `acquire()`: the bucket if no recording is in progress.
    fn before(&self) -> Option<u64> {
        let finished = self.finished.load(SeqCst);
        (self.started.load(SeqCst) == finished).then_some(finished)
    }

    /// Read after `acquire()` admitted a trial: the bucket if it is still clean.
    fn after(&self, before: Option<u64>) -> Option<u64> {
        before.filter(|&s| self.started.load(SeqCst) == s)
    }

    fn enter(&self, bucket: u64) -> u32 {
        let mut running = self.running.lock().unwrap();
        let n = running.entry(bucket).or_default();
        *n += 1;
        *n
    }

    fn leave(&self, bucket: u64) {
        let mut running = self.running.lock().unwrap();
        let n = running.get_mut(&bucket).expect("entered");
        *n -= 1;
        if *n == 0 {
            running.remove(&bucket);
        }
    }

    /// Runs `record`, a recording that may end a half-open period.
    fn recording<T>(&self, record: impl FnOnce() -> T) -> T {
        self.started.fetch_add(1, SeqCst);
        let out = record();
        self.finished.fetch_add(1, SeqCst);
        out
    }
}

// ------------------------------------------------------------------- harness

struct Shared {
    setup: Setup,
    breaker: Breaker,
    clock: Option<ManualClock>,
    stop: AtomicBool,
    periods: Periods,
    calls: AtomicU64,
    admitted: AtomicU64,
    rejected: AtomicU64,
    trials: AtomicU64,
    trials_checked: AtomicU64,
    panics: AtomicU64,
    abandoned: AtomicU64,
    opens_seen: AtomicU64,
    max_trials: AtomicU32,
    violations: Mutex<Vec<String>>,
    violation_count: AtomicU64,
}

impl Shared {
    fn new(setup: Setup) -> Arc<Self> {
        let clock = setup.manual.then(ManualClock::new);
        Arc::new(Self {
            breaker: setup.build(clock.as_ref()),
            setup,
            clock,
            stop: AtomicBool::new(false),
            periods: Periods::default(),
            calls: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            trials: AtomicU64::new(0),
            trials_checked: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            opens_seen: AtomicU64::new(0),
            max_trials: AtomicU32::new(0),
            violations: Mutex::new(Vec::new()),
            violation_count: AtomicU64::new(0),
        })
    }

    /// Notes a broken invariant. The load goes on, so that one run shows every
    /// kind of breakage it runs into (an excess of trials, then a wedge).
    fn violation(&self, what: String) {
        self.violation_count.fetch_add(1, SeqCst);
        let mut v = self.violations.lock().unwrap();
        if v.len() < 5 {
            v.push(what);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(SeqCst)
    }

    fn on_rejection(&self, rng: &mut StdRng) {
        self.rejected.fetch_add(1, SeqCst);
        if let Some(clock) = &self.clock {
            clock.advance(Duration::from_micros(rng.gen_range(1..=60)));
        }
    }

    /// Checks one snapshot's counters.
    fn check_snapshot(&self) {
        // How much time passed while the snapshot was taken, on the breaker's
        // clock: its `retry_after` may be measured from any moment in between.
        let (manual_before, system_before) =
            (self.clock.as_ref().map(ManualClock::now), Instant::now());
        let s = self.breaker.snapshot();
        let during = match (&self.clock, manual_before) {
            (Some(clock), Some(before)) => clock.now() - before,
            _ => system_before.elapsed(),
        };
        let setup = &self.setup;
        let mut bad = Vec::new();
        if let Rule::Consecutive(t) = setup.rule {
            if s.consecutive_failures >= t {
                bad.push(format!(
                    "consecutive_failures {} >= threshold {t}",
                    s.consecutive_failures
                ));
            }
        }
        if s.trials_in_flight > setup.trial_calls {
            bad.push(format!(
                "trials_in_flight {} > trial_calls {}",
                s.trials_in_flight, setup.trial_calls
            ));
        }
        if s.trial_successes >= setup.success_threshold {
            bad.push(format!(
                "trial_successes {} >= success_threshold {}",
                s.trial_successes, setup.success_threshold
            ));
        }
        if s.window_failures > s.window_calls {
            bad.push(format!(
                "window_failures {} > window_calls {}",
                s.window_failures, s.window_calls
            ));
        }
        if let Rule::Rate(_, window, _) = setup.rule {
            if s.window_calls > u64::from(window) {
                bad.push(format!("window_calls {} > window {window}", s.window_calls));
            }
        }
        if let Some(rate) = s.failure_rate {
            if !(0.0..=1.0).contains(&rate) {
                bad.push(format!("failure_rate {rate}"));
            }
        }
        // Jitter's range: no open period is longer than the cap plus its spread
        // (plus the time the snapshot took, and 1 µs for rounding).
        if let Some(retry) = s.retry_after {
            if retry > setup.longest_open() + during + Duration::from_micros(1) {
                bad.push(format!(
                    "retry_after {retry:?} > max_recovery × (1 + jitter) = {:?}",
                    setup.longest_open()
                ));
            }
        }
        if !bad.is_empty() {
            self.violation(format!("counters out of range: {}; {s:?}", bad.join(", ")));
        }
    }

    fn figures(&self, wall: Duration) -> String {
        format!(
            "{:.1} s: {} calls, {} admitted, {} rejected, {} trials ({} checked by period), {} panics, {} abandoned, \
             {} opens seen by the monitor, at most {} trial bodies at once (trial_calls {}); {:?}",
            wall.as_secs_f64(),
            self.calls.load(SeqCst),
            self.admitted.load(SeqCst),
            self.rejected.load(SeqCst),
            self.trials.load(SeqCst),
            self.trials_checked.load(SeqCst),
            self.panics.load(SeqCst),
            self.abandoned.load(SeqCst),
            self.opens_seen.load(SeqCst),
            self.max_trials.load(SeqCst),
            self.setup.trial_calls,
            self.setup,
        )
    }
}

/// How an admitted call's body ends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    Record(Outcome),
    /// Dropped unresolved (neutral).
    Drop,
    /// A panic inside the body (a failure).
    Panic,
}

fn pick_end(rng: &mut StdRng, fail_pct: u32, may_panic: bool) -> End {
    let roll = rng.gen_range(0..100);
    if roll < fail_pct {
        if may_panic && rng.gen_range(0..8) == 0 {
            End::Panic
        } else {
            End::Record(Outcome::Failure)
        }
    } else if roll < fail_pct + 7 {
        End::Record(Outcome::Neutral)
    } else if roll < fail_pct + 10 {
        End::Drop
    } else {
        End::Record(Outcome::Success)
    }
}

/// An admitted call's body: holds the permit, counts the running trial bodies
/// of its period, and takes itself out of the count before the permit is
/// resolved, on every path (recorded, dropped, unwound by a panic, or its
/// future abandoned).
struct Body<'a> {
    shared: &'a Shared,
    permit: Option<Permit<'a>>,
    bucket: Option<u64>,
}

impl<'a> Body<'a> {
    fn start(shared: &'a Shared, permit: Permit<'a>, before: Option<u64>) -> Self {
        shared.admitted.fetch_add(1, SeqCst);
        let bucket = if permit.is_trial() {
            shared.trials.fetch_add(1, SeqCst);
            let bucket = shared.periods.after(before);
            if let Some(b) = bucket {
                shared.trials_checked.fetch_add(1, SeqCst);
                let running = shared.periods.enter(b);
                shared.max_trials.fetch_max(running, SeqCst);
                if running > shared.setup.trial_calls {
                    shared.violation(format!(
                        "{running} trial bodies running at once in one half-open period, \
                         trial_calls is {}; {:?}",
                        shared.setup.trial_calls,
                        shared.breaker.snapshot()
                    ));
                }
            }
            bucket
        } else {
            None
        };
        Self {
            shared,
            permit: Some(permit),
            bucket,
        }
    }

    fn leave(&mut self) {
        if let Some(b) = self.bucket.take() {
            self.shared.periods.leave(b);
        }
    }

    fn finish(mut self, outcome: Outcome) {
        self.leave();
        let permit = self.permit.take().expect("not finished yet");
        if outcome == Outcome::Neutral {
            permit.record(outcome);
        } else {
            self.shared.periods.recording(|| permit.record(outcome));
        }
    }
}

impl Drop for Body<'_> {
    fn drop(&mut self) {
        self.leave();
        if let Some(permit) = self.permit.take() {
            if thread::panicking() {
                // Dropped by the body's own panic: recorded as a failure.
                self.shared.periods.recording(|| drop(permit));
            } else {
                drop(permit);
            }
        }
    }
}

/// Some work inside a body. On the manual clock, a long body yields so that
/// rejected callers move the clock past `recovery` while it runs; on the
/// system clock it sleeps past `recovery`.
fn work(shared: &Shared, rng: &mut StdRng) {
    match rng.gen_range(0..20) {
        0 if shared.clock.is_some() => {
            for _ in 0..rng.gen_range(1..50) {
                thread::yield_now();
            }
        }
        0 => thread::sleep(shared.setup.recovery.mul_f64(rng.gen_range(1.0..3.0))),
        1..=4 => thread::yield_now(),
        _ => {}
    }
}

/// A call whose error `true` is a failure and `false` neutral: the permit
/// resolved with a rule, as the attribute's `counts` does.
fn call_counting(
    breaker: &Breaker,
    body: impl FnOnce() -> Result<(), bool>,
) -> Result<(), failfast_runtime::Error<bool>> {
    let permit = breaker.acquire()?;
    let result = body();
    permit.resolve(&result, |e| *e);
    result.map_err(failfast_runtime::Error::Failed)
}

/// [`call_counting`] for a future: admitted on its first poll, neutral if
/// dropped before it ends.
async fn call_async_counting(
    breaker: &Breaker,
    body: impl std::future::Future<Output = Result<(), bool>>,
) -> Result<(), failfast_runtime::Error<bool>> {
    let permit = breaker.acquire()?;
    let result = body.await;
    permit.resolve(&result, |e| *e);
    result.map_err(failfast_runtime::Error::Failed)
}

fn thread_worker(shared: &Shared, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fail_pct = shared.setup.fail_pct;
    while !shared.stopped() {
        shared.calls.fetch_add(1, SeqCst);
        if rng.gen_range(0..10) == 0 {
            // Through `call`, with a panic inside now and then (a neutral
            // error through a permit resolved with a rule, as `counts` does).
            let end = pick_end(&mut rng, fail_pct, true);
            let body = || match end {
                End::Panic => panic!("the dependency blew up"),
                End::Record(Outcome::Failure) => Err(true),
                End::Record(Outcome::Neutral) | End::Drop => Err(false),
                End::Record(Outcome::Success) => Ok(()),
            };
            let result = shared.periods.recording(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    if matches!(end, End::Record(Outcome::Neutral) | End::Drop) {
                        call_counting(&shared.breaker, body)
                    } else {
                        shared.breaker.call(body)
                    }
                }))
            });
            match result {
                Err(_) => {
                    shared.admitted.fetch_add(1, SeqCst);
                    shared.panics.fetch_add(1, SeqCst);
                }
                Ok(Err(failfast_runtime::Error::Rejected(_))) => shared.on_rejection(&mut rng),
                Ok(_) => {
                    shared.admitted.fetch_add(1, SeqCst);
                }
            }
            continue;
        }
        let before = shared.periods.before();
        let permit = match shared.breaker.acquire() {
            Ok(p) => p,
            Err(_) => {
                shared.on_rejection(&mut rng);
                continue;
            }
        };
        let body = Body::start(shared, permit, before);
        let end = pick_end(&mut rng, fail_pct, true);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let body = body;
            work(shared, &mut rng);
            match end {
                End::Panic => panic!("the dependency blew up"),
                End::Record(outcome) => body.finish(outcome),
                End::Drop => drop(body),
            }
        }));
        if r.is_err() {
            shared.panics.fetch_add(1, SeqCst);
        }
    }
}

async fn task_worker(shared: Arc<Shared>, seed: u64) {
    let shared = &*shared;
    let mut rng = StdRng::seed_from_u64(seed);
    let fail_pct = shared.setup.fail_pct;
    while !shared.stopped() {
        shared.calls.fetch_add(1, SeqCst);
        if rng.gen_range(0..10) == 0 {
            // Through `call_async`, abandoned now and then. An abandoned call
            // never records more than a neutral outcome (its body is still
            // waiting when it is dropped); one that is not abandoned ends in its
            // first poll, inside a short recording bracket.
            let end = pick_end(&mut rng, fail_pct, false);
            let result = if rng.gen_range(0..4) == 0 {
                let body = async move {
                    tokio::task::yield_now().await;
                    Err::<(), _>(end == End::Record(Outcome::Failure))
                };
                if end == End::Record(Outcome::Failure) {
                    let call = shared.breaker.call_async(body);
                    tokio::select! {
                        biased;
                        () = tokio::task::yield_now() => None,
                        r = call => Some(r),
                    }
                } else {
                    let call = call_async_counting(&shared.breaker, body);
                    tokio::select! {
                        biased;
                        () = tokio::task::yield_now() => None,
                        r = call => Some(r),
                    }
                }
            } else {
                let body = async move {
                    match end {
                        End::Record(Outcome::Failure) => Err(true),
                        End::Record(Outcome::Success) => Ok(()),
                        _ => Err(false),
                    }
                };
                let periods = &shared.periods;
                periods.started.fetch_add(1, SeqCst);
                let r = if matches!(end, End::Record(Outcome::Failure | Outcome::Success)) {
                    shared.breaker.call_async(body).await
                } else {
                    call_async_counting(&shared.breaker, body).await
                };
                periods.finished.fetch_add(1, SeqCst);
                Some(r)
            };
            match result {
                None => {
                    shared.abandoned.fetch_add(1, SeqCst);
                }
                Some(Err(failfast_runtime::Error::Rejected(_))) => shared.on_rejection(&mut rng),
                Some(_) => {
                    shared.admitted.fetch_add(1, SeqCst);
                }
            }
            if rng.gen_range(0..4) == 0 {
                tokio::task::yield_now().await;
            }
            continue;
        }
        let before = shared.periods.before();
        let permit = match shared.breaker.acquire() {
            Ok(p) => p,
            Err(_) => {
                shared.on_rejection(&mut rng);
                tokio::task::yield_now().await;
                continue;
            }
        };
        let end = pick_end(&mut rng, fail_pct, false);
        let long = rng.gen_range(0..10) == 0;
        let recovery = shared.setup.recovery;
        let manual = shared.clock.is_some();
        let body = async move {
            let body = Body::start(shared, permit, before);
            if long && !manual {
                tokio::time::sleep(recovery.mul_f64(2.0)).await;
            } else {
                for _ in 0..(if long { 20 } else { 1 }) {
                    tokio::task::yield_now().await;
                }
            }
            match end {
                End::Record(outcome) => body.finish(outcome),
                End::Drop | End::Panic => drop(body),
            }
        };
        if rng.gen_range(0..8) == 0 {
            // Abandoned: the body's future is dropped before it ends (neutral).
            let limit = if manual {
                Duration::from_micros(20)
            } else {
                recovery / 2
            };
            if tokio::time::timeout(limit, body).await.is_err() {
                shared.abandoned.fetch_add(1, SeqCst);
            }
        } else {
            body.await;
        }
    }
}

fn monitor(shared: &Shared) {
    let mut last = State::Closed;
    // On the manual clock: since when the breaker has looked wedged (Open, in
    // normal mode, with no deadline to report), in manual time.
    let mut wedged_since: Option<(Duration, Instant)> = None;
    while !shared.stopped() {
        shared.check_snapshot();
        let s = shared.breaker.snapshot();
        if s.state == State::Open && last != State::Open {
            shared.opens_seen.fetch_add(1, SeqCst);
        }
        last = s.state;
        if let Some(clock) = &shared.clock {
            if s.state == State::Open && s.mode == Mode::Normal && s.retry_after.is_none() {
                let (since, at) = *wedged_since.get_or_insert((clock.now(), Instant::now()));
                // Rejected callers keep moving the clock; a breaker that has had
                // no deadline for 20 of its longest open periods and half a
                // second (longer than a thread publishing one is descheduled)
                // will not find one: stop the load early, the liveness check
                // will say whether it is wedged. (This only ends the load early;
                // it asserts nothing.)
                if clock.now() - since > shared.setup.longest_open() * 20
                    && at.elapsed() > Duration::from_millis(500)
                {
                    shared.stop.store(true, SeqCst);
                }
            } else {
                wedged_since = None;
            }
        }
        thread::sleep(Duration::from_micros(50));
    }
}

/// Once the load has stopped (every permit resolved or dropped), calls that
/// succeed must close the breaker again.
///
/// With no call in flight the breaker is Closed, Open with a deadline at most
/// one open period away, or HalfOpen with every trial slot free; successes then
/// close it after `success_threshold` trials. Under the rate rule a success may
/// still trip it once (the call that brings the window to `min_calls`, with old
/// failures in it); once it closes the window is cleared. So it closes within
/// two of the longest open periods, `max_recovery × (1 + jitter)` each.
///
/// On the manual clock this is exact: the clock is moved by `retry_after` (or by
/// 1 ms when no deadline is given), and no slack is needed beyond 1 µs per step.
/// On the system clock, the bound gets 2 s of slack: the Open → HalfOpen
/// transition is seen by the first call after the deadline, and this thread may
/// be descheduled on a loaded 2-core machine for milliseconds; 2 s is hundreds
/// of times that, while a wedged breaker never closes at all.
fn closes_again(shared: &Shared) -> Result<(), String> {
    let b = &shared.breaker;
    let bound = shared.setup.longest_open() * 2;
    let mut waited = Duration::ZERO;
    let started = Instant::now();
    let slack = Duration::from_secs(2);
    for call in 0.. {
        match b.call(|| Ok::<_, ()>(())) {
            Ok(()) if b.state() == State::Closed => return Ok(()),
            Ok(()) => {}
            Err(e) => {
                let failfast_runtime::Error::Rejected(rejected) = e else {
                    panic!("only successes are sent: {e:?}")
                };
                let retry = rejected.retry_after();
                if let Some(clock) = &shared.clock {
                    let step = retry.unwrap_or(Duration::from_millis(1)) + Duration::from_micros(1);
                    clock.advance(step);
                    waited += step;
                    if waited > bound + Duration::from_micros(call + 1) {
                        return Err(format!(
                            "still not closed after {waited:?} of manual time with only \
                             successes (bound {bound:?}); last rejection: {rejected} \
                             (state {:?}, retry_after {retry:?}); {:?}",
                            rejected.state(),
                            b.snapshot()
                        ));
                    }
                } else {
                    if started.elapsed() > bound + slack {
                        return Err(format!(
                            "still not closed {:?} after the load stopped with only \
                             successes (bound {bound:?} + {slack:?}); last rejection: \
                             {rejected} (state {:?}, retry_after {retry:?}); {:?}",
                            started.elapsed(),
                            rejected.state(),
                            b.snapshot()
                        ));
                    }
                    thread::sleep(Duration::from_micros(100));
                }
            }
        }
        if call > 100_000 {
            return Err(format!(
                "{call} successful calls did not close it; {:?}",
                b.snapshot()
            ));
        }
    }
    unreachable!()
}

/// Runs one setup; returns its figures, or what went wrong.
fn stress(setup: Setup) -> Result<String, String> {
    let shared = Shared::new(setup.clone());
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..setup.tasks)
        .map(|i| runtime.spawn(task_worker(shared.clone(), setup.seed ^ (1000 + i as u64))))
        .collect();
    thread::scope(|scope| {
        let shared = &*shared;
        for i in 0..setup.threads {
            scope.spawn(move || thread_worker(shared, setup.seed ^ i as u64));
        }
        scope.spawn(move || monitor(shared));
        let deadline = started + setup.run_for;
        while Instant::now() < deadline && !shared.stopped() {
            thread::sleep(Duration::from_millis(10));
        }
        shared.stop.store(true, SeqCst);
    });
    runtime.block_on(async {
        for t in tasks {
            t.await.expect("a task panicked outside a body");
        }
    });
    drop(runtime);
    let wall = started.elapsed();
    shared.check_snapshot();
    let figures = shared.figures(wall);
    let liveness = closes_again(&shared);
    let violations = shared.violations.lock().unwrap().clone();
    if violations.is_empty() && liveness.is_ok() {
        return Ok(figures);
    }
    let mut report = format!(
        "{} invariant violations during the load",
        shared.violation_count.load(SeqCst)
    );
    for v in violations {
        report += &format!("\n- {v}");
    }
    match liveness {
        Ok(()) => report += "\nliveness: closed again once the load stopped",
        Err(e) => report += &format!("\nliveness FAILED: {e}"),
    }
    Err(format!("{report}\n{figures}"))
}

/// The panics inside bodies are expected: keeps their messages out of the output.
fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let expected = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|m| *m == "the dependency blew up");
            if !expected {
                hook(info);
            }
        }));
    });
}

fn check(setup: Setup) {
    quiet_expected_panics();
    match stress(setup) {
        Ok(figures) => println!("{figures}"),
        Err(e) => panic!("{e}"),
    }
}

// --------------------------------------------------------------- short runs

/// How long each short run lasts: 1 s (so that a plain `cargo test` spends
/// about 3 s here, two at a time), or `STRESS_SHORT_SECS` (CI runs 4).
fn short() -> Duration {
    Duration::from_secs(
        std::env::var("STRESS_SHORT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1),
    )
}

/// The configuration of the reported wedge: several trials, two successes to
/// close, 45% failures.
#[test]
fn manual_clock_three_trials() {
    check(Setup {
        manual: true,
        threads: 8,
        tasks: 8,
        run_for: short(),
        rule: Rule::Consecutive(1),
        recovery: Duration::from_micros(100),
        max_recovery: Duration::from_micros(800),
        jitter: 0.2,
        trial_calls: 3,
        success_threshold: 2,
        fail_pct: 45,
        seed: seed(),
    });
}

#[test]
fn manual_clock_one_trial_rate_rule() {
    check(Setup {
        manual: true,
        threads: 6,
        tasks: 8,
        run_for: short(),
        rule: Rule::Rate(0.5, 20, 5),
        recovery: Duration::from_micros(100),
        max_recovery: Duration::from_micros(400),
        jitter: 0.3,
        trial_calls: 1,
        success_threshold: 3,
        fail_pct: 45,
        seed: seed(),
    });
}

/// The system-clock configuration of the reported wedge.
#[test]
fn system_clock_three_trials() {
    let mut rng = StdRng::seed_from_u64(seed());
    check(Setup {
        manual: false,
        threads: 12,
        tasks: 48,
        run_for: short(),
        rule: Rule::Consecutive(1),
        recovery: Duration::from_micros(rng.gen_range(1000..=2000)),
        max_recovery: Duration::from_millis(4),
        jitter: 0.2,
        trial_calls: 3,
        success_threshold: 2,
        fail_pct: 45,
        seed: rng.r#gen(),
    });
}

/// One trial at a time, some bodies slower than `recovery`.
#[test]
fn system_clock_one_trial() {
    let mut rng = StdRng::seed_from_u64(seed());
    check(Setup {
        manual: false,
        threads: 8,
        tasks: 16,
        run_for: short(),
        rule: Rule::Consecutive(2),
        recovery: Duration::from_micros(rng.gen_range(1000..=2000)),
        max_recovery: Duration::from_millis(8),
        jitter: 0.2,
        trial_calls: 1,
        success_threshold: 2,
        fail_pct: 40,
        seed: rng.r#gen(),
    });
}

// ----------------------------------------------------------------- long run

/// Random setups back to back, 20 s each, for `STRESS_SECS` (default 300)
/// seconds; every run's figures are printed, and the test fails at the end if
/// any run did.
#[test]
#[ignore = "runs for minutes: STRESS_SECS=300 cargo test --release -p failfast-runtime --test stress -- --ignored --nocapture"]
fn long_run() {
    let secs: u64 = std::env::var("STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    quiet_expected_panics();
    let mut rng = StdRng::seed_from_u64(seed());
    let until = Instant::now() + Duration::from_secs(secs);
    let mut runs = 0;
    let mut failed = Vec::new();
    while Instant::now() < until {
        runs += 1;
        let manual = rng.gen_bool(0.5);
        let recovery = if manual {
            Duration::from_micros(rng.gen_range(50..=200))
        } else {
            Duration::from_micros(rng.gen_range(1000..=2000))
        };
        let setup = Setup {
            manual,
            threads: if manual { 8 } else { 12 },
            tasks: if manual { 16 } else { 48 },
            run_for: Duration::from_secs(20),
            rule: if rng.gen_bool(0.5) {
                Rule::Consecutive(rng.gen_range(1..=3))
            } else {
                Rule::Rate(0.5, 20, rng.gen_range(1..=20))
            },
            recovery,
            max_recovery: recovery * rng.gen_range(1..=8),
            jitter: rng.gen_range(0.0..0.5),
            trial_calls: rng.gen_range(1..=3),
            success_threshold: rng.gen_range(1..=3),
            fail_pct: rng.gen_range(20..=60),
            seed: rng.r#gen(),
        };
        match stress(setup) {
            Ok(figures) => println!("run {runs}: ok: {figures}"),
            Err(e) => {
                println!("run {runs}: FAILED: {e}");
                failed.push(runs);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "runs {failed:?} of {runs} failed (see above)"
    );
}

// ------------------------------------------------------- count-window totals

/// A 1,000,000-call window under the failure-rate rule, `reset()` every 200 µs
/// from one thread while others record half failures, for half as long as a
/// short run (`STRESS_SHORT_SECS`): every snapshot must have
/// `window_failures <= window_calls` and `failure_rate <= 1`, and the breaker
/// must never trip (its rate is 1.0: only a window of 1,000,000 calls that all
/// failed could trip it, even if the resetting thread is descheduled for long).
#[test]
fn count_window_totals_stay_in_range_while_reset_races_records() {
    const WINDOW: u32 = 1_000_000;
    let b = Breaker::builder()
        .name("window")
        .failure_rate(1.0)
        .window_calls(WINDOW)
        .min_calls(WINDOW)
        .recovery(Duration::from_secs(60))
        .build()
        .unwrap();
    let stop = AtomicBool::new(false);
    let (snapshots, resets, calls) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let bad: Mutex<Option<String>> = Mutex::new(None);
    let run_for = short() / 2;
    thread::scope(|scope| {
        for seed in 0..2u64 {
            let (b, stop, calls) = (&b, &stop, &calls);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                while !stop.load(SeqCst) {
                    let failed = rng.gen_bool(0.5);
                    let _ = b.call(|| if failed { Err(()) } else { Ok(()) });
                    calls.fetch_add(1, SeqCst);
                }
            });
        }
        scope.spawn(|| {
            // Every 200 µs, and every fourth pause 1 ms: a clear leaves wrong
            // totals for calls that were being recorded across it, at slots the
            // calls after it reach only when the pause is longer than the one
            // before the clear.
            for i in 0u64.. {
                if stop.load(SeqCst) {
                    break;
                }
                let pause = if i % 4 == 3 { 1000 } else { 200 };
                let next = Instant::now() + Duration::from_micros(pause);
                while Instant::now() < next {
                    std::hint::spin_loop();
                }
                b.set_mode(Mode::Normal);
                resets.fetch_add(1, SeqCst);
            }
        });
        let started = Instant::now();
        while started.elapsed() < run_for {
            let s = b.snapshot();
            snapshots.fetch_add(1, SeqCst);
            let rate = s.failure_rate.unwrap_or(0.0);
            if s.window_failures > s.window_calls
                || s.window_calls > u64::from(WINDOW)
                || !(0.0..=1.0).contains(&rate)
                || s.state != State::Closed
            {
                *bad.lock().unwrap() = Some(format!(
                    "after {:?}, {} resets, {} calls: window_failures {} window_calls {} \
                     failure_rate {:?} state {:?}",
                    started.elapsed(),
                    resets.load(SeqCst),
                    calls.load(SeqCst),
                    s.window_failures,
                    s.window_calls,
                    s.failure_rate,
                    s.state
                ));
                break;
            }
        }
        stop.store(true, SeqCst);
    });
    if let Some(bad) = bad.into_inner().unwrap() {
        panic!("window totals out of range: {bad}");
    }
    println!(
        "{} snapshots, {} resets, {} calls: in range",
        snapshots.load(SeqCst),
        resets.load(SeqCst),
        calls.load(SeqCst)
    );
}
