//! Model-based test: random sequences of operations on a breaker with a manual
//! clock, checked step by step against a small reference model written from the
//! documented semantics (the state machine of the spec, the outcome rules, the
//! trial lease, growing open time, manual control).
//!
//! After every operation the breaker and the model must agree on `state()`,
//! `snapshot()` (mode, `retry_after`, the counters of the current state) and, for
//! an `acquire()`, on admission, the rejection's state and `retry_after`, and
//! whether the permit is a trial. Counters must also stay in range.
//!
//! Runs `PROPTEST_CASES` sequences (default 1000, about 2 s in debug). The long
//! run:
//!
//! ```text
//! PROPTEST_CASES=100000 cargo test --release -p failfast-runtime --test behaviour model::
//! ```
//!
//! Jitter is 0 here (the model is exact); the stress test covers jitter's range.
//! Times are whole milliseconds, while `slow` and the trial lease end on a half
//! millisecond, so no call ever ends exactly at one of those two bounds ("slower
//! than", "past its lease") and the model needs no tie-breaking; open deadlines
//! are whole milliseconds, so "at the deadline" is exercised exactly.

use std::collections::VecDeque;
use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ManualClock, Mode, Outcome, Permit, State};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const MS: u64 = 1_000_000;
/// The consecutive rule's default threshold.
const DEFAULT_THRESHOLD: u32 = 5;
const HALF_MS: u64 = MS / 2;
/// The documented default lease: max(60 s, 10 × recovery).
const DEFAULT_LEASE_FLOOR: u64 = 60_000 * MS;

/// Sets the trial lease. Kept in one place: the only setting this file uses that
/// is newer than the rest of the builder.
fn with_trial_lease(b: Builder, lease: Duration) -> Builder {
    b.trial_lease(lease)
}

// ------------------------------------------------------------------ settings

#[derive(Clone, Debug)]
struct Cfg {
    recovery: u64,
    max_recovery: Option<u64>,
    trial_calls: u32,
    success_threshold: u32,
    /// `None`: the default lease.
    lease: Option<u64>,
    /// The threshold: of consecutive failures, or with `within` of failures
    /// within the window; unused under `failure_rate`.
    threshold: u32,
    /// `threshold` written with `window`: failures within the window.
    within: bool,
    failure_rate: Option<f64>,
    /// `slow` and `slow_rate`.
    slow: Option<(u64, f64)>,
    window: u32,
    min_calls: u32,
}

impl Cfg {
    fn consecutive(&self) -> bool {
        self.failure_rate.is_none() && !self.within
    }
    fn uses_window(&self) -> bool {
        self.failure_rate.is_some() || self.slow.is_some() || self.within
    }
    fn lease(&self) -> u64 {
        self.lease
            .unwrap_or_else(|| DEFAULT_LEASE_FLOOR.max(10 * self.recovery))
    }
    fn build(&self, clock: &ManualClock) -> Breaker {
        let mut b = Breaker::builder()
            .recovery(Duration::from_nanos(self.recovery))
            .trial_calls(self.trial_calls)
            .success_threshold(self.success_threshold)
            .jitter(0.0)
            .clock(clock.clone());
        if let Some(max) = self.max_recovery {
            b = b.max_recovery(Duration::from_nanos(max));
        }
        if let Some(lease) = self.lease {
            b = with_trial_lease(b, Duration::from_nanos(lease));
        }
        match self.failure_rate {
            Some(rate) => b = b.failure_rate(rate),
            // Beside a slow-call rule's window, a written threshold would
            // count within it: the consecutive rule takes the default.
            None if self.within || !self.uses_window() => b = b.threshold(self.threshold),
            None => assert_eq!(self.threshold, DEFAULT_THRESHOLD),
        }
        if let Some((slow, rate)) = self.slow {
            b = b.slow(Duration::from_nanos(slow)).slow_rate(rate);
        }
        if self.uses_window() {
            b = b.window_calls(self.window);
        }
        if self.failure_rate.is_some() || self.slow.is_some() {
            b = b.min_calls(self.min_calls);
        }
        b.build().expect("the generated settings are valid")
    }
}

