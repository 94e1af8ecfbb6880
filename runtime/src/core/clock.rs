//! Time, as the breaker sees it.
//!
//! A breaker reads a monotonic clock measured in nanoseconds since a process-wide
//! origin. Production breakers use the system's monotonic clock
//! ([`std::time::Instant`]); tests hand the builder a [`ManualClock`] and move time
//! by hand, so recovery and window expiry can be tested without sleeping.
//!
//! # The coarse clock
//!
//! Reading the precise clock costs tens of nanoseconds, more than an open
//! breaker should spend refusing a call, and more than a time window should
//! spend placing one. Where the kernel keeps a coarse monotonic clock (Linux's
//! `CLOCK_MONOTONIC_COARSE`, read through the vDSO in a few nanoseconds), the
//! breaker reads that clock first, on the same time line. The kernel moves it
//! at each scheduler tick (its resolution: every 1 to 4 ms), in whole ticks,
//! keeping what is left over for the next: so a coarse reading is never ahead
//! of the precise time, and trails it by less than [`TRAIL_RESOLUTIONS`] (two)
//! resolutions, unless a tick itself runs late. (Measured on a 4 ms kernel:
//! 1 to 5 ms behind, almost never more.) Everywhere else, and under loom, the
//! coarse clock is the precise one; and under valgrind too, which cannot
//! follow rustix's own reading of the vDSO (a program reading it stops with
//! SIGSEGV, rustix issue #1559): valgrind's core, preloaded, says so, and
//! the first reading finds it (`.ci/run` runs an example under valgrind).
//!
//! A deadline check (`Clock::reached`, the open breaker's refusal) reads the
//! coarse clock, and while that is more than two resolutions short of the
//! deadline the deadline has not passed: it refuses without reading the
//! precise clock. Closer to the deadline it reads the precise clock. So the
//! Open → HalfOpen transition is never early, and is seen by the first call
//! after the deadline (should a tick run late, by the first call once the
//! coarse clock has caught up to within two resolutions).
//!
//! A time window places every call it records in a bucket of T / 20. A window
//! whose buckets are at least [`COARSE_BUCKET_RESOLUTIONS`] times the coarse
//! clock's resolution reads the coarse clock, so a call is placed at most two
//! resolutions (a fifth of a bucket, T/100) earlier than the precise clock
//! would place it. Shorter windows read the precise clock.
//!
//! Nothing here keeps a thread or any state that a `fork()` could copy half
//! way: a forked child reads the same kernel clocks as its parent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A coarse reading trails the precise time by less than this many of the
/// coarse clock's resolutions (see the module docs).
#[cfg_attr(not(all(target_os = "linux", not(loom))), allow(dead_code))]
pub(crate) const TRAIL_RESOLUTIONS: u64 = 2;

/// A time window reads the kernel's coarse clock when its buckets are at
/// least this many times the coarse clock's resolution (see the module
/// docs): a call is then placed at most a fifth of a bucket early.
pub(crate) const COARSE_BUCKET_RESOLUTIONS: u64 = 10;

