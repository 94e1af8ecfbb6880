//! An adaptive concurrency limit (`Builder::adaptive_concurrency`): at most
//! `limit` closed calls at once, the limit moved between the configured
//! least and most places by the latency of the calls it admits, and cut by
//! their counted failures.
//!
//! A gradient on latency, of the Vegas family (Netflix's
//! `concurrency-limits`, Envoy's adaptive concurrency), with the need read
//! by Little's law:
//!
//! - **Samples.** A sample is a closed call that held a place and ended in
//!   a success: its time from admission (from its place, after a
//!   bulkhead's line) to its outcome. A refusal, a neutral outcome (a call
//!   dropped unfinished included), a failure and a half-open trial are
//!   none.
//! - **Windows.** Samples are summed in a window, which the first sample
//!   to find it over closes: once it is at least `2 × baseline` long (and
//!   10 ms) and holds 8 samples, or at least 1 s long (and `2 ×
//!   baseline`) and holds one, or holds 65536. Its average latency is
//!   weighed against the baseline.
//! - **Growth.** A window whose average is at most `1.5 × baseline`, or at
//!   most `2 ×` when it does not look like a queue, raises the limit by
//!   `(most − least) × t / 20 s`, `t` the window's length (5 s at most): 20 s of
//!   such windows bring it from its least to its most, at any rate of calls (one a
//!   second is enough) and however few places are in use, so that a burst
//!   after an outage is not refused.
//! - **Cut.** A window looks like a queue when its average is over `1.5 ×
//!   baseline` with more than half the limit in use on average (`samples ×
//!   latency / t`, Little's law), or over `2 × baseline` with a call or more
//!   in flight; never with less than one (the calls waited for none of ours),
//!   nor before 4 windows are learnt. The second such window in a row is a
//!   queue (one may be noise: 8 samples of a latency that varies as much as
//!   its mean are over `1.5 ×` it about one time in twelve). The limit then
//!   falls toward what the window's throughput needs without a queue, by
//!   Little's law `need = throughput × baseline`, the throughput being
//!   `samples / t` or `taken / latency` (the places taken over the window's
//!   average), the higher: to `1.5 × need` once a window of the current 10 s
//!   period was clean (at most `9/8 × baseline`), which keeps the
//!   dependency's workers busy through the noise; else to `need`, which
//!   drains the queue. By half at most per window, never below `least`.
//! - **Baseline.** The latency without a queue of ours: the mean of the first 16
//!   windows learnt, then moved by `1/16` of the distance to each window learnt
//!   (an average over twice the baseline counts as twice it). A window is learnt
//!   unless it looks like a queue or the limit refused a call while it was open
//!   (a queue kept at the limit would become the baseline, and the limit would
//!   drift upward under overload), and after the first 16 unless it is over `1.5
//!   × baseline` (the onset of a queue, before it fills half the limit, would
//!   carry the baseline up with it); one with less than a call in flight always
//!   is, so that a baseline learnt too low comes back even at a limit of one
//!   place. A mean, not a least: the least of many windows' averages sits far
//!   under the mean of a dependency whose latency varies (at half of it, with
//!   exponential service times), and every window would then look like a queue. A
//!   dependency slower for good shows as 8 windows in a row over `1.5 × baseline`
//!   while the limit is at or under the need (or over `2 ×` with less than a call
//!   in flight): the least of their averages becomes the baseline.
//! - **Failures.** A counted failure (a timeout included) cuts the limit
//!   by a tenth at once (of its whole places, rounded down), down to
//!   `least`.
//!
//! The places taken, the limit, the window and the baseline are a few
//! atomics on a line of their own, made on the first call: a call takes a
//! place with a compare-and-swap and gives it back with a subtraction, a
//! sample is one addition, and the sample that closes a window (one every
//! 10 ms at most) works the limit out; no lock anywhere. Every permit of a
//! closed call holds a place, and every path that resolves one (an outcome,
//! a drop, a refusal by a bulkhead, a time limit) gives it back once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::*;
use crate::core::bound::Bound;
use crate::core::kept::Read;
use crate::core::totals::{REJECTED, WOULD_REJECT};

