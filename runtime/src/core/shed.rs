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
//! counts more calls, and sheds less). A mark is tagged with the time its
//! period began, not with the period's number, so marks made before the
//! window changed at run time still place themselves against the new
//! width's periods, whatever the uptime. The chance is worked out again at
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

/// A period of the window, `width` nanoseconds long (`window / 20`): when
/// it starts on the breaker's clock. Marks are tagged with that time, not
/// with the period's number, so that marks made with one width and read
/// with another (the window changed at run time) still compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Period {
    pub(crate) start: u64,
    pub(crate) width: u64,
}

impl Period {
    /// The period of `width` that `now` falls in.
    pub(crate) fn at(now: u64, width: u64) -> Self {
        let width = width.max(1);
        Period {
            start: now - now % width,
            width,
        }
    }

    /// Its tag in a mark: its start plus one (0: no mark).
    fn tag(self) -> u64 {
        self.start.saturating_add(1)
    }

    /// The tag of the window's first period: the one 19 periods before
    /// this one (the window is this period and the 19 before it).
    fn first_tag(self) -> u64 {
        self.start
            .saturating_sub((PERIODS as u64 - 1).saturating_mul(self.width))
            .saturating_add(1)
    }

    #[allow(clippy::cast_possible_truncation)] // below PERIODS
    fn index(self) -> usize {
        (self.start / self.width % PERIODS as u64) as usize
    }
}

/// The totals when one period began. `at` is the period's tag (its start
/// plus one; 0: none), written last, and cleared first while the counts
/// change, so a reader that finds the same tag before and after reading the
/// counts read one mark's counts.
#[derive(Debug, Default)]
struct Mark {
    at: AtomicU64,
    admitted: AtomicU64,
    succeeded: AtomicU64,
    neutral: AtomicU64,
}

impl Mark {
    fn write(&self, period: Period, counts: Counts) {
        self.at.store(0, Relaxed);
        std::sync::atomic::fence(Release);
        self.admitted.store(counts.admitted, Relaxed);
        self.succeeded.store(counts.succeeded, Relaxed);
        self.neutral.store(counts.neutral, Relaxed);
        self.at.store(period.tag(), Release);
    }

    /// The tag and the counts, unless the mark was being written meanwhile.
    fn read(&self) -> Option<(u64, Counts)> {
        let at = self.at.load(Acquire);
        if at == 0 {
            return None;
        }
        let counts = Counts {
            admitted: self.admitted.load(Relaxed),
            succeeded: self.succeeded.load(Relaxed),
            neutral: self.neutral.load(Relaxed),
        };
        std::sync::atomic::fence(Acquire);
        (self.at.load(Relaxed) == at).then_some((at, counts))
    }
}

#[derive(Debug, Default)]
struct Marks {
    /// The tag of the latest period marked.
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

    /// Marks the start of `period` with `counts` if no call did yet (nor
    /// marked a period that starts later); whether this call did. The
    /// first mark of all is of no calls: the calls before it are the
    /// window's.
    pub(crate) fn roll(&self, period: Period, counts: impl FnOnce() -> Counts) -> bool {
        let marks = self.marks();
        let latest = marks.latest.load(Relaxed);
        if latest >= period.tag()
            || marks
                .latest
                .compare_exchange(latest, period.tag(), Relaxed, Relaxed)
                .is_err()
        {
            return false;
        }
        let counts = if latest == 0 {
            Counts::default()
        } else {
            counts()
        };
        marks.ring[period.index()].write(period, counts);
        true
    }

    /// The totals the window of `period` starts from: the oldest mark of
    /// its 20 periods; failing that the latest older one (a breaker called
    /// too seldom to mark each period); failing that none.
    pub(crate) fn base(&self, period: Period) -> Counts {
        // Marks of `period` and before (one being written now may be of a
        // later one); each slot holds one, so no two are of the same
        // period.
        let marks = || {
            self.marks()
                .ring
                .iter()
                .filter_map(Mark::read)
                .filter(|&(at, _)| at <= period.tag())
        };
        marks()
            .filter(|&(at, _)| at >= period.first_tag())
            .min_by_key(|&(at, _)| at)
            .or_else(|| marks().max_by_key(|&(at, _)| at))
            .map_or_else(Counts::default, |(_, counts)| counts)
    }

