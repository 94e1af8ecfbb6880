//! Graded shedding (`shed`): client-side throttling after the Google SRE
//! book's "Handling Overload". While a breaker is closed, each call is
//! refused with chance
//!
//! ```text
//! p = max(0, (admitted − k × accepted) / (admitted + 1)),  at most 0.9
//! ```
//!
//! over a time window: *admitted* counts the calls let through, from the
//! moment they start (so calls hanging on a sick dependency count at once,
//! not a timeout later), less those that ended neutral; *accepted* counts
//! the calls that ended other than as a counted failure. Refused calls are
//! in neither: a refusal is no evidence about the dependency. Below
//! `min_calls` admitted calls the chance is 0, and it never passes
//! [`MAX_SHED_SHARE`]: a dependency that accepts nothing is still tried.
//!
//! With refusals counted nowhere, a dependency that serves a share `c` of
//! the load offered settles at an admitted share of `√(k·c)` (at most 1):
//! `k = 2` sheds nothing until it serves less than half, `k = 1` sheds
//! from the first failures on.
//!
//! The counts cost nothing shared per call: both are the breaker's running
//! totals (`totals` module), counted by each thread on a line of its own.
//! The window is [`TIME_BUCKETS`] *marks*: the totals as they stood when a
//! period of `window / 20` began. The calls in the window are the totals
//! now less the oldest mark of the last 20 periods. A mark is written by
//! the first call that finds its period begun: each thread looks at the
//! clock on every 16th call it admits, and on every call while the breaker
//! sheds. So a breaker called less than 16 times per thread and period
//! keeps older marks, and its window reaches further back (which only
//! counts more calls, and sheds less). The chance is worked out again at
//! each new mark and at each counted failure, and kept in one word that
//! every call reads: while it is 0 a call reads it and nothing else.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crate::core::config::TIME_BUCKETS;

/// The largest chance of refusal.
pub(crate) const MAX_SHED_SHARE: f64 = failfast_rules::MAX_SHED_SHARE;

/// How often, in calls it admits, a thread looks at the clock for a new
/// period (a power of two).
pub(crate) const LOOK_EVERY: u64 = 16;

const PERIODS: usize = TIME_BUCKETS as usize;

/// A breaker's running totals as graded shedding reads them: cumulative
/// since the breaker was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Calls admitted (counted as they start).
    pub(crate) admitted: u64,
    /// Calls that succeeded.
    pub(crate) succeeded: u64,
    /// Calls that ended neutral.
    pub(crate) neutral: u64,
}

impl Counts {
    /// The window's admitted and accepted calls, from `base` to `self`.
    pub(crate) fn since(self, base: Counts) -> Window {
        let neutral = self.neutral.saturating_sub(base.neutral);
        Window {
            admitted: self
                .admitted
                .saturating_sub(base.admitted)
                .saturating_sub(neutral),
            accepted: self.succeeded.saturating_sub(base.succeeded),
        }
    }
}

/// The calls in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    /// Admitted, neutral ones left out.
    pub(crate) admitted: u64,
    /// Ended other than as a counted failure (neutral ones left out).
    pub(crate) accepted: u64,
}

impl Window {
    /// The chance of refusal, in 2^-32: the formula, 0 below `min_calls`
    /// admitted calls, at most [`MAX_SHED_SHARE`].
    #[allow(
        clippy::cast_precision_loss, // exact below 2^53 calls
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss // clamped to [0, 0.9] first
    )]
    pub(crate) fn chance(self, k: f64, min_calls: u32) -> u32 {
        if self.admitted < u64::from(min_calls) || self.admitted == 0 {
            return 0;
        }
        let admitted = self.admitted as f64;
        let p = (admitted - k * self.accepted as f64) / (admitted + 1.0);
        (p.clamp(0.0, MAX_SHED_SHARE) * SCALE) as u32
    }
}

/// A chance of 1, in the units [`Window::chance`] gives.
pub(crate) const SCALE: f64 = 4_294_967_296.0;

/// The chance `chance` (in 2^-32) as a share, to nine decimals (the cap
/// reads 0.9, not the nearest multiple of 2^-32).
pub(crate) fn share(chance: u32) -> f64 {
    (f64::from(chance) / SCALE * 1e9).round() / 1e9
}

/// The totals when one period began. `period` is the period's number plus
/// one (0: none), written last, and cleared first while the counts change,
/// so a reader that finds the same number before and after reading the
/// counts read one mark's counts.
#[derive(Debug, Default)]
struct Mark {
    period: AtomicU64,
    admitted: AtomicU64,
    succeeded: AtomicU64,
    neutral: AtomicU64,
}

impl Mark {
    fn write(&self, period: u64, counts: Counts) {
        self.period.store(0, Relaxed);
        std::sync::atomic::fence(Release);
        self.admitted.store(counts.admitted, Relaxed);
        self.succeeded.store(counts.succeeded, Relaxed);
        self.neutral.store(counts.neutral, Relaxed);
        self.period.store(period + 1, Release);
    }