fn rate() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.25, 0.5, 0.6, 1.0])
}

fn cfg() -> impl Strategy<Value = Cfg> {
    let slow = || (1u64..=4, rate()).prop_map(|(s, r)| (s * MS + HALF_MS, r));
    let rule = prop_oneof![
        // Consecutive failures only.
        (1u32..=3).prop_map(|t| (t, false, None, None)),
        // Failures within a count window.
        (1u32..=3).prop_map(|t| (t, true, None, None)),
        // Failure rate over a count window.
        rate().prop_map(|r| (1, false, Some(r), None)),
        // Slow calls, the consecutive rule (at its default) beside them.
        slow().prop_map(|s| (DEFAULT_THRESHOLD, false, None, Some(s))),
        // Slow calls, and failures within the same window.
        (1u32..=3, slow()).prop_map(|(t, s)| (t, true, None, Some(s))),
        // Failure rate and slow calls.
        (rate(), slow()).prop_map(|(fr, s)| (1, false, Some(fr), Some(s))),
    ];
    (
        prop::sample::select(vec![3u64, 10]),
        prop::option::of(prop::sample::select(vec![1u64, 2, 5, 8])),
        1u32..=3,
        1u32..=3,
        prop::option::weighted(0.8, prop::sample::select(vec![2u64, 3, 5])),
        rule,
        (1u32..=6, any::<u32>()),
    )
        .prop_map(
            |(
                recovery,
                max_factor,
                trial_calls,
                success_threshold,
                lease_factor,
                rule,
                (window, min),
            )| {
                let recovery = recovery * MS;
                let (threshold, within, failure_rate, slow) = rule;
                // A count window holds at least the failures it counts to.
                let window = if within {
                    window.max(threshold)
                } else {
                    window
                };
                Cfg {
                    recovery,
                    max_recovery: max_factor.map(|f| f * recovery),
                    trial_calls,
                    success_threshold,
                    lease: lease_factor.map(|f| f * recovery + HALF_MS),
                    threshold,
                    within,
                    failure_rate,
                    slow,
                    window,
                    min_calls: 1 + min % window,
                }
            },
        )
}

// ----------------------------------------------------------------- operations

#[derive(Clone, Copy, Debug)]
enum How {
    Success,
    Failure,
    Neutral,
    Drop,
}

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    Resolve(usize, How),
    /// Milliseconds.
    Advance(u64),
    /// Past the default lease (60.5 s).
    LongPause,
    ForceOpen,
    ForceClosed,
    Disable,
    Reset,
    State,
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let how = prop_oneof![
        4 => Just(How::Success),
        4 => Just(How::Failure),
        1 => Just(How::Neutral),
        1 => Just(How::Drop),
    ];
    prop_oneof![
        30 => Just(Op::Acquire),
        30 => (any::<usize>(), how).prop_map(|(i, h)| Op::Resolve(i, h)),
        20 => prop_oneof![0u64..=12, 0u64..=40].prop_map(Op::Advance),
        1 => Just(Op::LongPause),
        2 => Just(Op::ForceOpen),
        2 => Just(Op::ForceClosed),
        2 => Just(Op::Disable),
        3 => Just(Op::Reset),
        1 => Just(Op::State),
        1 => Just(Op::Snapshot),
    ]
}

// ---------------------------------------------------------------------- model

/// Trial rounds are numbered 256 to a generation: the 257th lost round of a
/// half-open period starts a fresh generation, and the trials of earlier
/// generations are stale.
const ROUNDS_PER_GENERATION: u64 = 256;

fn same_generation(round: u64, current: u64) -> bool {
    round / ROUNDS_PER_GENERATION == current / ROUNDS_PER_GENERATION
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Admitted while forced closed, or passed by a disabled breaker that would
    /// have rejected: its outcome is not recorded.
    Passive,
    /// Admitted in Closed; counts only while the breaker is still in that same
    /// closed period.
    Closed { epoch: u64 },
    /// A half-open trial of half-open period `period`, trial round `round`.
    Trial { period: u64, round: u64 },
}

