//! Time, as the breaker sees it.
//!
//! A breaker reads a monotonic clock measured in nanoseconds since a process-wide
//! origin. Production breakers use the system's monotonic clock
//! ([`std::time::Instant`]); tests hand the builder a [`ManualClock`] and move time
//! by hand, so recovery and window expiry can be tested without sleeping.
//!
//! # The coarse clock
//!
//! Reading `Instant::now()` costs tens of nanoseconds, more than an open breaker
//! should spend rejecting a call. While at least one breaker is waiting out its
//! open period, a background thread (`failfast-clock`) publishes the time into an
//! atomic once per [`TICK`]. The rejection path compares the deadline with that
//! coarse reading and only consults the precise clock once the coarse time is within
//! [`TICK`] of the deadline. So the Open → HalfOpen transition is never early, and is
//! late by at most one tick plus however long the operating system delays the
//! ticker thread (typically well under a millisecond past the tick).
//!
//! The ticker is started on a transition into Open and stops once every open
//! deadline it was told about has passed: a process whose breakers are all
//! closed has no ticking thread.
//!
//! # The coarse clock of time windows
//!
//! A time window places every call it records in a bucket of T / 20, so a
//! call through a breaker with a time window reads the time. Where the
//! kernel keeps a coarse monotonic clock (Linux's `CLOCK_MONOTONIC_COARSE`,
//! advanced once per scheduler tick, typically every 1 to 4 ms), a window
//! whose buckets are at least [`COARSE_BUCKET_RESOLUTIONS`] times its
//! resolution reads that clock instead: a few nanoseconds against tens for
//! the precise clock, and no thread of its own. Its reading trails the
//! precise time by less than one resolution, so a call is placed at most one
//! resolution (a tenth of a bucket, T/200) earlier than the precise clock
//! would place it. Everywhere else, and for shorter windows, the window
//! reads the precise clock.
//!
//! After `fork()` the child has no ticker, whatever the parent had. On Unix a
//! `pthread_atfork` handler clears the coarse time in the child (so every
//! check reads the precise clock) and marks the ticker as not running (so the
//! next open starts one); a coarse time frozen at the fork can never keep a
//! child's breaker open.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How often the coarse clock is refreshed while a breaker is open.
pub const TICK: Duration = Duration::from_millis(1);