/// A clock whose time only moves when told to: for tests.
///
/// Clones share the same time, so the test keeps one handle and gives a clone to
/// the breaker through [`Builder::clock`](crate::Builder::clock).
///
/// ```
/// use failfast_runtime::{Breaker, ManualClock, State};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let breaker = Breaker::builder()
///     .threshold(1)
///     .recovery(Duration::from_secs(30))
///     .clock(clock.clone())
///     .build()
///     .unwrap();
/// let _ = breaker.call(|| Err::<(), _>("down"));
/// assert_eq!(breaker.state(), State::Open);
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(breaker.state(), State::HalfOpen);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by`. The clock stops at `u64::MAX`
    /// nanoseconds (584 years) rather than wrapping.
    pub fn advance(&self, by: Duration) {
        let by = duration_nanos(by);
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Whether `other` is a clone of this clock.
    #[cfg(feature = "testing")]
    pub(crate) fn same(&self, other: &ManualClock) -> bool {
        Arc::ptr_eq(&self.nanos, &other.nanos)
    }

    /// The time elapsed since the clock was created, as advanced so far.
    #[must_use]
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

/// The clock a breaker reads.
#[derive(Clone, Debug)]
pub(crate) enum Clock {
    System,
    Manual(ManualClock),
}

impl Clock {
    /// Precise time in nanoseconds.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return now;
                }
                system_now()
            }
            Clock::Manual(m) => m.nanos.load(Ordering::SeqCst),
        }
    }

    /// Time in nanoseconds as a time window reads it: [`now`](Self::now),
    /// or on the system clock where the kernel keeps a coarse clock, that
    /// clock, which trails `now` by less than [`TRAIL_RESOLUTIONS`] times
    /// [`coarse_resolution`](Self::coarse_resolution).
    #[inline]
    pub(crate) fn coarse_now(&self) -> u64 {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return now;
                }
                coarse::now()
            }
            Clock::Manual(m) => m.nanos.load(Ordering::SeqCst),
        }
    }

    /// The resolution of [`coarse_now`](Self::coarse_now), in nanoseconds;
    /// `None` when it is [`now`](Self::now).
    pub(crate) fn coarse_resolution(&self) -> Option<u64> {
        match self {
            Clock::System => coarse::resolution(),
            Clock::Manual(_) => None,
        }
    }

    /// Whether `deadline` (nanoseconds on this clock) has passed. On the
    /// system clock, cheap while the deadline is more than two of the coarse
    /// clock's resolutions away, and never early; see the module docs.
    ///
    /// Always inlined: the refusal of an open breaker is decided in a cold
    /// function, where the compiler would otherwise call this out of line
    /// and pay a frame around the coarse read. The precise read is out of
    /// line.
    #[inline(always)]
    pub(crate) fn reached(&self, deadline: u64) -> bool {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return now >= deadline;
                }
                !coarse::short_of(deadline) && system_reached(deadline)
            }
            Clock::Manual(m) => m.nanos.load(Ordering::SeqCst) >= deadline,
        }
    }

    /// Whether `deadline` is certainly still ahead: on the system clock, the
    /// coarse clock shows it further away than the coarse time can trail
    /// (a `false` is not a verdict: ask [`reached`](Self::reached)).
    #[inline(always)]
    pub(crate) fn short_of(&self, deadline: u64) -> bool {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return now < deadline;
                }
                coarse::short_of(deadline)
            }
            Clock::Manual(m) => m.nanos.load(Ordering::SeqCst) < deadline,
        }
    }

    /// When, in the caller's terms, `deadline` falls.
    pub(crate) fn retry_at(&self, deadline: u64) -> RetryAt {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return RetryAt::after(deadline.saturating_sub(now));
                }
                RetryAt::system(deadline)
            }
            Clock::Manual(m) => {
                let now = m.nanos.load(Ordering::SeqCst);
                RetryAt::after(deadline.saturating_sub(now))
            }
        }
    }
}

/// The next trial's time as carried by a [`Rejected`](crate::Rejected), in
/// one word: a deadline on the system clock (nanoseconds since the origin,
/// kept raw so a rejection does no clock arithmetic and `retry_after()` is
/// exact whenever it is asked), a remaining time measured on a manual
/// clock (marked by the top bit), or `UNKNOWN` (forced open, or trials in
/// flight).
///
/// One word with no padding, because rejections are returned through
/// memory and copied by callers: a wider load over a narrower store (an
/// enum holding a `Duration`'s `u32` beside padding) cannot be forwarded
/// from the store buffer, and that stall cost more than the rest of a
/// refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryAt(u64);

impl RetryAt {
    /// Marks a remaining time measured on a manual clock.
    const AFTER: u64 = 1 << 63;
    /// No known time.
    pub(crate) const UNKNOWN: RetryAt = RetryAt(u64::MAX);

    /// A deadline on the system clock.
    pub(crate) fn system(deadline: u64) -> Self {
        RetryAt(deadline.min(Self::AFTER - 1))
    }

    /// A remaining time, measured when the call was rejected.
    pub(crate) fn after(nanos: u64) -> Self {
        RetryAt(nanos.min(Self::AFTER - 2) | Self::AFTER)
    }

    pub(crate) fn is_unknown(self) -> bool {
        self == Self::UNKNOWN
    }

    pub(crate) fn remaining(self) -> Option<Duration> {
        if self.is_unknown() {
            None
        } else if self.0 & Self::AFTER != 0 {
            Some(Duration::from_nanos(self.0 & !Self::AFTER))
        } else {
            Some(Duration::from_nanos(self.0.saturating_sub(system_now())))
        }
    }
}

pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Whether the precise clock has reached `deadline`: the slow half of
/// [`Clock::reached`].
#[inline(never)]
fn system_reached(deadline: u64) -> bool {
    system_now() >= deadline
}

/// Nanoseconds since the process-wide origin; never zero, so zero can mean "unset".
#[inline]
pub(crate) fn system_now() -> u64 {
    duration_nanos(origin().elapsed()).max(1)
}

/// The kernel's coarse monotonic clock, on the breakers' time line.
#[cfg(all(target_os = "linux", not(loom)))]
mod coarse {
    use std::sync::OnceLock;

    use rustix::time::{ClockId, Timespec, clock_getres, clock_gettime};

    use super::{TRAIL_RESOLUTIONS, system_now};

    #[inline(always)]
    fn nanos(time: Timespec) -> u64 {
        let sec = u64::try_from(time.tv_sec).unwrap_or(0);
        let nsec = u64::try_from(time.tv_nsec).unwrap_or(0);
        sec.saturating_mul(1_000_000_000).saturating_add(nsec)
    }

    struct Coarse {
        /// `CLOCK_MONOTONIC`'s reading at the breakers' origin: `Instant`
        /// is that clock on Linux, and the coarse clock is the same clock
        /// as of the latest tick.
        origin: u64,
        resolution: u64,
        /// How far a coarse reading can trail the precise time.
        trail: u64,
    }

    static COARSE: OnceLock<Coarse> = OnceLock::new();

    /// Makes the settings, at the first reading (the readings below come
    /// here, out of line, until they are made). Under valgrind, which
    /// cannot follow rustix's own reading of the vDSO (the program stops
    /// with SIGSEGV, rustix issue #1559), it makes none, and the precise
    /// clock stands in, as on systems without a coarse clock: every
    /// reading comes here, which only costs time under valgrind.
    #[cold]
    #[inline(never)]
    fn first() -> Option<&'static Coarse> {
        static UNDER_VALGRIND: OnceLock<bool> = OnceLock::new();
        // Valgrind's core is preloaded into every program it runs.
        let under_valgrind = UNDER_VALGRIND.get_or_init(|| {
            std::env::var_os("LD_PRELOAD")
                .is_some_and(|preload| preload.to_string_lossy().contains("vgpreload_core"))
        });
        if *under_valgrind {
            return None;
        }
        Some(COARSE.get_or_init(|| {
            let origin = origin_of(|| {
                let before = system_now();
                let raw = nanos(clock_gettime(ClockId::Monotonic));
                (before, raw, system_now())
            });
            let resolution = nanos(clock_getres(ClockId::MonotonicCoarse));
            Coarse {
                origin,
                resolution,
                trail: resolution.saturating_mul(TRAIL_RESOLUTIONS),
            }
        }))
    }

    /// Brackets [`origin_of`] takes.
    const BRACKETS: usize = 4;

    /// `CLOCK_MONOTONIC`'s reading at the breakers' origin, from the
    /// tightest of a few brackets `(before, raw, after)`: a raw reading
    /// taken between two readings of the time since the origin. Put at
    /// `raw − before`, the origin is late by the time from `before` to
    /// `raw`, so coarse readings come out that much early, never ahead of
    /// the precise clock; and by no more than the bracket's width, which
    /// is wide only when the thread was descheduled inside it. (One
    /// bracket alone made the coarse clock trail by such a pause, 100 ms
    /// under load, for the whole process.)
    pub(super) fn origin_of(mut bracket: impl FnMut() -> (u64, u64, u64)) -> u64 {
        let mut tightest = (u64::MAX, 0);
        for _ in 0..BRACKETS {
            let (before, raw, after) = bracket();
            let width = after.saturating_sub(before);
            if width < tightest.0 {
                tightest = (width, raw.saturating_sub(before));
            }
        }
        tightest.1
    }

    pub(super) fn resolution() -> Option<u64> {
        COARSE.get().or_else(first).map(|c| c.resolution)
    }

    #[inline]
    pub(super) fn now() -> u64 {
        let Some(c) = COARSE.get() else {
            return first_now();
        };
        nanos(clock_gettime(ClockId::MonotonicCoarse))
            .saturating_sub(c.origin)
            .max(1)
    }

    /// Whether the coarse clock shows `deadline` further away than the
    /// coarse time can trail the precise time: then the precise time has
    /// not reached it either.
    #[inline(always)]
    pub(super) fn short_of(deadline: u64) -> bool {
        let Some(c) = COARSE.get() else {
            return first_short_of(deadline);
        };
        nanos(clock_gettime(ClockId::MonotonicCoarse))
            .saturating_sub(c.origin)
            .saturating_add(c.trail)
            < deadline
    }

    /// [`now`] before the settings are made, or under valgrind.
    #[cold]
    #[inline(never)]
    pub(super) fn first_now() -> u64 {
        match first() {
            Some(_) => now(),
            None => system_now(),
        }
    }

    /// [`short_of`] before the settings are made, or under valgrind (then
    /// every deadline check reads the precise clock).
    #[cold]
    #[inline(never)]
    pub(super) fn first_short_of(deadline: u64) -> bool {
        first().is_some() && short_of(deadline)
    }
}

/// No coarse clock: the precise clock stands in for it. Built on Linux
/// too, where its tests run.
#[cfg_attr(all(target_os = "linux", not(loom)), allow(dead_code))]
mod precise {
    pub(super) fn resolution() -> Option<u64> {
        None
    }

    #[inline]
    pub(super) fn now() -> u64 {
        super::system_now()
    }

    /// Never short: every deadline check reads the precise clock.
    #[inline(always)]
    pub(super) fn short_of(_deadline: u64) -> bool {
        false
    }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
use precise as coarse;

/// The clock the `testing` module put in place of the system's for the
/// rest of the test binary (`testing::install_clock`,
/// `testing::follow_tokio_clock`).
#[cfg(feature = "testing")]
pub(crate) enum Source {
    Manual(ManualClock),
    /// tokio's clock, in nanoseconds since `origin`.
    #[cfg(feature = "tokio")]
    Tokio {
        origin: std::time::Instant,
    },
}

#[cfg(feature = "testing")]
pub(crate) static SOURCE: OnceLock<Source> = OnceLock::new();

/// The test clock's time in nanoseconds, when one is installed.
#[cfg(feature = "testing")]
#[inline]
fn test_now() -> Option<u64> {
    match SOURCE.get()? {
        Source::Manual(clock) => Some(duration_nanos(clock.now())),
        #[cfg(feature = "tokio")]
        Source::Tokio { origin } => {
            let now = tokio::time::Instant::now().into_std();
            Some(duration_nanos(now.saturating_duration_since(*origin)).max(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux keeps a coarse clock, whose readings land on the breakers' time
    /// line: never ahead of the precise clock, and behind it by less than
    /// two resolutions (with room for a tick the kernel took late).
    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn coarse_readings_trail_the_precise_clock() {
        let resolution = Clock::System
            .coarse_resolution()
            .expect("Linux has CLOCK_MONOTONIC_COARSE");
        for _ in 0..10_000 {
            let before = system_now();
            let coarse = Clock::System.coarse_now();
            let after = system_now();
            assert!(coarse <= after, "coarse {coarse} after {after}");
            assert!(
                coarse + resolution + 50_000_000 >= before,
                "coarse {coarse} more than {resolution} ns behind {before}"
            );
        }
    }

    /// The readings that make the coarse clock's settings (the first ones
    /// of a process) give what the later ones do: on the time line, never
    /// ahead; short of a deadline far ahead, not of one passed.
    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn the_first_readings_agree_with_the_later_ones() {
        // Far enough from the origin that a reading of 0 stands out.
        let _ = system_now();
        std::thread::sleep(Duration::from_millis(100));
        let before = system_now();
        let first = coarse::first_now();
        let after = system_now();
        assert!(first <= after, "first {first} after {after}");
        assert!(
            first + 50_000_000 >= before,
            "first {first} far behind {before}"
        );
        assert!(coarse::first_short_of(after + 1_000_000_000));
        assert!(!coarse::first_short_of(before));
        assert!(!coarse::first_short_of(1));
    }

    /// The origin of the coarse readings is taken from the tightest of its
    /// brackets (the first of equal ones): one a pause widened does not
    /// put it late.
    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn the_coarse_origin_comes_from_the_tightest_bracket() {
        let brackets = [
            (1_000, 50_000_900, 1_000_000),
            (2_000, 50_002_010, 2_020),
            (3_000, 50_003_500, 3_900),
            (4_000, 50_004_005, 4_020),
        ];
        let mut taken = brackets.into_iter();
        let origin = coarse::origin_of(|| taken.next().expect("four brackets"));
        assert_eq!(origin, 50_000_010);
        assert_eq!(taken.next(), None);
    }

    /// A coarse reading stands still between ticks, where two precise
    /// readings do not, and moves in steps of the order of the resolution
    /// the kernel gives for it, which windows compare their buckets with.
    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn coarse_readings_stand_still_between_ticks() {
        let still = (0..100_000).any(|_| Clock::System.coarse_now() == Clock::System.coarse_now());
        assert!(still, "every pair of coarse readings differed");
        let resolution = Clock::System.coarse_resolution().expect("a coarse clock");
        // The smallest of a few steps: a thread descheduled for a while
        // sees a longer one.
        let mut last = Clock::System.coarse_now();
        let mut step = u64::MAX;
        let give_up = system_now() + 5_000_000_000;
        for _ in 0..5 {
            let moved = loop {
                let now = Clock::System.coarse_now();
                if now != last {
                    break now;
                }
                assert!(system_now() < give_up, "the coarse clock stood still");
                std::hint::spin_loop();
            };
            step = step.min(moved - last);
            last = moved;
        }
        // Not one tick exactly: the kernel's timekeeping also runs at
        // other moments than the reading CPU's tick.
        assert!(
            resolution.saturating_mul(8) >= step,
            "moved by {step} ns, resolution {resolution} ns"
        );
    }

    /// Where there is no coarse clock, the precise one stands in: no
    /// resolution, its readings, and never short of a deadline, so that
    /// every deadline check reads it.
    #[test]
    fn without_a_coarse_clock_the_precise_one_stands_in() {
        assert_eq!(precise::resolution(), None);
        std::thread::sleep(Duration::from_millis(1));
        let before = system_now();
        let read = precise::now();
        let after = system_now();
        assert!(before <= read && read <= after, "{before} {read} {after}");
        assert!(!precise::short_of(u64::MAX));
    }

    /// A manual clock has no coarse reading of its own: windows read its time.
    #[test]
    fn a_manual_clock_is_its_own_coarse_clock() {
        let manual = ManualClock::new();
        manual.advance(Duration::from_nanos(1234));
        let clock = Clock::Manual(manual);
        assert_eq!(clock.coarse_resolution(), None);
        assert_eq!(clock.coarse_now(), 1234);
    }

    #[test]
    fn a_retry_time_at_the_ends_of_its_range_keeps_its_kind() {
        let century = Duration::from_secs(100 * 365 * 86_400);
        // A deadline too far to have its own bit is still a deadline.
        let far = RetryAt::system(u64::MAX);
        assert!(!far.is_unknown());
        assert!(far.remaining().unwrap() > century);
        // A remaining time too long for the word saturates, short of the
        // value that means "unknown".
        let long = RetryAt::after(u64::MAX);
        assert!(!long.is_unknown());
        assert_eq!(long.remaining(), Some(Duration::from_nanos((1 << 63) - 2)));
        assert_eq!(RetryAt::after(5).remaining(), Some(Duration::from_nanos(5)));
        assert_eq!(RetryAt::after(0).remaining(), Some(Duration::ZERO));
        assert_eq!(RetryAt::UNKNOWN.remaining(), None);
    }

    #[test]
    fn manual_clock_clones_share_time() {
        let a = ManualClock::new();
        let b = a.clone();
        a.advance(Duration::from_millis(5));
        assert_eq!(b.now(), Duration::from_millis(5));
    }

    #[test]
    fn manual_clock_saturates() {
        let c = ManualClock::new();
        c.advance(Duration::from_secs(10));
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
        c.advance(Duration::from_secs(1));
        assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
    }

    /// A deadline check is never true before the deadline, and is true once
    /// the precise clock has reached it with the coarse clock within two
    /// resolutions of it, for deadlines from now to a few ticks away; the
    /// coarse clock never shows a time the precise clock read after it has
    /// not reached.
    #[test]
    fn a_deadline_is_reached_at_the_deadline_and_not_before() {
        let clock = Clock::System;
        let resolution = clock.coarse_resolution().unwrap_or(0);
        let trail = resolution * TRAIL_RESOLUTIONS;
        for ahead in [0, 1_000, 100_000, 1_000_000, 3_000_000, resolution, trail] {
            let deadline = system_now() + ahead;
            loop {
                let coarse = clock.coarse_now();
                let before = system_now();
                let reached = clock.reached(deadline);
                let after = system_now();
                // Never ahead: a check that trusted it could never be early.
                assert!(coarse <= before, "coarse {coarse} after precise {before}");
                if reached {
                    // The clock read inside was read before `after`.
                    assert!(after >= deadline, "reached at {after}, before {deadline}");
                    break;
                }
                // Not reached: the clocks read inside, each read after the
                // reading above it, fell short.
                assert!(
                    before < deadline || coarse.saturating_add(trail) < deadline,
                    "not reached at {before} (coarse {coarse}, trailing by up to \
                     {trail}), past {deadline}"
                );
                std::hint::spin_loop();
            }
        }
    }

    /// Deadlines at the ends of the time line: one long passed is reached,
    /// one never to come is not.
    #[test]
    fn deadlines_at_the_ends_of_the_time_line() {
        assert!(Clock::System.reached(0));
        assert!(Clock::System.reached(1));
        assert!(!Clock::System.reached(u64::MAX));
    }
}