#[derive(Clone, Copy, Debug)]
struct Held {
    id: u64,
    kind: Kind,
    started: u64,
}

#[derive(Clone, Debug)]
enum Phase {
    Closed {
        failures: u32,
        /// (failed, slow) of the last `window` recorded calls, oldest first.
        window: VecDeque<(bool, bool)>,
    },
    Open {
        deadline: u64,
    },
    HalfOpen {
        round: u64,
        /// Trial permits of the current round still out: (id, admitted at).
        holders: Vec<(u64, u64)>,
        successes: u32,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Admission {
    Admitted(Kind),
    /// The rejection's state and `retry_after` (`None`: not checked).
    Rejected(State, Option<Option<Duration>>),
}

#[derive(Debug)]
struct Model {
    cfg: Cfg,
    now: u64,
    mode: Mode,
    phase: Phase,
    /// Bumped by every transition: a permit of an earlier closed period is stale.
    epoch: u64,
    /// Identifies the current half-open period.
    period: u64,
    level: u32,
    /// When the breaker last changed state (closed periods start here).
    last_transition: u64,
    next_id: u64,
}

fn fresh_closed() -> Phase {
    Phase::Closed {
        failures: 0,
        window: VecDeque::new(),
    }
}

impl Model {
    fn new(cfg: Cfg) -> Self {
        Self {
            cfg,
            now: 0,
            mode: Mode::Normal,
            phase: fresh_closed(),
            epoch: 0,
            period: 0,
            level: 0,
            last_transition: 0,
            next_id: 0,
        }
    }

    fn state(&self) -> State {
        match self.mode {
            Mode::ForcedOpen => State::Open,
            Mode::ForcedClosed => State::Closed,
            Mode::Normal | Mode::ObserveOnly => match self.phase {
                Phase::Closed { .. } => State::Closed,
                Phase::Open { deadline } if self.now >= deadline => State::HalfOpen,
                Phase::Open { .. } => State::Open,
                Phase::HalfOpen { .. } => State::HalfOpen,
            },
        }
    }

    fn counts(&self) -> bool {
        matches!(self.mode, Mode::Normal | Mode::ObserveOnly)
    }

    fn transition(&mut self, phase: Phase) {
        self.phase = phase;
        self.epoch += 1;
        self.last_transition = self.now;
    }

    fn held(&mut self, kind: Kind) -> Held {
        self.next_id += 1;
        Held {
            id: self.next_id,
            kind,
            started: self.now,
        }
    }

    fn acquire(&mut self) -> (Admission, Option<Held>) {
        let rejected = match self.mode {
            Mode::ForcedOpen => return (Admission::Rejected(State::Open, Some(None)), None),
            Mode::ForcedClosed => {
                let h = self.held(Kind::Passive);
                return (Admission::Admitted(Kind::Passive), Some(h));
            }
            Mode::Normal | Mode::ObserveOnly => self.admit(),
        };
        match rejected {
            Ok(h) => (Admission::Admitted(h.kind), Some(h)),
            Err(r) if self.mode == Mode::ObserveOnly => {
                let _ = r;
                let h = self.held(Kind::Passive);
                (Admission::Admitted(Kind::Passive), Some(h))
            }
            Err(r) => (r, None),
        }
    }

    fn admit(&mut self) -> Result<Held, Admission> {
        let now = self.now;
        match &mut self.phase {
            Phase::Closed { .. } => {
                let kind = Kind::Closed { epoch: self.epoch };
                Ok(self.held(kind))
            }
            Phase::Open { deadline } if now < *deadline => Err(Admission::Rejected(
                State::Open,
                Some(Some(Duration::from_nanos(*deadline - now))),
            )),
            Phase::Open { .. } => {
                self.period += 1;
                self.transition(Phase::HalfOpen {
                    round: 0,
                    holders: Vec::new(),
                    successes: 0,
                });
                Ok(self.take_trial())
            }
            Phase::HalfOpen { holders, .. } => {
                if holders.len() < self.cfg.trial_calls as usize {
                    return Ok(self.take_trial());
                }
                let lease = self.cfg.lease();
                if holders.iter().all(|&(_, at)| now >= at + lease) {
                    // Every slot is held past its lease: a new round of trials.
                    // The successes of earlier rounds were real: they still
                    // count toward closing.
                    if let Phase::HalfOpen { round, holders, .. } = &mut self.phase {
                        *round += 1;
                        holders.clear();
                    }
                    return Ok(self.take_trial());
                }
                Err(Admission::Rejected(State::HalfOpen, None))
            }
        }
    }

    fn take_trial(&mut self) -> Held {
        let Phase::HalfOpen { round, .. } = self.phase else {
            unreachable!()
        };
        let h = self.held(Kind::Trial {
            period: self.period,
            round,
        });
        if let Phase::HalfOpen { holders, .. } = &mut self.phase {
            holders.push((h.id, h.started));
        }
        h
    }

    fn is_slow(&self, h: &Held, outcome: Outcome) -> bool {
        self.cfg
            .slow
            .is_some_and(|(slow, _)| outcome != Outcome::Neutral && self.now - h.started > slow)
    }

    /// Whether `h` is a trial of an earlier round of the current half-open
    /// period, in the same generation of rounds (see `ROUNDS_PER_GENERATION`).
    fn earlier_round(&self, h: &Held) -> bool {
        match (h.kind, &self.phase) {
            (Kind::Trial { period, round }, Phase::HalfOpen { round: current, .. }) => {
                self.counts()
                    && period == self.period
                    && round < *current
                    && same_generation(round, *current)
            }
            _ => false,
        }
    }

    fn resolve(&mut self, h: &Held, outcome: Outcome) {
        if !self.counts() {
            return;
        }
        let slow = self.is_slow(h, outcome);
        match h.kind {
            Kind::Passive => {}
            Kind::Closed { epoch } => {
                if epoch == self.epoch && matches!(self.phase, Phase::Closed { .. }) {
                    self.record_closed(outcome, slow);
                }
            }
            Kind::Trial { period, round } => {
                let Phase::HalfOpen {
                    round: current,
                    holders,
                    successes,
                } = &mut self.phase
                else {
                    return;
                };
                if period != self.period {
                    return;
                }
                // A slow trial is a failed trial.
                let outcome = if slow { Outcome::Failure } else { outcome };
                if round != *current {
                    // A late failure from an earlier round of the same
                    // generation still reopens; a trial of an earlier
                    // generation is stale, whatever it reports.
                    if outcome == Outcome::Failure && same_generation(round, *current) {
                        self.trip(true);
                    }
                    return;
                }
                holders.retain(|&(id, _)| id != h.id);
                match outcome {
                    Outcome::Failure => self.trip(true),
                    Outcome::Neutral => {}
                    Outcome::Success => {
                        *successes += 1;
                        if *successes >= self.cfg.success_threshold {
                            self.transition(fresh_closed());
                        }
                    }
                }
            }
        }
    }

    fn record_closed(&mut self, outcome: Outcome, slow: bool) {
        if outcome == Outcome::Neutral {
            return;
        }
        let cfg = &self.cfg;
        let Phase::Closed { failures, window } = &mut self.phase else {
            unreachable!()
        };
        let failed = outcome == Outcome::Failure;
        if cfg.uses_window() {
            window.push_back((failed, slow));
            if window.len() > cfg.window as usize {
                window.pop_front();
            }
            let calls = window.len();
            let fails = window.iter().filter(|c| c.0).count();
            if cfg.within && fails >= cfg.threshold as usize {
                self.trip(false);
                return;
            }
            if calls >= cfg.min_calls as usize {
                #[allow(clippy::cast_precision_loss)]
                let share = |n: usize| n as f64 / calls as f64;
                let slows = window.iter().filter(|c| c.1).count();
                let by_rate = cfg.failure_rate.is_some_and(|r| share(fails) >= r);
                let by_slow = cfg.slow.is_some_and(|(_, r)| share(slows) >= r);
                if by_rate || by_slow {
                    self.trip(false);
                    return;
                }
            }
        }
        if cfg.consecutive() {
            if failed {
                *failures += 1;
                if *failures >= cfg.threshold {
                    self.trip(false);
                }
            } else {
                *failures = 0;
            }
        }
    }

    fn trip(&mut self, from_trial: bool) {
        let base = self.cfg.recovery;
        let mut period = base;
        if let Some(max) = self.cfg.max_recovery {
            let mut level = self.level;
            if !from_trial {
                let healthy = (self.now - self.last_transition) / base;
                level = level.saturating_sub(u32::try_from(healthy).unwrap_or(u32::MAX));
            }
            period = base
                .checked_shl(level)
                .filter(|p| p >> level == base)
                .map_or(max, |p| p.min(max));
            self.level = if period < max { level + 1 } else { level };
        }
        let deadline = self.now + period;
        self.transition(Phase::Open { deadline });
    }

    fn control(&mut self, mode: Mode) {
        if self.mode == mode {
            // The mode it has: nothing, but for a normal, closed breaker's
            // counters, which start again in the same period.
            if mode != Mode::Normal {
                return;
            }
            if matches!(self.phase, Phase::Closed { .. }) {
                self.phase = fresh_closed();
                self.level = 0;
                return;
            }
        }
        self.mode = mode;
        self.transition(fresh_closed());
        if mode == Mode::Normal {
            self.level = 0;
        }
    }

    /// `snapshot().retry_after`: `Some(exact)`, or `None` when either `None` or
    /// zero is right (the deadline has passed and no call has taken the trial).
    fn retry_after(&self) -> Option<Option<Duration>> {
        match (self.counts(), &self.phase) {
            (true, Phase::Open { deadline }) if self.now < *deadline => {
                Some(Some(Duration::from_nanos(deadline - self.now)))
            }
            (true, Phase::Open { .. }) => None,
            _ => Some(None),
        }
    }

    /// consecutive_failures, trials_in_flight, trial_successes.
    fn counters(&self) -> (u32, u32, u32) {
        if !self.counts() {
            return (0, 0, 0);
        }
        match &self.phase {
            Phase::Closed { failures, .. } => (*failures, 0, 0),
            Phase::Open { .. } => (0, 0, 0),
            Phase::HalfOpen {
                holders, successes, ..
            } => (0, u32::try_from(holders.len()).unwrap(), *successes),
        }
    }

    /// window_calls, window_failures, window_slow, where the model knows them.
    fn window(&self) -> Option<(u32, u32, u32)> {
        let n = |it: usize| u32::try_from(it).unwrap();
        match (&self.phase, self.mode) {
            (_, Mode::ForcedOpen | Mode::ForcedClosed) => Some((0, 0, 0)),
            (Phase::Closed { window, .. }, _) => Some((
                n(window.len()),
                n(window.iter().filter(|c| c.0).count()),
                n(window.iter().filter(|c| c.1).count()),
            )),
            // What an open breaker shows of the window that tripped it is not
            // specified.
            _ => None,
        }
    }
}

// ------------------------------------------------------------------- the test

fn check(b: &Breaker, m: &Model, step: usize, op: &Op) -> Result<(), TestCaseError> {
    let s = b.snapshot();
    let at = format!("after step {step} ({op:?}) at {} ms", m.now / MS);
    prop_assert_eq!(b.state(), m.state(), "state() {}", at);
    prop_assert_eq!(s.state, m.state(), "snapshot().state {}", at);
    prop_assert_eq!(s.mode, m.mode, "mode {}", at);
    match m.retry_after() {
        Some(exact) => prop_assert_eq!(s.retry_after, exact, "retry_after {}", at),
        None => prop_assert!(
            matches!(s.retry_after, None | Some(Duration::ZERO)),
            "retry_after {:?} with the deadline passed {}",
            s.retry_after,
            at
        ),
    }
    let (failures, in_flight, successes) = m.counters();
    prop_assert_eq!(
        (
            s.consecutive_failures,
            s.trials_in_flight,
            s.trial_successes
        ),
        (failures, in_flight, successes),
        "(consecutive_failures, trials_in_flight, trial_successes) {}",
        at
    );
    if let Some(window) = m.window() {
        prop_assert_eq!(
            (s.window_calls, s.window_failures, s.window_slow),
            (
                u64::from(window.0),
                u64::from(window.1),
                u64::from(window.2)
            ),
            "(window_calls, window_failures, window_slow) {}",
            at
        );
    }
    // Ranges, whatever the state.
    let cfg = &m.cfg;
    if cfg.consecutive() {
        prop_assert!(s.consecutive_failures < cfg.threshold, "{:?} {}", s, at);
    }
    prop_assert!(s.trials_in_flight <= cfg.trial_calls, "{:?} {}", s, at);
    prop_assert!(s.trial_successes < cfg.success_threshold, "{:?} {}", s, at);
    prop_assert!(s.window_failures <= s.window_calls, "{:?} {}", s, at);
    prop_assert!(s.window_slow <= s.window_calls, "{:?} {}", s, at);
    if cfg.uses_window() {
        prop_assert!(s.window_calls <= u64::from(cfg.window), "{:?} {}", s, at);
    }
    if let Some(rate) = s.failure_rate {
        prop_assert!((0.0..=1.0).contains(&rate), "failure_rate {} {}", rate, at);
    }
    Ok(())
}

fn run(cfg: &Cfg, ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let b = cfg.build(&clock);
    let mut m = Model::new(cfg.clone());
    let mut pool: Vec<(Permit<'_>, Held)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Acquire => {
                let (expected, held) = m.acquire();
                match (b.acquire(), expected) {
                    (Ok(permit), Admission::Admitted(kind)) => {
                        prop_assert_eq!(
                            permit.is_trial(),
                            matches!(kind, Kind::Trial { .. }),
                            "is_trial() at step {} ({:?})",
                            step,
                            kind
                        );
                        pool.push((permit, held.unwrap()));
                    }
                    (Err(r), Admission::Rejected(state, retry)) => {
                        prop_assert_eq!(r.state(), state, "rejected at step {}", step);
                        if let Some(retry) = retry {
                            prop_assert_eq!(
                                r.retry_after(),
                                retry,
                                "rejection's retry_after at step {}",
                                step
                            );
                        }
                    }
                    (actual, expected) => prop_assert!(
                        false,
                        "acquire() at step {} ({} ms): breaker gave {:?}, model expects {:?}",
                        step,
                        m.now / MS,
                        actual.map(|p| if p.is_trial() { "a trial" } else { "a permit" }),
                        expected
                    ),
                }
            }
            Op::Resolve(index, how) => {
                if pool.is_empty() {
                    continue;
                }
                let (permit, held) = pool.swap_remove(index % pool.len());
                let mut outcome = match how {
                    How::Success => Outcome::Success,
                    How::Failure => Outcome::Failure,
                    How::Neutral | How::Drop => Outcome::Neutral,
                };
                // Whether a slow success of an earlier trial round is a "late
                // failure" is not specified: record such a call as a failure.
                if outcome == Outcome::Success
                    && m.earlier_round(&held)
                    && m.is_slow(&held, outcome)
                {
                    outcome = Outcome::Failure;
                }
                m.resolve(&held, outcome);
                match how {
                    How::Drop => drop(permit),
                    _ => permit.record(outcome),
                }
            }
            Op::Advance(ms) => {
                clock.advance(Duration::from_millis(*ms));
                m.now += ms * MS;
            }
            Op::LongPause => {
                let pause = DEFAULT_LEASE_FLOOR + HALF_MS;
                clock.advance(Duration::from_nanos(pause));
                m.now += pause;
            }
            Op::ForceOpen => {
                b.set_mode(Mode::ForcedOpen);
                m.control(Mode::ForcedOpen);
            }
            Op::ForceClosed => {
                b.set_mode(Mode::ForcedClosed);
                m.control(Mode::ForcedClosed);
            }
            Op::Disable => {
                b.set_mode(Mode::ObserveOnly);
                m.control(Mode::ObserveOnly);
            }
            Op::Reset => {
                b.set_mode(Mode::Normal);
                m.control(Mode::Normal);
            }
            Op::State | Op::Snapshot => {}
        }
        check(&b, &m, step, op)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // `PROPTEST_CASES` overrides the count.
        cases: 1000,
        max_shrink_iters: 20_000,
        // A failure is reported with its shrunk case; nothing is written to the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn breaker_agrees_with_the_model(cfg in cfg(), ops in prop::collection::vec(op(), 1..80)) {
        run(&cfg, &ops)?;
    }
}