/// A time window reads the kernel's coarse clock when its buckets are at
/// least this many times the coarse clock's resolution (see the module
/// docs): a call is then placed at most a tenth of a bucket early.
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
    /// clock, which trails `now` by less than
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

    /// How far [`coarse_now`](Self::coarse_now) can trail
    /// [`now`](Self::now), in nanoseconds; `None` when it is `now`.
    pub(crate) fn coarse_resolution(&self) -> Option<u64> {
        match self {
            Clock::System => coarse::resolution(),
            Clock::Manual(_) => None,
        }
    }

    /// Whether `deadline` (nanoseconds on this clock) has passed. Cheap on the system
    /// clock while the ticker runs; see the module docs for the bound.
    #[inline]
    pub(crate) fn reached(&self, deadline: u64) -> bool {
        match self {
            Clock::System => {
                #[cfg(feature = "testing")]
                if let Some(now) = test_now() {
                    return now >= deadline;
                }
                let coarse = COARSE.load(Ordering::Relaxed);
                if coarse != 0 && coarse.saturating_add(TICK_NANOS) < deadline {
                    return false;
                }
                system_now() >= deadline
            }
            Clock::Manual(m) => m.nanos.load(Ordering::SeqCst) >= deadline,
        }
    }

    /// Tells the ticker that someone will be comparing against `deadline`.
    pub(crate) fn watch(&self, deadline: u64) {
        if let Clock::System = self {
            #[cfg(feature = "testing")]
            if test_now().is_some() {
                return;
            }
            Ticker::watch(deadline);
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

const TICK_NANOS: u64 = 1_000_000;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Nanoseconds since the process-wide origin; never zero, so zero can mean "unset".
#[inline]
pub(crate) fn system_now() -> u64 {
    duration_nanos(origin().elapsed()).max(1)
}

/// Coarse time in nanoseconds, or 0 while no ticker runs.
static COARSE: AtomicU64 = AtomicU64::new(0);
/// The latest deadline any breaker asked the ticker to watch.
static WATCH_UNTIL: AtomicU64 = AtomicU64::new(0);
/// Whether a ticker thread is running (or being started).
static RUNNING: AtomicBool = AtomicBool::new(false);

struct Ticker;

impl Ticker {
    fn watch(deadline: u64) {
        WATCH_UNTIL.fetch_max(deadline, Ordering::SeqCst);
        if !RUNNING.swap(true, Ordering::SeqCst) {
            fork::forget_ticker_in_children();
            let spawned = std::thread::Builder::new()
                .name("failfast-clock".into())
                .spawn(Ticker::run);
            // Without a ticker every check simply reads the precise clock.
            if spawned.is_err() {
                RUNNING.store(false, Ordering::SeqCst);
            }
        }
    }

    fn run() {
        loop {
            let now = system_now();
            if now > WATCH_UNTIL.load(Ordering::SeqCst) {
                // Nothing left to watch: readers fall back to the precise
                // clock. A `watch` racing this check either saw `RUNNING`
                // still set (and is caught by the check below) or started a
                // new ticker (and this one leaves).
                COARSE.store(0, Ordering::SeqCst);
                RUNNING.store(false, Ordering::SeqCst);
                if system_now() > WATCH_UNTIL.load(Ordering::SeqCst)
                    || RUNNING.swap(true, Ordering::SeqCst)
                {
                    return;
                }
                continue;
            }
            COARSE.store(now, Ordering::Relaxed);
            std::thread::sleep(TICK);
        }
    }
}

/// The kernel's coarse monotonic clock, on the breakers' time line.
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
#[allow(unsafe_code)]
mod coarse {
    use std::os::raw::{c_int, c_long};
    use std::sync::OnceLock;

    use super::system_now;

    const CLOCK_MONOTONIC: c_int = 1;
    const CLOCK_MONOTONIC_COARSE: c_int = 6;

    /// `struct timespec` where `time_t` is a `long` (64-bit Linux).
    #[repr(C)]
    struct Timespec {
        sec: c_long,
        nsec: c_long,
    }

    unsafe extern "C" {
        fn clock_gettime(clock: c_int, time: *mut Timespec) -> c_int;
        fn clock_getres(clock: c_int, resolution: *mut Timespec) -> c_int;
    }

    fn nanos(time: &Timespec) -> u64 {
        let sec = u64::try_from(time.sec).unwrap_or(0);
        let nsec = u64::try_from(time.nsec).unwrap_or(0);
        sec.saturating_mul(1_000_000_000).saturating_add(nsec)
    }

    fn read(clock: c_int) -> Option<u64> {
        let mut time = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
        // which points to one, valid and exclusively borrowed for the call.
        (unsafe { clock_gettime(clock, &mut time) } == 0).then(|| nanos(&time))
    }

    struct Coarse {
        /// `CLOCK_MONOTONIC`'s reading at the breakers' origin: `Instant`
        /// is that clock on Linux, and the coarse clock is the same clock
        /// advanced once per tick.
        origin: u64,
        resolution: u64,
    }

    fn coarse() -> Option<&'static Coarse> {
        static COARSE: OnceLock<Option<Coarse>> = OnceLock::new();
        COARSE
            .get_or_init(|| {
                let mut resolution = Timespec { sec: 0, nsec: 0 };
                // SAFETY: as in `read`.
                if unsafe { clock_getres(CLOCK_MONOTONIC_COARSE, &mut resolution) } != 0 {
                    return None;
                }
                let resolution = nanos(&resolution);
                // The origin read a few nanoseconds early: coarse readings
                // come out that much later, never ahead of the precise clock.
                let since_origin = system_now();
                let raw = read(CLOCK_MONOTONIC)?;
                Some(Coarse {
                    origin: raw.saturating_sub(since_origin),
                    resolution,
                })
            })
            .as_ref()
    }

    pub(super) fn resolution() -> Option<u64> {
        coarse().map(|c| c.resolution)
    }

    #[inline]
    pub(super) fn now() -> u64 {
        coarse()
            .and_then(|c| Some(read(CLOCK_MONOTONIC_COARSE)?.saturating_sub(c.origin)))
            .map_or_else(system_now, |now| now.max(1))
    }
}

/// No coarse clock: time windows read the precise clock.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(loom))))]
mod coarse {
    pub(super) fn resolution() -> Option<u64> {
        None
    }

    #[inline]
    pub(super) fn now() -> u64 {
        super::system_now()
    }
}

/// The child of a `fork()` starts with no ticker.
#[cfg(unix)]
#[allow(unsafe_code)]
mod fork {
    use super::{COARSE, Ordering, RUNNING};
    use std::sync::Once;

    unsafe extern "C" {
        fn pthread_atfork(
            prepare: Option<extern "C" fn()>,
            parent: Option<extern "C" fn()>,
            child: Option<extern "C" fn()>,
        ) -> i32;
    }

    /// Runs in the child, right after `fork()`: only atomic stores, which are
    /// async-signal-safe.
    extern "C" fn in_child() {
        COARSE.store(0, Ordering::SeqCst);
        RUNNING.store(false, Ordering::SeqCst);
    }

    pub(super) fn forget_ticker_in_children() {
        static REGISTERED: Once = Once::new();
        REGISTERED.call_once(|| {
            // SAFETY: `pthread_atfork` only records the handler, a plain
            // `extern "C" fn` that lives for the whole program. If registration
            // fails (out of memory), a forked child could see a frozen coarse
            // time; there is nothing better to do than carry on.
            let _ = unsafe { pthread_atfork(None, None, Some(in_child)) };
        });
    }
}

#[cfg(not(unix))]
mod fork {
    pub(super) fn forget_ticker_in_children() {}
}

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

pub(crate) static SOURCE: OnceLock<Source> = OnceLock::new();

#[cfg(feature = "testing")]
/// The test clock's time in nanoseconds, when one is installed.
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
    /// the resolution (with room for a tick the kernel took late).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
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

    /// A coarse reading stands still between ticks, where two precise
    /// readings do not, and moves in steps of the order of the resolution
    /// the kernel gives for it, which windows compare their buckets with.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
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

    /// Watching a deadline starts the ticker, which publishes the coarse time
    /// until the deadline has passed and then stops.
    #[test]
    fn the_ticker_runs_while_a_deadline_is_watched() {
        let clock = Clock::System;
        let deadline = system_now() + 200 * TICK_NANOS;
        clock.watch(deadline);
        let start = Instant::now();
        while COARSE.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(30), "no ticker");
            std::thread::yield_now();
        }
        let seen = COARSE.load(Ordering::SeqCst);
        while COARSE.load(Ordering::SeqCst) == seen {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the ticker stalled"
            );
            std::thread::yield_now();
        }
        while !clock.reached(deadline) {
            std::hint::spin_loop();
        }
        // Other tests may watch later deadlines; only once nothing is watched
        // does the ticker stop.
        while system_now() <= WATCH_UNTIL.load(Ordering::SeqCst) {
            std::thread::sleep(TICK);
        }
        while COARSE.load(Ordering::SeqCst) != 0 || RUNNING.load(Ordering::SeqCst) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the ticker never stopped"
            );
            std::thread::sleep(TICK);
        }
    }

    #[test]
    fn coarse_check_is_never_early() {
        let clock = Clock::System;
        let deadline = system_now() + 20 * TICK_NANOS;
        clock.watch(deadline);
        while !clock.reached(deadline) {
            std::hint::spin_loop();
        }
        assert!(system_now() >= deadline);
    }
}