/// The limit is kept in 1/65536 places (65535 places fit a `u32`); its
/// whole part is in force.
const FRACTION: u32 = 16;
/// A window at most `(1 + 1/2) × baseline` is at its baseline.
const TOLERANCE_SHIFT: u32 = 1;
/// A window at most `(1 + 1/8) × baseline` is clean: no queue.
const CLEAN_SHIFT: u32 = 3;
/// A cut leaves `1/2` of the need over it, once a window of the period
/// was clean.
const HEADROOM_SHIFT: u32 = 1;
/// From the least places to the most in this much time of windows at
/// their baseline.
const REGROWTH: u64 = 20_000_000_000;
/// A window counts toward regrowth for this long at most.
const STEP: u64 = 5_000_000_000;
/// The shortest window.
const SHORTEST: u64 = 10_000_000;
/// A window this long closes with one sample.
const LONGEST: u64 = 1_000_000_000;
/// Samples a window shorter than `LONGEST` needs to close.
const SAMPLES: u64 = 8;
/// Windows over the baseline in a row that replace it.
const STREAK: u64 = 8;
/// A window of this period clean leaves headroom over the need in a cut.
const PERIOD: u64 = 10_000_000_000;
/// The baseline is the mean of this many windows' averages at first, then
/// moved by this fraction of its distance to each.
const LEARNING: u64 = 16;
/// Windows learnt before one can look like a queue.
const WARM: u64 = 4;
/// A window's samples: their count above `COUNT_SHIFT`, the sum of their
/// latencies below, in units of 64 ns, each at most `SAMPLE_CAP` units.
const COUNT_SHIFT: u32 = 44;
const UNIT_SHIFT: u32 = 6;
const SAMPLE_CAP: u64 = (1 << 30) - 1;
/// The count's bits (a few more than `FULL` needs, for samples added
/// while the window closes).
const COUNT_MASK: u64 = (1 << 19) - 1;
/// Set in a window in which a call was refused (or, observe-only, would
/// have been) for want of a place: the limit held calls back.
const REFUSED: u64 = 1 << 63;
/// A window this full closes at once, whatever its length.
const FULL: u64 = 1 << 16;

/// The places taken, the limit in force and what moves it, on a line of
/// their own.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Places {
    taken: AtomicU32,
    /// In 1/65536 places.
    limit: AtomicU32,
    /// This window's samples (`COUNT_SHIFT`).
    window: AtomicU64,
    /// When this window opened, on the breaker's clock.
    opened: AtomicU64,
    /// `Memory`, written by the sample that closes a window.
    baseline: AtomicU64,
    streak: AtomicU64,
    clean: AtomicU64,
    over: AtomicU64,
    learnt: AtomicU64,
}

/// A breaker's places, made on the first call that needs them; the
/// adaptive range in force; the bulkhead in front of it.
#[derive(Debug)]
pub(crate) struct Limit {
    places: OnceLock<Box<Places>>,
    /// The adaptive range in force, as `min << 16 | max`, once changed at
    /// run time; 0: as declared.
    range: AtomicU32,
    /// The bulkhead holding a fixed limit (`max_concurrent = N`), attached
    /// by the registry when it lists the declared breakers (a keyed
    /// family's member's, when the member is made).
    bound: OnceLock<std::sync::Arc<dyn Bound>>,
}

impl Limit {
    pub(crate) const fn new() -> Self {
        Self {
            places: OnceLock::new(),
            range: AtomicU32::new(0),
            bound: OnceLock::new(),
        }
    }
}

/// The concurrency settings of a `Config` about to be published.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    adaptive: Option<(u32, u32)>,
    bulkhead: u32,
    wait: Duration,
}

impl Limits {
    pub(super) fn of(config: &Config) -> Self {
        Self {
            adaptive: config.adaptive_range(),
            bulkhead: config.bulkhead,
            wait: config.max_wait(),
        }
    }
}

const STREAK_SHIFT: u32 = 56;
const STREAK_LEAST: u64 = (1 << STREAK_SHIFT) - 1;

/// `places` in the fixed point the limit is kept in.
fn fixed(places: u32) -> u32 {
    places << FRACTION
}

/// The whole places of a limit kept in fixed point.
fn whole(limit: u32) -> u32 {
    limit >> FRACTION
}

/// What the limit is moved by, besides the window being filled: the
/// baseline, the streak of windows over it (`STREAK_SHIFT`), and the
/// period in which a window was last clean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Memory {
    /// The latency without a queue of ours: a moving average of the
    /// lightly used windows' averages; 0 before the first window.
    baseline: u64,
    streak: u64,
    /// The period of `PERIOD` (plus one) in which a window was last seen
    /// clean: at most `9/8 × baseline`, no queue; 0: none yet.
    clean: u64,
    /// 1 if the last window looked like a queue: a second in a row cuts.
    over: u64,
    /// Windows learnt, up to `LEARNING`.
    learnt: u64,
}

impl Memory {
    /// `average` taken into the baseline: the mean of the first
    /// `LEARNING` windows learnt, then moved by `1/LEARNING` of its
    /// distance by each, an average over twice the baseline counting as
    /// twice it.
    fn learn(self, average: u64) -> Self {
        let learnt = (self.learnt + 1).min(LEARNING);
        let baseline = match self.baseline {
            0 => average,
            b => {
                let average = average.min(b.saturating_mul(2));
                (b * (learnt - 1) + average) / learnt
            }
        };
        Self {
            baseline: baseline.max(1),
            learnt,
            ..self
        }
    }
}

