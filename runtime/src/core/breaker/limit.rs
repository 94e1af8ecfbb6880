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
//! - **Growth.** A window whose average is at most `1.5 × baseline` raises
//!   the limit by `(most − least) × t / 20 s`, `t` the window's length (5 s
//!   at most): 20 s of such windows bring it from its least to its most,
//!   whatever the rate of calls and however few places are in use.
//! - **Cut.** A window over `1.5 × baseline` is a queue: the limit falls
//!   toward what the window's throughput needs without one, by Little's
//!   law `need = throughput × baseline`, the throughput being `samples / t`
//!   or `taken / latency` (places taken over the window's average), the
//!   higher: to `1.5 × need` once a window of this 10 s period was clean
//!   (at most `9/8 × baseline`), else to `need` itself, which drains the
//!   queue so that the next windows show the latency without one again.
//!   By half at most per window, never below `least`. A window in which
//!   at most half the limit was in use on average (`samples × latency / t`,
//!   Little's law again) and whose average is at most `2 × baseline` cuts
//!   nothing: that is a stall or a slow moment, not a queue of ours (and a
//!   lightly used limit keeps its room for a burst); it counts toward the
//!   baseline.
//! - **Baseline.** The least window average of the last 10 to 20 s (two
//!   periods of 10 s, the older forgotten as a new one begins): it never
//!   follows a queue up, since a period without a clean window cuts to the
//!   need and drains it, and it ages out. A dependency slower for good
//!   (not queueing our calls) shows as 8 windows in a row over `1.5 ×
//!   baseline` while the limit is at or under the need and no call
//!   admitted above the limit still runs: the least of their averages
//!   becomes the baseline.
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
/// The baseline is the least window average of this period and the one
/// before it.
const MEMORY: u64 = 10_000_000_000;
/// A window's samples: their count above `COUNT_SHIFT`, the sum of their
/// latencies below, in units of 64 ns, each at most `SAMPLE_CAP` units.
const COUNT_SHIFT: u32 = 44;
const UNIT_SHIFT: u32 = 6;
const SAMPLE_CAP: u64 = (1 << 30) - 1;
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
    current: AtomicU64,
    previous: AtomicU64,
    period: AtomicU64,
    streak: AtomicU64,
    clean: AtomicU64,
}

/// A breaker's places, made on the first call that needs them.
#[derive(Debug)]
pub(crate) struct Limit(OnceLock<Box<Places>>);

impl Limit {
    pub(crate) const fn new() -> Self {
        Self(OnceLock::new())
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
/// least window averages of this period of `MEMORY` and of the one before
/// it (0: none), the period's number, and the streak of windows over the
/// baseline (`STREAK_SHIFT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Memory {
    current: u64,
    previous: u64,
    period: u64,
    streak: u64,
    /// The period (plus one) in which a window was last seen clean: at
    /// most `9/8 × baseline`, no queue; 0: none yet.
    clean: u64,
}

impl Memory {
    /// The latency without a queue: the least window average of the last
    /// one to two `MEMORY`s; 0 before the first window.
    fn baseline(self) -> u64 {
        match (self.current, self.previous) {
            (0, b) | (b, 0) => b,
            (a, b) => a.min(b),
        }
    }