// ------------------------------------------- the model's own checks, by hand

/// The sequence behind the slow-trial defect, written out: a trial slower than
/// `recovery` but within its lease is not replaced, and its failure reopens.
#[test]
fn slow_trial_within_its_lease_is_neither_replaced_nor_ignored() {
    let cfg = Cfg {
        recovery: 1_000 * MS,
        max_recovery: None,
        trial_calls: 1,
        success_threshold: 1,
        lease: Some(10_000 * MS + HALF_MS),
        threshold: 1,
        within: false,
        failure_rate: None,
        slow: None,
        window: 1,
        min_calls: 1,
    };
    let ops = [
        Op::Acquire,
        Op::Resolve(0, How::Failure),
        Op::Advance(1_000),
        Op::Acquire,
        Op::Advance(1_000),
        Op::Acquire,
        Op::Advance(3_000),
        Op::Resolve(0, How::Failure),
    ];
    run(&cfg, &ops).unwrap();
}

fn one_trial_cfg(trial_calls: u32) -> Cfg {
    Cfg {
        recovery: 1_000 * MS,
        max_recovery: None,
        trial_calls,
        success_threshold: 1,
        lease: Some(2_000 * MS + HALF_MS),
        threshold: 1,
        within: false,
        failure_rate: None,
        slow: None,
        window: 1,
        min_calls: 1,
    }
}