/// A window as it closes.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// When, on the breaker's clock.
    now: u64,
    /// How long it was open.
    length: u64,
    samples: u64,
    /// The samples' average latency.
    average: u64,
    /// Places taken as it closes, the closing call's included.
    taken: u32,
    /// A call was refused for want of a place while it was open.
    refused: bool,
}

/// What `window` makes of `limit` (fixed point) and `memory`: the new
/// limit and memory.
fn adapt((least, most): (u32, u32), limit: u32, memory: Memory, window: Window) -> (u32, Memory) {
    let Window {
        now,
        length,
        samples,
        average,
        taken,
        refused,
    } = window;
    // Calls admitted above the limit are still running.
    let draining = taken > whole(limit);
    let grow = |limit: u32| {
        let range = u64::from(most - least) << FRACTION;
        let step = range.saturating_mul(length.min(STEP)) / REGROWTH;
        let raised = u64::from(limit).saturating_add(step.max(1));
        u32::try_from(raised.min(u64::from(fixed(most)))).unwrap_or(fixed(most))
    };
    let period = now / PERIOD;
    let baseline = memory.baseline;
    if baseline == 0 {
        // The first window (a memory without a baseline is a fresh one).
        let memory = Memory {
            clean: period + 1,
            ..memory.learn(average)
        };
        return (grow(limit), memory);
    }
    // Places in use over the window, on average (Little's law).
    let in_use =
        (u128::from(samples) << FRACTION) * u128::from(average) / u128::from(length.max(1));
    // At most half the limit in use: the limit is not what holds the calls
    // back, and a window up to twice the baseline is a slow moment of the
    // dependency's (or a queue's onset, cut once the places are in use).
    let light = in_use * 2 <= u128::from(limit);
    // Less than a call in flight on average: the calls wait for none of
    // ours, however slow.
    let alone = in_use <= u128::from(fixed(1));
    let tolerated = baseline.saturating_add(baseline >> TOLERANCE_SHIFT);
    let twice = baseline.saturating_mul(2);
    let queue =
        memory.learnt >= WARM && average > tolerated && !alone && (!light || average > twice);
    // The baseline learns from the windows the limit did not hold back
    // and that show no queue of ours, not from those in which it refused
    // calls (a queue kept at the limit would be learnt as the latency
    // without one, and the limit would drift upward), and once settled not
    // from one over the tolerance (a queue's onset, before it fills half
    // the limit, would carry it up); but always from a window with less
    // than a call in flight, which waited for none of ours (so that a
    // baseline learnt too low comes back up even at a limit of one place).
    let settled = memory.learnt >= LEARNING;
    let learnt = if alone || !(refused || queue || settled && average > tolerated) {
        memory.learn(average)
    } else {
        memory
    };
    if average <= tolerated {
        let clean = if average <= baseline.saturating_add(baseline >> CLEAN_SHIFT) {
            period + 1
        } else {
            memory.clean
        };
        let memory = Memory {
            streak: 0,
            clean,
            over: 0,
            ..learnt
        };
        return (grow(limit), memory);
    }
    if !queue && average <= twice {
        // No queue of ours (lightly used, less than a call in flight, or
        // the baseline still being learnt) and up to twice the baseline:
        // the room stays for a burst, and grows.
        let memory = Memory {
            streak: 0,
            over: 0,
            ..learnt
        };
        return (grow(limit), memory);
    }
    if queue && memory.over == 0 {
        // One window over the baseline may be noise: a second in a row is
        // a queue.
        return (limit, Memory { over: 1, ..learnt });
    }
    // A queue: the limit falls to what this window's throughput needs
    // without one, by Little's law: the throughput (`samples / length`, or
    // `taken / average`, the higher) times `baseline`.
    let by_samples =
        (u128::from(samples) << FRACTION) * u128::from(baseline) / u128::from(length.max(1));
    let by_taken = (u128::from(taken) << FRACTION) * u128::from(baseline) / u128::from(average);
    let needed = u32::try_from(by_samples.max(by_taken)).unwrap_or(u32::MAX);
    // With half as much again, for the noise of latency and throughput
    // and to keep the workers busy, once a window of this period was
    // clean; else to the need itself, which drains the queue, so that the
    // next windows are clean again.
    let room = if memory.clean == period + 1 {
        needed.saturating_add(needed >> HEADROOM_SHIFT)
    } else {
        needed
    };
    let cut = if queue {
        room.max(limit / 2).max(fixed(least)).min(limit)
    } else {
        // Over twice the baseline with no queue of ours (less than a call
        // in flight, or the baseline still being learnt): not ours to cut.
        limit
    };
    if draining {
        return (cut, learnt);
    }
    if queue && limit > needed.max(fixed(least)) {
        // Over the need: cutting it drains the queue.
        return (
            cut,
            Memory {
                streak: 0,
                ..learnt
            },
        );
    }
    // No queue of ours, or at or under the need, and not draining, yet
    // over the baseline.
    let (count, lowest) = (memory.streak >> STREAK_SHIFT, memory.streak & STREAK_LEAST);
    let lowest = if count == 0 {
        average
    } else {
        lowest.min(average)
    };
    if count + 1 >= STREAK {
        // Slower for good: the least of these averages is the baseline.
        let memory = Memory {
            baseline: lowest.max(1),
            streak: 0,
            clean: 0,
            over: 0,
            learnt: LEARNING,
        };
        return (cut, memory);
    }
    let streak = ((count + 1) << STREAK_SHIFT) | lowest.min(STREAK_LEAST);
    (cut, Memory { streak, ..learnt })
}