    /// `average` of a window closed at `now` taken in.
    fn with(mut self, now: u64, average: u64) -> Self {
        let period = now / MEMORY;
        let average = average.max(1);
        if period != self.period {
            self.previous = if period == self.period + 1 {
                self.current
            } else {
                0
            };
            self.current = average;
            self.period = period;
        } else if self.current == 0 || average < self.current {
            self.current = average;
        }
        self
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
    } = window;
    // Calls admitted above the limit are still running.
    let draining = taken > whole(limit);
    let grow = |limit: u32| {
        let range = u64::from(most - least) << FRACTION;
        let step = range.saturating_mul(length.min(STEP)) / REGROWTH;
        let raised = u64::from(limit).saturating_add(step.max(1));
        u32::try_from(raised.min(u64::from(fixed(most)))).unwrap_or(fixed(most))
    };
    let baseline = memory.baseline();
    let tolerated = baseline.saturating_add(baseline >> TOLERANCE_SHIFT);
    let period = now / MEMORY;
    if baseline == 0 || average <= tolerated {
        let clean = if average <= baseline.saturating_add(baseline >> CLEAN_SHIFT) {
            period + 1
        } else {
            memory.clean
        };
        let memory = Memory {
            streak: 0,
            clean,
            ..memory.with(now, average)
        };
        return (grow(limit), memory);
    }
    // Places in use over the window, on average (Little's law): at most
    // half the limit, and a latency up to twice the baseline is not a
    // queue of ours (a stall, a slow moment of the dependency's) but the
    // onset of one. Nothing is cut, and the window counts toward the
    // baseline.
    let in_use =
        (u128::from(samples) << FRACTION) * u128::from(average) / u128::from(length.max(1));
    if in_use * 2 <= u128::from(limit) && average <= baseline.saturating_mul(2) {
        let memory = Memory {
            streak: 0,
            ..memory.with(now, average)
        };
        return (limit, memory);
    }
    // A queue: the limit falls to what this window's throughput needs
    // without one, by Little's law: the throughput (`samples / length`, or
    // `taken / average`, the higher) times `baseline`.
    let by_samples =
        (u128::from(samples) << FRACTION) * u128::from(baseline) / u128::from(length.max(1));
    let by_taken = (u128::from(taken) << FRACTION) * u128::from(baseline) / u128::from(average);
    let needed = u32::try_from(by_samples.max(by_taken)).unwrap_or(u32::MAX);
    // With half as much again, for the noise of latency and throughput
    // and to keep the workers busy, once a
    // window of this period was clean; else to the need itself, which
    // drains the queue, so that the next windows are clean again and keep
    // the baseline true (a queue kept for a whole period would be taken
    // for the latency without one).
    let room = if memory.clean == period + 1 {
        needed.saturating_add(needed >> HEADROOM_SHIFT)
    } else {
        needed
    };
    let cut = room.max(limit / 2).max(fixed(least)).min(limit);
    if draining {
        return (cut, memory);
    }
    if limit > needed.max(fixed(least)) {
        // Over the need: cutting it drains the queue.
        return (
            cut,
            Memory {
                streak: 0,
                ..memory
            },
        );
    }
    // At or under the need, and not draining, yet over the baseline.
    let (count, lowest) = (memory.streak >> STREAK_SHIFT, memory.streak & STREAK_LEAST);
    let lowest = if count == 0 {
        average
    } else {
        lowest.min(average)
    };
    if count + 1 >= STREAK {
        // Slower for good: the least of these averages is the baseline.
        let memory = Memory {
            current: lowest.max(1),
            previous: 0,
            period,
            streak: 0,
            clean: 0,
        };
        return (limit, memory);
    }
    let streak = ((count + 1) << STREAK_SHIFT) | lowest.min(STREAK_LEAST);
    (limit, Memory { streak, ..memory })
}

impl Places {
    fn memory(&self) -> Memory {
        Memory {
            current: self.current.load(Ordering::Relaxed),
            previous: self.previous.load(Ordering::Relaxed),
            period: self.period.load(Ordering::Relaxed),
            streak: self.streak.load(Ordering::Relaxed),
            clean: self.clean.load(Ordering::Relaxed),
        }
    }

    fn remember(&self, memory: Memory) {
        self.current.store(memory.current, Ordering::Relaxed);
        self.previous.store(memory.previous, Ordering::Relaxed);
        self.period.store(memory.period, Ordering::Relaxed);
        self.streak.store(memory.streak, Ordering::Relaxed);
        self.clean.store(memory.clean, Ordering::Relaxed);
    }
}

impl Breaker {
    fn places(&self, most: u32) -> &Places {
        self.limit.0.get_or_init(|| {
            Box::new(Places {
                taken: AtomicU32::new(0),
                limit: AtomicU32::new(fixed(most)),
                window: AtomicU64::new(0),
                opened: AtomicU64::new(self.clock.now()),
                current: AtomicU64::new(0),
                previous: AtomicU64::new(0),
                period: AtomicU64::new(0),
                streak: AtomicU64::new(0),
                clean: AtomicU64::new(0),
            })
        })
    }