    /// The period (plus one) and its counts, unless the mark was being
    /// written meanwhile.
    fn read(&self) -> Option<(u64, Counts)> {
        let period = self.period.load(Acquire);
        if period == 0 {
            return None;
        }
        let counts = Counts {
            admitted: self.admitted.load(Relaxed),
            succeeded: self.succeeded.load(Relaxed),
            neutral: self.neutral.load(Relaxed),
        };
        std::sync::atomic::fence(Acquire);
        (self.period.load(Relaxed) == period).then_some((period, counts))
    }
}

#[derive(Debug, Default)]
struct Marks {
    /// The latest period marked, plus one.
    latest: AtomicU64,
    ring: [Mark; PERIODS],
}

/// A breaker's marks, made on the first call that needs them.
#[derive(Debug)]
pub(crate) struct Shed {
    marks: OnceLock<Box<Marks>>,
}

impl Shed {
    pub(crate) const fn new() -> Self {
        Self {
            marks: OnceLock::new(),
        }
    }

    fn marks(&self) -> &Marks {
        self.marks.get_or_init(Box::default)
    }

    /// Marks the start of `period` with `counts` if no call did yet;
    /// whether this call did. The first mark of all is of no calls: the
    /// calls before it are the window's.
    pub(crate) fn roll(&self, period: u64, counts: impl FnOnce() -> Counts) -> bool {
        let marks = self.marks();
        let latest = marks.latest.load(Relaxed);
        if latest > period
            || marks
                .latest
                .compare_exchange(latest, period + 1, Relaxed, Relaxed)
                .is_err()
        {
            return false;
        }
        let counts = if latest == 0 {
            Counts::default()
        } else {
            counts()
        };
        marks.ring[ring_index(period)].write(period, counts);
        true
    }

    /// The totals the window of `period` starts from: the oldest mark of
    /// the last 20 periods; failing that the latest older one (a breaker
    /// called too seldom to mark each period); failing that none.
    pub(crate) fn base(&self, period: u64) -> Counts {
        let oldest = (period + 1).saturating_sub(PERIODS as u64 - 1);
        // Marks of `period` and before (one being written now may be of a
        // later one); each period has one slot, so no two are equal.
        let marks = || {
            self.marks()
                .ring
                .iter()
                .filter_map(Mark::read)
                .filter(|&(marked, _)| marked <= period + 1)
        };
        marks()
            .filter(|&(marked, _)| marked >= oldest)
            .min_by_key(|&(marked, _)| marked)
            .or_else(|| marks().max_by_key(|&(marked, _)| marked))
            .map_or_else(Counts::default, |(_, counts)| counts)
    }

    /// Forgets every mark: the window starts at `period`, from `counts`.
    pub(crate) fn clear(&self, period: u64, counts: Counts) {
        let marks = self.marks();
        for mark in &marks.ring {
            mark.period.store(0, Release);
        }
        marks.ring[ring_index(period)].write(period, counts);
        marks.latest.fetch_max(period + 1, Relaxed);
    }
}

#[allow(clippy::cast_possible_truncation)] // below PERIODS
fn ring_index(period: u64) -> usize {
    (period % PERIODS as u64) as usize
}

thread_local! {
    /// This thread's draws (xorshift64*), seeded on first use.
    static DRAWS: Cell<u64> = const { Cell::new(0) };
}

/// Starts this thread's draws over from `seed`: the same seed, the same
/// draws after it (`testing::seed_shedding`). Not on the call path: the
/// state is the one [`draw`] reads anyway.
#[cfg(feature = "testing")]
pub(crate) fn seed(seed: u64) {
    // splitmix64's finalizer: neighbouring seeds start far apart, and the
    // state is never 0 (which would mean "not seeded yet").
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    DRAWS.with(|state| state.set(z | 1));
}