    /// Forgets every mark: the window starts at `period`, from `counts`.
    pub(crate) fn clear(&self, period: Period, counts: Counts) {
        let marks = self.marks();
        for mark in &marks.ring {
            mark.at.store(0, Release);
        }
        marks.ring[period.index()].write(period, counts);
        marks.latest.fetch_max(period.tag(), Relaxed);
    }
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
        // Periods of 1 ns: period n starts at n.
        let p = |n: u64| Period::at(n, 1);
        let at = |n: u64| Counts {
            admitted: n,
            succeeded: n,
            neutral: 0,
        };
        assert_eq!(
            shed.base(p(5)),
            Counts::default(),
            "no mark: since the start"
        );
        // A mark of a later period (being written as the base is read) is
        // not the window's.
        let later = Shed::new();
        later.clear(p(0), at(5));
        assert!(later.roll(p(30), || at(300)));
        assert_eq!(later.base(p(25)), at(5), "period 30 is after 25");
        assert_eq!(later.base(p(30)), at(300));
        assert!(shed.roll(p(2), || at(20)));
        assert_eq!(
            shed.base(p(2)),
            Counts::default(),
            "the first mark is of none"
        );
        assert!(shed.roll(p(3), || at(30)));
        assert!(!shed.roll(p(3), || at(31)), "marked once per period");
        assert!(!shed.roll(p(2), || at(20)), "never an earlier period");
        assert!(shed.roll(p(7), || at(70)));
        assert_eq!(shed.base(p(7)), Counts::default());
        assert_eq!(shed.base(p(22)), at(30), "period 3 is the oldest of 3..=22");
        assert_eq!(shed.base(p(23)), at(70), "period 3 has left the window");
        // Nothing within the window: the latest older mark.
        assert_eq!(shed.base(p(100)), at(70));
        assert!(shed.roll(p(30), || at(300)));
        assert_eq!(
            shed.base(p(30)),
            at(300),
            "of 3, 7 and 30 only 30 is within 11..=30"
        );
        shed.clear(p(31), at(310));
        assert_eq!(shed.base(p(31)), at(310));
        assert_eq!(shed.base(p(45)), at(310));
        assert!(!shed.roll(p(31), || at(0)));
        assert!(shed.roll(p(32), || at(320)));
        assert_eq!(shed.base(p(32)), at(310));
    }

    /// The window's width changed at run time, at a large uptime, longer
    /// and shorter: marks compare by when their periods start, so a
    /// period of the new width is marked as soon as it starts after the
    /// latest one marked (at most one period of the new width later), and
    /// the window reaches back over the marks of either width.
    #[test]
    fn marks_of_another_width_still_compare() {
        let counts = |n: u64| Counts {
            admitted: n,
            succeeded: n,
            neutral: 0,
        };
        let second = 1_000_000_000u64;
        for uptime in [1_000, 4_000_000, 1 << 33] {
            let now = uptime * second;
            let (short, long) = (second / 20, 10 * second / 20);
            let shed = Shed::new();
            // 1 s windows: periods of 50 ms, marked up to `now`.
            for k in (0..40).rev() {
                assert!(shed.roll(Period::at(now - k * short, short), || counts(k)));
            }
            // Now 10 s windows: the period of 500 ms that `now` is in
            // began before the latest mark; the next one is marked.
            let long_now = Period::at(now + short / 2, long);
            assert_eq!(shed.roll(long_now, || counts(100)), long_now.start > now);
            let next = Period::at(long_now.start + long, long);
            assert!(shed.roll(next, || counts(200)), "at {uptime} s");
            // The oldest within 10 s: one of the 50 ms marks still in the
            // ring (the latest 20, less one a 500 ms mark took the slot of).
            let base = shed.base(next).admitted;
            assert!((17..=19).contains(&base), "{base} at {uptime} s");
            // And back to 1 s: the very next 50 ms period is marked, and
            // after 1 s of them the window is theirs.
            let back = Period::at(next.start + short, short);
            assert!(shed.roll(back, || counts(300)), "at {uptime} s");
            for k in 1..=20 {
                let later = Period::at(back.start + k * short, short);
                assert!(shed.roll(later, || counts(300 + k)));
            }
            let last = Period::at(back.start + 20 * short, short);
            assert_eq!(shed.base(last), counts(301), "the oldest of the 1 s window");
            shed.clear(Period::at(last.start + long, long), counts(400));
            let after = Period::at(last.start + 2 * long, long);
            assert!(shed.roll(after, || counts(500)));
            assert_eq!(shed.base(after), counts(400));
        }
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