impl Places {
    fn memory(&self) -> Memory {
        Memory {
            baseline: self.baseline.load(Ordering::Relaxed),
            streak: self.streak.load(Ordering::Relaxed),
            clean: self.clean.load(Ordering::Relaxed),
            over: self.over.load(Ordering::Relaxed),
            learnt: self.learnt.load(Ordering::Relaxed),
        }
    }

    fn remember(&self, memory: Memory) {
        self.baseline.store(memory.baseline, Ordering::Relaxed);
        self.streak.store(memory.streak, Ordering::Relaxed);
        self.clean.store(memory.clean, Ordering::Relaxed);
        self.over.store(memory.over, Ordering::Relaxed);
        self.learnt.store(memory.learnt, Ordering::Relaxed);
    }
}

impl Breaker {
    /// The adaptive range in force, if the breaker has one: as changed at
    /// run time, else as declared.
    fn range(&self) -> Option<(u32, u32)> {
        let declared = self.config.adaptive_range()?;
        match self.limit.range.load(Ordering::Relaxed) {
            0 => Some(declared),
            range => Some((range >> 16, range & 0xFFFF)),
        }
    }

    /// Attaches the bulkhead that holds this breaker's fixed limit, and
    /// tells it the limit and wait in force; from now on it is told each
    /// change. Once: a second bulkhead is not attached.
    pub(crate) fn bound_by(&self, bound: std::sync::Arc<dyn Bound>) {
        // Under the right to publish: no change is published between the
        // settings read here and the bulkhead being told them.
        let tuning = self.tuning.publisher();
        if self.limit.bound.set(bound).is_ok() {
            let current = tuning.latest().unwrap_or(Read::Borrowed(&self.config));
            if let Some(bound) = self.limit.bound.get() {
                bound.bound(current.bulkhead, current.max_wait());
            }
        }
    }