/// A uniform draw in 2^-32 units, from this thread's own generator.
pub(crate) fn draw() -> u32 {
    DRAWS.with(|state| {
        let mut x = state.get();
        if x == 0 {
            // The standard library's per-process random keys, over this
            // thread's own address; never 0, which xorshift keeps at 0.
            use std::hash::BuildHasher;
            x = std::collections::hash_map::RandomState::new()
                .hash_one(std::ptr::from_ref(state).addr())
                | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        #[allow(clippy::cast_possible_truncation)] // the high half
        let drawn = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
        drawn
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn window(admitted: u64, accepted: u64) -> Window {
        Window { admitted, accepted }
    }

    #[test]
    fn the_chance_is_the_formula_capped_and_waits_for_min_calls() {
        // (100 − 2 × 20) / 101
        let p = share(window(100, 20).chance(2.0, 10));
        assert!((p - 60.0 / 101.0).abs() < 1e-9, "{p}");
        assert_eq!(
            window(100, 50).chance(2.0, 10),
            0,
            "k × accepted = admitted"
        );
        assert_eq!(window(100, 100).chance(1.0, 10), 0, "all accepted");
        let p = share(window(100, 90).chance(1.0, 10));
        assert!((p - 10.0 / 101.0).abs() < 1e-9, "{p}");
        let p = share(window(100, 96).chance(1.05, 10));
        assert_eq!(p, 0.0, "100 − 100.8 < 0");
        let p = share(window(100, 80).chance(1.1, 10));
        assert!((p - 12.0 / 101.0).abs() < 1e-9, "{p}");
        // Nothing accepted: capped at nine in ten.
        let capped = window(1000, 0).chance(2.0, 10);
        assert_eq!(share(capped), MAX_SHED_SHARE);
        assert_eq!(window(9, 0).chance(2.0, 10), 0, "below min_calls");
        assert!(window(10, 0).chance(2.0, 10) > 0, "at min_calls");
        assert_eq!(window(0, 0).chance(2.0, 0), 0);
    }

    #[test]
    fn neutral_calls_leave_the_window_and_refusals_never_enter_it() {
        let base = Counts {
            admitted: 100,
            succeeded: 40,
            neutral: 10,
        };
        let now = Counts {
            admitted: 130,
            succeeded: 50,
            neutral: 15,
        };
        assert_eq!(now.since(base), window(25, 10));
        assert_eq!(base.since(now), window(0, 0), "never below zero");
    }

    #[test]
    fn the_base_is_the_oldest_mark_of_the_last_twenty_periods() {
        let shed = Shed::new();
        let at = |n: u64| Counts {
            admitted: n,
            succeeded: n,
            neutral: 0,
        };
        assert_eq!(shed.base(5), Counts::default(), "no mark: since the start");
        // A mark of a later period (being written as the base is read) is
        // not the window's.
        let later = Shed::new();
        later.clear(0, at(5));
        assert!(later.roll(30, || at(300)));
        assert_eq!(later.base(25), at(5), "period 30 is after 25");
        assert_eq!(later.base(30), at(300));
        assert!(shed.roll(2, || at(20)));
        assert_eq!(shed.base(2), Counts::default(), "the first mark is of none");
        assert!(shed.roll(3, || at(30)));
        assert!(!shed.roll(3, || at(31)), "marked once per period");
        assert!(!shed.roll(2, || at(20)), "never an earlier period");
        assert!(shed.roll(7, || at(70)));
        assert_eq!(shed.base(7), Counts::default());
        assert_eq!(shed.base(22), at(30), "period 3 is the oldest of 3..=22");
        assert_eq!(shed.base(23), at(70), "period 3 has left the window");
        // Nothing within the window: the latest older mark.
        assert_eq!(shed.base(100), at(70));
        assert!(shed.roll(30, || at(300)));
        assert_eq!(
            shed.base(30),
            at(300),
            "of 3, 7 and 30 only 30 is within 11..=30"
        );
        shed.clear(31, at(310));
        assert_eq!(shed.base(31), at(310));
        assert_eq!(shed.base(45), at(310));
        assert!(!shed.roll(31, || at(0)));
        assert!(shed.roll(32, || at(320)));
        assert_eq!(shed.base(32), at(310));
    }

    /// A million draws: their mean within four standard errors of ½, and
    /// their spread over 64 equal bins within the chi-square bound that a
    /// uniform generator exceeds once in 10,000 (63 degrees of freedom).
    #[test]
    fn draws_are_uniform() {
        const N: u32 = 1_000_000;
        let mut bins = [0u32; 64];
        let mut sum = 0.0;
        for _ in 0..N {
            let d = draw();
            sum += f64::from(d) / SCALE;
            bins[(d >> 26) as usize] += 1;
        }
        let mean = sum / f64::from(N);
        let se = (1.0 / 12.0 / f64::from(N)).sqrt();
        assert!((mean - 0.5).abs() < 4.0 * se, "mean {mean}");
        let expected = f64::from(N) / 64.0;
        let chi2: f64 = bins
            .iter()
            .map(|&n| (f64::from(n) - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 114.0, "chi-square {chi2}");
    }

    #[cfg(feature = "testing")]
    #[test]
    fn the_same_seed_draws_the_same_sequence() {
        let run = |s: u64| {
            seed(s);
            (0..1000).map(|_| draw()).collect::<Vec<_>>()
        };
        let first = run(7);
        let _ = draw(); // the state moved on; seeding starts it over
        assert_eq!(run(7), first);
        assert_ne!(run(8), first, "another seed, other draws");
        // On another thread too: the seed is all a sequence depends on.
        let there = std::thread::spawn(move || run(7)).join().unwrap();
        assert_eq!(there, first);
    }

    #[test]
    fn draws_are_spread_evenly() {
        let mut below = [0u32; 4];
        for _ in 0..40_000 {
            below[(draw() >> 30) as usize] += 1;
        }
        for quarter in below {
            assert!((9_000..11_000).contains(&quarter), "{below:?}");
        }
    }
}