/// A trial held past its lease is presumed lost and a new round starts; its late
/// failure still reopens the breaker, its late success does not close it.
#[test]
fn late_failure_of_an_earlier_round_reopens() {
    for (trial_calls, how, state) in [
        (1, How::Failure, State::Open),
        (2, How::Failure, State::Open),
        (1, How::Success, State::HalfOpen),
        (1, How::Neutral, State::HalfOpen),
    ] {
        let mut ops = vec![
            Op::Acquire,
            Op::Resolve(0, How::Failure),
            Op::Advance(1_000),
        ];
        ops.extend((0..trial_calls).map(|_| Op::Acquire));
        // Past the lease of every trial: the next caller starts a new round.
        ops.extend([Op::Advance(3_000), Op::Acquire, Op::Resolve(0, how)]);
        run(&one_trial_cfg(trial_calls), &ops).unwrap();
        let clock = ManualClock::new();
        let b = one_trial_cfg(trial_calls).build(&clock);
        let _ = b.call(|| Err::<(), _>("down"));
        clock.advance(Duration::from_secs(1));
        let old = b.acquire().unwrap();
        let _others: Vec<_> = (1..trial_calls).map(|_| b.acquire().unwrap()).collect();
        clock.advance(Duration::from_secs(3));
        let _new = b.acquire().expect("every trial is past its lease");
        old.record(match how {
            How::Success => Outcome::Success,
            How::Failure => Outcome::Failure,
            How::Neutral | How::Drop => Outcome::Neutral,
        });
        assert_eq!(b.state(), state, "{trial_calls} trial(s), late {how:?}");
    }
}