    /// The concurrency settings just published, under the right to
    /// publish: the bulkhead in front is told its limit and wait, and an
    /// adaptive limit is brought within its range (to the range's most if
    /// it was at the old most). Calls running keep their places; the limit
    /// admits none while as many as it allows run.
    pub(super) fn limits_changed(&self, limits: Limits) {
        if let Some(bound) = self.limit.bound.get() {
            bound.bound(limits.bulkhead, limits.wait);
        }
        let (Some(before), Some((least, most))) = (self.range(), limits.adaptive) else {
            return;
        };
        if before == (least, most) {
            return;
        }
        self.limit
            .range
            .store(least << 16 | most, Ordering::Relaxed);
        let Some(places) = self.limit.places.get() else {
            return;
        };
        let old_most = before.1;
        let within = |limit: u32| {
            let whole = whole(limit);
            Some(if whole >= old_most {
                fixed(most)
            } else {
                fixed(whole.clamp(least, most))
            })
        };
        let old = places
            .limit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, within)
            .unwrap_or_else(|limit| limit);
        let new = within(old).unwrap_or(old);
        if (whole(old) < old_most) != (whole(new) < most) {
            self.limit_changed();
        }
    }

    fn places(&self, most: u32) -> &Places {
        self.limit.places.get_or_init(|| {
            Box::new(Places {
                taken: AtomicU32::new(0),
                limit: AtomicU32::new(fixed(most)),
                window: AtomicU64::new(0),
                opened: AtomicU64::new(self.clock.now()),
                baseline: AtomicU64::new(0),
                streak: AtomicU64::new(0),
                clean: AtomicU64::new(0),
                over: AtomicU64::new(0),
                learnt: AtomicU64::new(0),
            })
        })
    }

    /// Takes a place for a closed call, if one is free. Observe-only, a
    /// call that finds none takes one all the same and is counted as
    /// `would_reject`.
    #[cold]
    #[inline(never)]
    pub(super) fn take_place(&self, mode: Mode) -> Result<(), Rejected> {
        let Some((_, most)) = self.range() else {
            return Ok(());
        };
        let places = self.places(most);
        let limit = whole(places.limit.load(Ordering::Relaxed));
        let mut taken = places.taken.load(Ordering::Relaxed);
        while taken < limit {
            match places.taken.compare_exchange_weak(
                taken,
                taken + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => taken = now,
            }
        }
        places.window.fetch_or(REFUSED, Ordering::Relaxed);
        if mode == Mode::ObserveOnly {
            self.totals.add(WOULD_REJECT);
            places.taken.fetch_add(1, Ordering::Acquire);
            return Ok(());
        }
        self.totals.add(REJECTED);
        Err(Rejected::concurrency_limit(
            self.carried_name(),
            State::Closed,
        ))
    }

    /// A permit admitted under `admitted` ended with `outcome` without
    /// being timed (refused by a bulkhead): its place (a closed call's) is
    /// given back, and a failure cuts the limit.
    #[inline]
    pub(super) fn give_place(&self, admitted: Admitted, outcome: Outcome) {
        if admitted.placed() && admitted.closed() {
            self.place_given(None, outcome);
        }
    }

    /// A permit admitted under `admitted` at `started` (the breaker's
    /// clock: a breaker with an adaptive limit times its calls) ended with
    /// `outcome`: its place is given back, and the limit moves.
    #[inline]
    pub(super) fn give_timed_place(&self, admitted: Admitted, started: u64, outcome: Outcome) {
        if admitted.placed() && admitted.closed() {
            self.place_given(Some(started), outcome);
        }
    }

    #[cold]
    #[inline(never)]
    fn place_given(&self, started: Option<u64>, outcome: Outcome) {
        let Some((least, most)) = self.range() else {
            return;
        };
        let places = self.places(most);
        places.taken.fetch_sub(1, Ordering::Release);
        match (outcome, started) {
            (Outcome::Failure, _) => {
                let cut = |limit: u32| Some(fixed((whole(limit) * 9 / 10).max(least)));
                let before = places
                    .limit
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, cut)
                    .unwrap_or_else(|limit| limit);
                if whole(before) == most && least < most {
                    self.limit_changed();
                }
            }
            (Outcome::Success, Some(started)) => self.sample(places, (least, most), started),
            _ => {}
        }
    }

    /// A success that took from `started` until now: one sample, and the
    /// window closed if it is over.
    fn sample(&self, places: &Places, range: (u32, u32), started: u64) {
        let now = self.clock.now();
        let units = (now.saturating_sub(started) >> UNIT_SHIFT).min(SAMPLE_CAP);
        let before = places
            .window
            .fetch_add((1 << COUNT_SHIFT) | units, Ordering::Relaxed);
        let samples = ((before >> COUNT_SHIFT) & COUNT_MASK) + 1;
        let opened = places.opened.load(Ordering::Relaxed);
        let length = now.saturating_sub(opened);
        let memory = places.memory();
        let shortest = memory.baseline.saturating_mul(2).max(SHORTEST);
        let over = (length >= shortest && samples >= SAMPLES)
            || length >= shortest.max(LONGEST)
            || samples >= FULL;
        // One sample closes it: the one that moves its opening on.
        if !over
            || places
                .opened
                .compare_exchange(opened, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let window = places.window.swap(0, Ordering::Relaxed);
        let samples = (window >> COUNT_SHIFT) & COUNT_MASK;
        if samples == 0 {
            return;
        }
        let average = ((window & ((1 << COUNT_SHIFT) - 1)) << UNIT_SHIFT) / samples;
        let limit = places.limit.load(Ordering::Relaxed);
        let window = Window {
            now,
            length,
            samples,
            average,
            taken: places.taken.load(Ordering::Relaxed) + 1,
            refused: window & REFUSED != 0,
        };
        let (next, memory) = adapt(range, limit, memory, window);
        places.remember(memory);
        // A failure may have cut it meanwhile: this window's word is not
        // put over that cut.
        let before = places
            .limit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(if now == limit { next } else { now.min(next) })
            })
            .unwrap_or_else(|limit| limit);
        let after = if before == limit {
            next
        } else {
            before.min(next)
        };
        let most = range.1;
        if range.0 < most && (whole(before) == most) != (whole(after) == most) {
            self.limit_changed();
        }
    }

    /// The adaptive limit in force, if the breaker has one.
    pub(crate) fn concurrency_limit(&self) -> Option<u32> {
        let (_, most) = self.range()?;
        Some(whole(self.places(most).limit.load(Ordering::Relaxed)))
    }

    /// The adaptive limit in force, 0 without one (for events).
    pub(super) fn limit_in_force(&self) -> u32 {
        self.concurrency_limit().unwrap_or(0)
    }

    /// Whether the adaptive limit is below its most places now.
    pub(super) fn limit_lowered(&self) -> bool {
        self.range()
            .is_some_and(|(_, most)| whole(self.places(most).limit.load(Ordering::Relaxed)) < most)
    }

    /// Back to the most places, on a reset, measuring afresh.
    pub(super) fn restore_limit(&self) {
        let Some((_, most)) = self.range() else {
            return;
        };
        let places = self.places(most);
        places.remember(Memory::default());
        places.window.store(0, Ordering::Relaxed);
        places.opened.store(self.clock.now(), Ordering::Relaxed);
        if whole(places.limit.swap(fixed(most), Ordering::Relaxed)) != most {
            self.limit_changed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn places(limit: u32) -> f64 {
        f64::from(limit) / f64::from(fixed(1))
    }

    /// A memory whose baseline is `baseline`, after a window that looked
    /// like a queue (so that one more is a second in a row).
    fn knowing(baseline: u64, _now: u64) -> Memory {
        Memory {
            baseline,
            over: 1,
            learnt: LEARNING,
            ..Memory::default()
        }
    }

    fn window(now: u64, length: u64, samples: u64, average: u64, taken: u32) -> Window {
        Window {
            now,
            length,
            samples,
            average,
            taken,
            refused: false,
        }
    }

    #[test]
    fn places_are_kept_in_65536ths_and_the_whole_part_is_in_force() {
        assert_eq!(fixed(3), 3 << 16);
        assert_eq!(whole(fixed(3) + 65_535), 3);
        assert_eq!(whole(fixed(65_535)), 65_535);
    }

    #[test]
    fn the_baseline_is_the_mean_of_the_first_16_windows_then_moves_a_sixteenth_toward_each() {
        let m = Memory::default();
        assert_eq!(m.baseline, 0);
        let m = m.learn(32 * MS);
        assert_eq!(
            (m.baseline, m.learnt),
            (32 * MS, 1),
            "the first is the baseline"
        );
        let m = m.learn(16 * MS);
        assert_eq!((m.baseline, m.learnt), (24 * MS, 2), "the mean of two");
        let m = m.learn(36 * MS);
        assert_eq!(m.baseline, 28 * MS, "of three");
        // An average over twice the baseline counts as twice it.
        assert_eq!(m.learn(56 * MS).baseline, m.learn(u64::MAX / 2).baseline);
        assert_eq!(m.learn(56 * MS).baseline, 35 * MS);
        // After 16, a sixteenth of the distance each.
        let m = knowing(32 * MS, 0);
        assert_eq!(m.learn(16 * MS).baseline, 31 * MS, "down by a sixteenth");
        assert_eq!(m.learn(48 * MS).baseline, 33 * MS, "up by a sixteenth");
        assert_eq!(m.learn(48 * MS).learnt, LEARNING);
        assert_eq!(Memory::default().learn(0).baseline, 1, "never 0 once seen");
        assert_eq!(knowing(1, 0).learn(0).baseline, 1);
        // Noise around a mean is learnt as the mean, not its least.
        let mut m = knowing(10 * MS, 0);
        for i in 0..1_000u64 {
            m = m.learn(if i % 2 == 0 { 70 * MS } else { 130 * MS });
        }
        assert!((95 * MS..=105 * MS).contains(&m.baseline), "{}", m.baseline);
    }

    #[test]
    fn no_window_looks_like_a_queue_before_four_are_learnt() {
        let queue = window(S, 100 * MS, 40, 20 * MS, 6);
        let mut m = Memory::default().learn(10 * MS);
        for learnt in 1..WARM {
            assert_eq!(m.learnt, learnt);
            let (limit, _) = adapt((1, 64), fixed(6), Memory { over: 1, ..m }, queue);
            assert!(limit >= fixed(6), "not cut");
            m = m.learn(10 * MS);
        }
        let (limit, _) = adapt((1, 64), fixed(6), Memory { over: 1, ..m }, queue);
        assert_eq!(limit, fixed(4), "cut");
    }

    #[test]
    fn a_window_at_its_baseline_raises_the_limit_by_the_range_over_20_s() {
        let m = knowing(10 * MS, 0);
        // 1..=21: 20 places in 20 s, one a second of window.
        let (limit, after) = adapt((1, 21), fixed(5), m, window(S, S, 8, 15 * MS, 1));
        assert_eq!(limit, fixed(6), "{}", places(limit));
        assert_eq!(after.streak, 0);
        // A window counts for 5 s at most; never past the most places.
        let (limit, _) = adapt((1, 21), fixed(5), m, window(S, 60 * S, 1, 10 * MS, 1));
        assert_eq!(limit, fixed(10));
        let (limit, _) = adapt((1, 21), fixed(20), m, window(S, 5 * S, 1, 10 * MS, 1));
        assert_eq!(limit, fixed(21));
        // The least step is one 65536th.
        let (limit, _) = adapt((1, 21), fixed(5), m, window(S, 0, 8, 10 * MS, 1));
        assert_eq!(limit, fixed(5) + 1);
        // The first window is the baseline, and grows the limit.
        let (limit, first) = adapt(
            (1, 21),
            fixed(5),
            Memory::default(),
            window(S, S, 8, 80 * MS, 1),
        );
        assert_eq!((limit, first.baseline), (fixed(6), 80 * MS));
        assert_eq!((first.clean, first.learnt), (1, 1), "clean, in period 0");
    }

    #[test]
    fn one_and_a_half_times_the_baseline_is_still_at_it_and_a_nanosecond_more_is_a_queue() {
        let m = knowing(10 * MS, 0);
        let grows = |average| {
            adapt((1, 21), fixed(10), m, window(S, 100 * MS, 100, average, 10)).0 > fixed(10)
        };
        assert!(grows(15 * MS));
        assert!(!grows(15 * MS + 1));
        // At it, and more than half the limit in use: learnt.
        let (_, at) = adapt((1, 21), fixed(10), m, window(S, 100 * MS, 100, 15 * MS, 10));
        assert_eq!(at.baseline, 10_312_500);
    }

    #[test]
    fn one_window_like_a_queue_holds_the_limit_and_a_second_in_a_row_cuts_it() {
        let fresh = Memory {
            over: 0,
            ..knowing(10 * MS, 0)
        };
        let queue = window(S, 100 * MS, 40, 20 * MS, 6);
        let (limit, first) = adapt((1, 64), fixed(6), fresh, queue);
        assert_eq!((limit, first.over), (fixed(6), 1));
        assert_eq!(first.baseline, 10 * MS, "nor learnt");
        let (limit, second) = adapt((1, 64), fixed(6), first, queue);
        assert_eq!((limit, second.over), (fixed(4), 1));
        // A window at the baseline in between: the next is a first again.
        let (_, between) = adapt(
            (1, 64),
            fixed(6),
            first,
            window(S, 100 * MS, 10, 10 * MS, 1),
        );
        assert_eq!(between.over, 0);
        // A lightly used one too.
        let (_, light) = adapt((1, 64), fixed(64), first, queue);
        assert_eq!(light.over, 0);
    }

    #[test]
    fn a_window_in_which_the_limit_refused_calls_is_not_learnt() {
        let m = knowing(10 * MS, 0);
        let at = |refused| Window {
            refused,
            ..window(S, 100 * MS, 8, 14 * MS, 1)
        };
        let (grown, learnt) = adapt((1, 64), fixed(8), m, at(false));
        assert_eq!(learnt.baseline, 10_250_000);
        let (same, held) = adapt((1, 64), fixed(8), m, at(true));
        assert_eq!(held.baseline, 10 * MS);
        assert_eq!(grown, same, "it grows all the same");
        assert!(grown > fixed(8));
    }

    #[test]
    fn a_queue_cuts_to_the_need_or_half_as_much_again_once_the_period_was_clean() {
        // Baseline 10 ms, 40 samples in 100 ms (400/s): a need of 4 places;
        // 6 taken at 20 ms, a need of 3: the higher, 4.
        let m = knowing(10 * MS, 0);
        assert_eq!(m.clean, 0);
        let queue = window(S, 100 * MS, 40, 20 * MS, 6);
        let (limit, after) = adapt((1, 64), fixed(6), m, queue);
        assert_eq!(limit, fixed(4), "{}", places(limit));
        assert_eq!(after.baseline, 10 * MS, "a queue leaves the baseline");
        // By half at most (8 places in use, over half of 14); never below the
        // least.
        assert_eq!(adapt((1, 64), fixed(14), m, queue).0, fixed(7));
        assert_eq!(adapt((5, 64), fixed(6), m, queue).0, fixed(5));
        // The need from the places taken, when it is the higher: 12 at
        // 20 ms, 6.
        let crowded = window(S, 100 * MS, 40, 20 * MS, 12);
        assert_eq!(adapt((1, 64), fixed(8), m, crowded).0, fixed(6));
        // A clean window (at most 9/8 of the baseline) in this period.
        let (_, clean) = adapt((1, 64), fixed(6), m, window(S, S, 8, 11_250_000, 1));
        assert_eq!(clean.clean, 1);
        // (It was lightly used, and learnt: the same baseline, for the sums,
        // and a window like a queue after it.)
        let clean = Memory {
            baseline: 10 * MS,
            over: 1,
            ..clean
        };
        let (_, not_clean) = adapt((1, 64), fixed(6), m, window(S, S, 8, 11_250_001, 1));
        assert_eq!(not_clean.clean, 0);
        let (limit, _) = adapt((1, 64), fixed(8), clean, queue);
        assert_eq!(limit, fixed(6), "4 and half as much again");
        // In the next period, the clean window is of the one before.
        let later = window(PERIOD + S, 100 * MS, 40, 20 * MS, 6);
        assert_eq!(adapt((1, 64), fixed(8), clean, later).0, fixed(4));
    }

    #[test]
    fn calls_admitted_above_a_cut_limit_still_cut_it_and_count_toward_no_streak() {
        let m = Memory {
            streak: (3 << STREAK_SHIFT) | (30 * MS),
            ..knowing(10 * MS, 0)
        };
        // 9 taken of a limit of 8: draining (a need of 9 × 10 / 20 = 4.5).
        let (limit, after) = adapt((1, 64), fixed(8), m, window(S, 100 * MS, 40, 20 * MS, 9));
        assert_eq!(limit, fixed(4) + fixed(1) / 2);
        assert_eq!(after.streak, m.streak);
        // Over the need: the streak starts again.
        let (_, after) = adapt((1, 64), fixed(8), m, window(S, 100 * MS, 40, 20 * MS, 8));
        assert_eq!(after.streak, 0);
        // So it does at the baseline, and lightly used.
        let (_, after) = adapt((1, 64), fixed(8), m, window(S, 100 * MS, 8, 10 * MS, 1));
        assert_eq!(after.streak, 0);
        let (_, after) = adapt((1, 64), fixed(64), m, window(S, 100 * MS, 8, 20 * MS, 1));
        assert_eq!(after.streak, 0);
    }

    #[test]
    fn eight_windows_over_it_at_the_need_make_the_least_of_them_the_baseline() {
        let mut m = knowing(10 * MS, 0);
        // At the need (10 samples of 10 ms in 100 ms: 1 place, 1 taken), 40 ms:
        // slower for good.
        let mut limit = fixed(1);
        for i in 0..7u64 {
            let average = 40 * MS + (i % 3) * MS;
            (limit, m) = adapt((1, 64), limit, m, window(S, 100 * MS, 10, average, 1));
            assert_eq!(limit, fixed(1), "held, not cut, at the need");
            assert_eq!(m.streak >> STREAK_SHIFT, i + 1);
            assert_eq!(m.streak & STREAK_LEAST, 40 * MS);
            assert_eq!(m.baseline, 10 * MS);
        }
        (limit, m) = adapt(
            (1, 64),
            limit,
            m,
            window(3 * PERIOD, 100 * MS, 10, 42 * MS, 1),
        );
        assert_eq!(limit, fixed(1));
        assert_eq!((m.baseline, m.streak, m.clean), (40 * MS, 0, 0));
        // And from it, a window at 40 ms is at the baseline again.
        let (raised, _) = adapt((1, 64), limit, m, window(3 * PERIOD, S, 10, 40 * MS, 1));
        assert!(raised > limit);
        // At the least places, the same.
        let mut m = knowing(10 * MS, 0);
        for _ in 0..8 {
            (_, m) = adapt((4, 64), fixed(4), m, window(S, 100 * MS, 10, 40 * MS, 1));
        }
        assert_eq!(m.baseline, 40 * MS);
    }

    #[test]
    fn a_slow_window_with_at_most_half_the_limit_in_use_grows_it_up_to_twice_the_baseline() {
        let m = knowing(20 * MS, 0);
        // 20 samples of 40 ms (twice the baseline) in 100 ms: 8 places in use,
        // half of 16. Not a queue of ours: it grows. Over 1.5 times the
        // baseline, it is learnt while the baseline is the first windows'
        // mean, not after (a queue's onset, before it uses half the limit,
        // would carry the baseline up with it).
        let light = window(S, 100 * MS, 20, 40 * MS, 2);
        let (limit, after) = adapt((1, 64), fixed(16), m, light);
        assert!(limit > fixed(16), "{}", places(limit));
        assert_eq!((after.streak, after.baseline), (0, 20 * MS));
        let early = Memory { learnt: 3, ..m };
        let (_, after) = adapt((1, 64), fixed(16), early, light);
        assert_eq!(after.baseline, 25 * MS, "(3 × 20 + 40) / 4");
        // One more in use: a queue, cut, and not learnt.
        let (limit, after) = adapt((1, 64), fixed(15), m, light);
        assert!(limit < fixed(15), "{}", places(limit));
        assert_eq!(after.baseline, 20 * MS);
        // Lightly used but over twice the baseline: a queue's onset, cut (by
        // half at most: the need is 4).
        let slower = window(S, 100 * MS, 20, 40 * MS + 1, 2);
        let (limit, after) = adapt((1, 64), fixed(64), m, slower);
        assert_eq!((limit, after.baseline), (fixed(32), 20 * MS));
        // With less than a call in flight (2 of 45 ms in 100 ms): none of
        // ours to wait for. Held, a streak begun, and learnt, refused
        // calls or not.
        let alone = Window {
            refused: true,
            ..window(S, 100 * MS, 2, 45 * MS, 1)
        };
        let (limit, after) = adapt((1, 64), fixed(1), m, alone);
        assert_eq!(limit, fixed(1));
        assert_eq!(after.streak >> STREAK_SHIFT, 1);
        assert_eq!(after.baseline, 21_250_000, "45 ms counted as twice 20");
        // Such windows, one after another, become the baseline.
        let mut m = m;
        for _ in 0..200 {
            (_, m) = adapt((1, 64), fixed(1), m, alone);
        }
        assert!(m.baseline > 44 * MS, "{}", m.baseline);
    }
}