    /// Takes a place for a closed call, if one is free. Observe-only, a
    /// call that finds none takes one all the same and is counted as
    /// `would_reject`.
    #[cold]
    #[inline(never)]
    pub(super) fn take_place(&self, mode: u64) -> Result<(), Rejected> {
        let Some((_, most)) = self.config.adaptive_range() else {
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
        if mode == MODE_DISABLED {
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
    pub(super) fn give_place(&self, admitted: u64, outcome: Outcome) {
        if admitted & PLACED != 0 && Word(admitted).tag() == TAG_CLOSED {
            self.place_given(None, outcome);
        }
    }

    /// A permit admitted under `admitted` at `started` (the breaker's
    /// clock: a breaker with an adaptive limit times its calls) ended with
    /// `outcome`: its place is given back, and the limit moves.
    #[inline]
    pub(super) fn give_timed_place(&self, admitted: u64, started: u64, outcome: Outcome) {
        if admitted & PLACED != 0 && Word(admitted).tag() == TAG_CLOSED {
            self.place_given(Some(started), outcome);
        }
    }

    #[cold]
    #[inline(never)]
    fn place_given(&self, started: Option<u64>, outcome: Outcome) {
        let Some((least, most)) = self.config.adaptive_range() else {
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
        let samples = (before >> COUNT_SHIFT) + 1;
        let opened = places.opened.load(Ordering::Relaxed);
        let length = now.saturating_sub(opened);
        let memory = places.memory();
        let shortest = memory.baseline().saturating_mul(2).max(SHORTEST);
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
        let samples = window >> COUNT_SHIFT;
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
        let (_, most) = self.config.adaptive_range()?;
        Some(whole(self.places(most).limit.load(Ordering::Relaxed)))
    }

    /// The adaptive limit in force, 0 without one (for events).
    pub(super) fn limit_in_force(&self) -> u32 {
        self.concurrency_limit().unwrap_or(0)
    }

    /// Whether the adaptive limit is below its most places now.
    pub(super) fn limit_lowered(&self) -> bool {
        self.config
            .adaptive_range()
            .is_some_and(|(_, most)| whole(self.places(most).limit.load(Ordering::Relaxed)) < most)
    }

    /// Back to the most places, on a reset, measuring afresh.
    pub(super) fn restore_limit(&self) {
        let Some((_, most)) = self.config.adaptive_range() else {
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

    /// A memory whose baseline is `baseline`, made at `now`.
    fn knowing(baseline: u64, now: u64) -> Memory {
        Memory::default().with(now, baseline)
    }

    fn window(now: u64, length: u64, samples: u64, average: u64, taken: u32) -> Window {
        Window {
            now,
            length,
            samples,
            average,
            taken,
        }
    }

    #[test]
    fn places_are_kept_in_65536ths_and_the_whole_part_is_in_force() {
        assert_eq!(fixed(3), 3 << 16);
        assert_eq!(whole(fixed(3) + 65_535), 3);
        assert_eq!(whole(fixed(65_535)), 65_535);
    }

    #[test]
    fn the_baseline_is_the_least_average_of_this_period_and_the_one_before() {
        let m = Memory::default();
        assert_eq!(m.baseline(), 0);
        let m = m.with(S, 20 * MS);
        assert_eq!((m.current, m.previous, m.period), (20 * MS, 0, 0));
        let m = m.with(2 * S, 30 * MS);
        assert_eq!(m.baseline(), 20 * MS, "a higher average leaves it");
        let m = m.with(3 * S, 15 * MS);
        assert_eq!(m.baseline(), 15 * MS, "a lower one is the baseline");
        // The next period: the least so far is the previous one's.
        let m = m.with(MEMORY + S, 25 * MS);
        assert_eq!((m.current, m.previous, m.period), (25 * MS, 15 * MS, 1));
        assert_eq!(m.baseline(), 15 * MS);
        // One more: the oldest is forgotten.
        let m = m.with(2 * MEMORY, 27 * MS);
        assert_eq!((m.current, m.previous), (27 * MS, 25 * MS));
        assert_eq!(m.baseline(), 25 * MS);
        // A period skipped: nothing before it is kept.
        let m = m.with(4 * MEMORY, 40 * MS);
        assert_eq!((m.current, m.previous, m.baseline()), (40 * MS, 0, 40 * MS));
        assert_eq!(
            Memory::default().with(0, 0).baseline(),
            1,
            "never 0 once seen"
        );
        let only_previous = Memory {
            previous: 7,
            ..Memory::default()
        };
        assert_eq!(only_previous.baseline(), 7);
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
        assert_eq!((limit, first.baseline()), (fixed(6), 80 * MS));
    }

    #[test]
    fn one_and_a_half_times_the_baseline_is_still_at_it_and_a_nanosecond_more_is_a_queue() {
        let m = knowing(10 * MS, 0);
        let grows =
            |average| adapt((1, 21), fixed(10), m, window(S, S, 100, average, 10)).0 > fixed(10);
        assert!(grows(15 * MS));
        assert!(!grows(15 * MS + 1));
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
        assert_eq!(after.baseline(), 10 * MS, "a queue leaves the baseline");
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
        let (_, not_clean) = adapt((1, 64), fixed(6), m, window(S, S, 8, 11_250_001, 1));
        assert_eq!(not_clean.clean, 0);
        let (limit, _) = adapt((1, 64), fixed(8), clean, queue);
        assert_eq!(limit, fixed(6), "4 and half as much again");
        // In the next period, the clean window is of the one before.
        let later = window(MEMORY + S, 100 * MS, 40, 20 * MS, 6);
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
            assert_eq!(m.baseline(), 10 * MS);
        }
        (limit, m) = adapt(
            (1, 64),
            limit,
            m,
            window(3 * MEMORY, 100 * MS, 10, 42 * MS, 1),
        );
        assert_eq!(limit, fixed(1));
        assert_eq!(
            (m.baseline(), m.streak, m.previous, m.period),
            (40 * MS, 0, 0, 3)
        );
        // And from it, a window at 40 ms is at the baseline again.
        let (raised, _) = adapt((1, 64), limit, m, window(3 * MEMORY, S, 10, 40 * MS, 1));
        assert!(raised > limit);
        // At the least places, the same.
        let mut m = knowing(10 * MS, 0);
        for _ in 0..8 {
            (_, m) = adapt((4, 64), fixed(4), m, window(S, 100 * MS, 10, 40 * MS, 1));
        }
        assert_eq!(m.baseline(), 40 * MS);
    }

    #[test]
    fn a_slow_window_with_at_most_half_the_limit_in_use_cuts_nothing_and_is_remembered() {
        let m = knowing(20 * MS, 0);
        // 20 samples of 40 ms (twice the baseline) in 100 ms: 8 places in use,
        // half of 16.
        let light = window(S, 100 * MS, 20, 40 * MS, 2);
        let (limit, after) = adapt((1, 64), fixed(16), m, light);
        assert_eq!((limit, after.streak), (fixed(16), 0));
        assert_eq!(after.baseline(), 20 * MS);
        // One more in use: a queue, cut.
        assert!(adapt((1, 64), fixed(15), m, light).0 < fixed(15));
        // Over twice the baseline: a queue starting, cut.
        let slower = window(S, 100 * MS, 20, 40 * MS, 2);
        let fast = knowing(20 * MS, 0);
        assert_eq!(adapt((1, 64), fixed(64), fast, slower).0, fixed(64));
        let slower = window(S, 100 * MS, 20, 40 * MS + 1, 2);
        assert!(adapt((1, 64), fixed(64), fast, slower).0 < fixed(64));
        // Two periods later, such windows are the baseline.
        let (_, after) = adapt(
            (1, 64),
            fixed(16),
            after,
            window(MEMORY, 100 * MS, 20, 40 * MS, 2),
        );
        let (_, after) = adapt(
            (1, 64),
            fixed(16),
            after,
            window(2 * MEMORY, 100 * MS, 20, 40 * MS, 2),
        );
        assert_eq!(after.baseline(), 40 * MS);
    }
}