/// Hundreds of lost rounds, then a very late outcome of one of the first
/// trials: the breaker and the model agree on every step, across the 256th
/// round (where the word's round number would start again) and past it.
#[test]
fn late_outcomes_after_hundreds_of_lost_rounds() {
    for trial_calls in [1, 2] {
        for rounds in [255usize, 256, 257, 300, 520] {
            for how in [How::Success, How::Failure, How::Neutral, How::Drop] {
                let mut ops = vec![
                    Op::Acquire,
                    Op::Resolve(0, How::Failure),
                    Op::Advance(1_000),
                ];
                for _ in 0..rounds {
                    ops.extend((0..trial_calls).map(|_| Op::Acquire));
                    // Past the lease: the next acquire starts a new round.
                    ops.push(Op::Advance(3_000));
                }
                ops.extend([Op::Acquire, Op::Acquire, Op::Snapshot]);
                // The pool holds the trials in admission order: the first
                // one is the oldest.
                ops.extend([Op::Resolve(0, how), Op::Snapshot, Op::Acquire, Op::State]);
                run(&one_trial_cfg(trial_calls), &ops).unwrap_or_else(|e| {
                    panic!("{trial_calls} trial(s), {rounds} lost rounds, late {how:?}: {e}")
                });
            }
        }
    }
}

/// Trials that are never resolved (leaked) cannot wedge the breaker: once every
/// slot is held past its lease, a new round of trials begins.
#[test]
fn leaked_trials_expire_after_their_lease() {
    for trial_calls in 1..=3 {
        let clock = ManualClock::new();
        let b = one_trial_cfg(trial_calls).build(&clock);
        let _ = b.call(|| Err::<(), _>("down"));
        clock.advance(Duration::from_secs(1));
        for _ in 0..trial_calls {
            std::mem::forget(b.acquire().expect("a trial"));
        }
        clock.advance(Duration::from_secs(2));
        assert!(b.acquire().is_err(), "within the lease");
        clock.advance(Duration::from_millis(1));
        b.acquire()
            .expect("past the lease")
            .record(failfast_runtime::Outcome::Success);
        assert_eq!(b.state(), State::Closed);
    }
}

/// With jitter the model checks the range only: each open period lasts its
/// nominal length (`recovery × 2^level`, capped at `max_recovery`) spread by at
/// most ±jitter, and `retry_after` says exactly when the trial is admitted.
#[test]
fn jittered_open_periods_stay_in_range() {
    const JITTER: f64 = 0.3;
    let recovery = Duration::from_millis(100);
    let max = Duration::from_millis(800);
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .threshold(1)
        .recovery(recovery)
        .max_recovery(max)
        .jitter(JITTER)
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..50 {
        b.set_mode(Mode::Normal);
        // The first open, then reopened by failed trials up to the cap.
        let _ = b.call(|| Err::<(), _>("down"));
        for level in 0..5 {
            let nominal = (recovery * (1 << level)).min(max);
            let retry = b.snapshot().retry_after.expect("open with a deadline");
            assert!(
                retry >= nominal.mul_f64(1.0 - JITTER) && retry <= nominal.mul_f64(1.0 + JITTER),
                "level {level}: open for {retry:?}, nominal {nominal:?} ± {JITTER}"
            );
            seen.push(retry.as_nanos() * 1000 / nominal.as_nanos());
            clock.advance(retry - Duration::from_nanos(1));
            assert!(b.acquire().is_err(), "1 ns before retry_after");
            clock.advance(Duration::from_nanos(1));
            let trial = b.acquire().expect("a trial at retry_after");
            assert!(trial.is_trial());
            trial.record(failfast_runtime::Outcome::Failure);
        }
    }
    seen.sort_unstable();
    assert!(
        seen[seen.len() - 1] - seen[0] > 200,
        "250 jittered periods should spread over more than ±10%: {:?}..{:?} per mille",
        seen[0],
        seen[seen.len() - 1]
    );
}
