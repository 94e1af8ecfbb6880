//! The breaker: a lock-free state machine in one atomic word (see the `word`
//! module for its layout).
//!
//! Every change is one compare-and-swap on the word. A successful call in Closed
//! under the consecutive rule reads the word twice and writes nothing unless a
//! failure count needs clearing, so threads sharing a healthy breaker do not
//! contend on its cache line. Under the failure-rate rule, which keeps no
//! failure count, the word's payload says instead whether a success must
//! consult the window (see the `consult` module): a count window only while
//! it fills up after holding a failure (then a success reads the window and
//! the per-thread call counts, see `window`), so a success in a settled or
//! eventless count window costs what it costs under the consecutive rule;
//! a time window always (a success reads the clock and writes only when it
//! is the first call of its bucket's period). Only failed and slow calls
//! write the window. An open breaker rejects on one reading of the word: the
//! deadline is in it.
//!
//! Beside the word, on the same cache line, the generation counter hands out a
//! fresh generation to every Closed and HalfOpen period. Off the hot line: the
//! trial lease (the time after which unresolved trial permits are presumed
//! lost), the growing open time's level, the jitter generator and the window
//! (made on first use and read without a guard; when a reconfiguration
//! changes its shape, a new one is published and read through arc-swap's
//! guard, and each one replaced later is freed once no call reads it).

mod admit;
#[cfg_attr(not(feature = "keyed"), allow(dead_code))]
mod budget;
mod build;
mod call;
pub(crate) mod consult;
mod control;
pub(crate) mod durations;
mod finish;
mod limit;
mod open;
mod origins;
mod permit;
mod rate;
pub(crate) mod remote;
mod settings;
pub(crate) mod shedding;
mod snapshot;
pub(crate) mod transition;

pub use crate::core::config::Mode;
pub use crate::core::outcome::Outcome;
pub(crate) use open::splitmix64;
pub use origins::Origin;
pub(crate) use origins::Origins;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) use permit::Detached;
pub use permit::Permit;
pub use snapshot::Snapshot;

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::time::Duration;

use crate::core::clock::{Clock, RetryAt};
use crate::core::config::Config;
use crate::core::error::{Error, Rejected, State};
use crate::core::kept::{Kept, Read};
use crate::core::name::Name;
use crate::core::totals::Totals;
use crate::core::window::{Tally, Window};
use crate::core::word::{Admitted, MAX_ROUND, Started, Tag, Word};
use transition::{Events, Why};

/// The part every call reads, on a cache line of its own.
#[derive(Debug)]
#[repr(align(128))]
struct Hot {
    word: AtomicU64,
    /// Generations handed out so far; the word holds the low bits of the latest.
    generations: AtomicU64,
    registered: AtomicBool,
    /// Graded shedding's chance of refusing a call now, in 2^-32 (see
    /// `shedding`); 0 without it.
    shed: AtomicU32,
}

/// A circuit breaker.
///
/// Build one with [`Breaker::builder`], or let `#[circuit_breaker]` declare one
/// per function. Calls go through [`call`](Breaker::call),
/// [`call_async`](Breaker::call_async), or by hand with
/// [`acquire`](Breaker::acquire) and a [`Permit`].
///
/// ```
/// use failfast_runtime::{Breaker, Error, State};
/// use std::time::Duration;
///
/// let breaker = Breaker::builder().threshold(2).recovery(Duration::from_secs(30)).build()?;
/// for _ in 0..2 {
///     let _ = breaker.call(|| Err::<(), _>("connection refused"));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// // Open: the closure does not run.
/// let result = breaker.call(|| -> Result<(), &str> { unreachable!() });
/// assert!(matches!(result, Err(Error::Rejected(_))));
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// # Trials
///
/// Once the open period has passed, the next call is a trial (see
/// [`Permit::is_trial`]); up to `trial_calls` run at once. A trial that
/// succeeds counts toward closing, one that fails reopens at once, one that
/// ends neutral (or whose future is dropped) gives its slot back. A trial is
/// never replaced while it runs, however slow: only a trial permit that is
/// neither resolved nor dropped within its lease ([`Builder::trial_lease`](crate::Builder::trial_lease),
/// by default ten times `recovery` and at least 60 s) is presumed lost, so
/// that a leaked permit (`mem::forget`) cannot wedge the breaker. When every
/// slot is held past its lease the next call starts a new round of trials; a
/// late failure from an earlier round still reopens the breaker, while its
/// late success or neutral is ignored. Rounds are numbered 256 to a
/// generation of the state word: the 257th round starts a fresh generation,
/// and from then on the trials of the earlier rounds are ignored whatever
/// they report, however long they hang, so that no late outcome can ever be
/// taken for the current round's.
#[derive(Debug)]
pub struct Breaker {
    hot: Hot,
    config: Config,
    clock: Clock,
    /// Unresolved trial permits are presumed lost once this time has passed:
    /// the latest trial admission plus the lease. Only ever raised, and raised
    /// before the admission is published, so whoever sees a trial in flight
    /// sees its lease.
    lease_until: AtomicU64,
    /// Consecutive opens without a healthy pause (growing open time).
    level: AtomicU32,
    rng: AtomicU64,
    last_transition: AtomicU64,
    /// The rate rules' first window, made on first use and read without a
    /// guard: a breaker whose window's shape never changes pays nothing
    /// for reclamation. Kept for the breaker's lifetime.
    #[cfg(not(loom))]
    first_window: std::sync::OnceLock<Window>,
    /// The windows that replaced it when a reconfiguration changed its
    /// shape (`configure` module), each freed once no call reads it after
    /// it was replaced in turn (`kept` module).
    window: Kept<Window>,
    /// Graded shedding's window (`shed` module).
    shed: crate::core::shed::Shed,
    /// The adaptive concurrency limit's places (`limit` module).
    limit: limit::Limit,
    /// Transition events and per-transition totals (`events` module).
    events: Events,
    /// Calls counted by outcome (`totals` module).
    totals: Totals,
    /// Settings changed at run time (`configure` module), read only where
    /// the breaker decides something.
    tuning: Tuning,
    /// Where each setting in force came from (`origins` module), written
    /// with the settings.
    origins: AtomicU64,
    /// The time limit in force (`timeout`), in nanoseconds, 0 for none: a
    /// copy of the settings' for the calls that have one, read with one
    /// relaxed load when such a call starts (`settings` module).
    time_limit: AtomicU64,
    /// A keyed family's ejection budget, when it has one: asked before a
    /// trip from Closed, and counting the members ejected (`budget`).
    #[cfg(any(feature = "keyed", loom))]
    ejection: std::sync::OnceLock<budget::Ejection>,
}

/// A breaker's settings as changed at run time: read only where the breaker
/// decides something, never on the closed-call path. Each reconfiguration
/// publishes a `Config` (`size_of::<Config>()`, 144 bytes at most; its name is
/// shared, not copied); the one it replaces is freed once no call reads it
/// (see `kept`).
pub(crate) type Tuning = Kept<Config>;

#[cfg(feature = "keyed")]
pub(crate) use budget::Budget;

/// The constructors are `const` (so `#[circuit_breaker]` can put a breaker in a
/// `static` with no lazy initialisation), except under the loom model checker,
/// whose atomics have no const constructor.
macro_rules! constructors {
    ($($const:tt)?) => {
        /// A breaker with `config`, read from the system clock. Used by
        /// `#[circuit_breaker]`, whose settings were checked at compile time.
        #[doc(hidden)]
        #[must_use]
        pub $($const)? fn from_config(config: Config) -> Self {
            Self::with_clock(config, Clock::System)
        }

        pub(crate) $($const)? fn with_clock(config: Config, clock: Clock) -> Self {
            let word = Word::closed(Mode::Normal, 0, crate::core::breaker::consult::fresh_payload(&config));
            let time_limit = config.timeout;
            Self {
                hot: Hot {
                    word: AtomicU64::new(word.bits()),
                    generations: AtomicU64::new(0),
                    registered: AtomicBool::new(false),
                    shed: AtomicU32::new(0),
                },
                config,
                clock,
                lease_until: AtomicU64::new(0),
                level: AtomicU32::new(0),
                rng: AtomicU64::new(0),
                last_transition: AtomicU64::new(0),
                #[cfg(not(loom))]
                first_window: std::sync::OnceLock::new(),
                window: Kept::new(),
                shed: crate::core::shed::Shed::new(),
                limit: limit::Limit::new(),
                events: Events::new(),
                totals: Totals::new(),
                tuning: Tuning::new(),
                origins: AtomicU64::new(0),
                time_limit: AtomicU64::new(time_limit),
                #[cfg(any(feature = "keyed", loom))]
                ejection: std::sync::OnceLock::new(),
            }
        }
    };
}

#[cfg(not(loom))]
impl Breaker {
    constructors!(const);
}

#[cfg(loom)]
impl Breaker {
    constructors!();
}

impl Breaker {
    /// The breaker's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The breaker's name as stored: cloning it does not allocate.
    #[must_use]
    pub(crate) fn shared_name(&self) -> Name {
        self.config.name.clone()
    }

    /// The name that a `Rejected` or `TimedOut` made on this thread carries:
    /// a static name as it is, a name built at run time as this thread's
    /// slot keeps it (`Totals::thread_name`), so that threads rejecting at
    /// once through one breaker do not all write its name's reference count.
    #[inline]
    pub(crate) fn carried_name(&self) -> Name {
        match self.config.name.as_shared() {
            None => self.config.name.clone(),
            Some(shared) => Name::from_shared(self.totals.thread_name(shared)),
        }
    }

    #[inline]
    pub(crate) fn is_registered(&self) -> bool {
        self.hot.registered.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_registered(&self) -> bool {
        !self.hot.registered.load(Ordering::Relaxed)
            && !self.hot.registered.swap(true, Ordering::AcqRel)
    }

    #[inline]
    pub(crate) fn load(&self) -> Word {
        Word::from_bits(self.hot.word.load(Ordering::Acquire))
    }

    pub(crate) fn cas(&self, current: Word, new: Word) -> Result<(), Word> {
        self.hot
            .word
            .compare_exchange(
                current.bits(),
                new.bits(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(|_| ())
            .map_err(Word::from_bits)
    }

    /// A fresh generation for a new Closed or HalfOpen period. Taken after the
    /// word it replaces was read, so generations grow along the word's history.
    fn next_generation(&self) -> u64 {
        self.hot.generations.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether a permit admitted under `admitted` still belongs to the period
    /// of `current`.
    pub(crate) fn still_current(&self, admitted: Word, current: Word) -> bool {
        if !current.same_period(admitted) {
            return false;
        }
        // `current` has the same low 36 bits; it is the same generation unless
        // 2^36 more were handed out since.
        admitted.within_reach(self.hot.generations.load(Ordering::Relaxed))
    }

    /// The current state. Reports [`State::HalfOpen`] once `recovery` has elapsed,
    /// but never consumes the trial: only a call does.
    #[must_use]
    pub fn state(&self) -> State {
        self.state_of(self.load())
    }

    fn state_of(&self, w: Word) -> State {
        match (w.mode(), w.tag()) {
            (Mode::ForcedOpen, _) => State::Open,
            (Mode::ForcedClosed, _) | (_, Tag::Closed) => State::Closed,
            (_, Tag::Open) if self.clock.reached(w.deadline()) => State::HalfOpen,
            (_, Tag::Open) => State::Open,
            _ => State::HalfOpen,
        }
    }

    /// How the breaker is being controlled (read by its snapshot).
    #[must_use]
    pub(crate) fn mode(&self) -> Mode {
        self.load().mode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;

    const RECOVERY: Duration = Duration::from_secs(1);

    fn breaker(clock: &ManualClock, trial_calls: u32) -> Breaker {
        Breaker::builder()
            .threshold(1)
            .recovery(RECOVERY)
            .trial_calls(trial_calls)
            .success_threshold(2)
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    fn trip(b: &Breaker) {
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert_eq!(b.state(), State::Open);
    }

    /// A caller read `Open` with its deadline reached, then lost the race for
    /// the trial: it must decide on the word that beat it, not on its stale one.
    #[test]
    fn a_caller_holding_a_stale_open_word_decides_on_the_current_one() {
        let clock = ManualClock::new();
        for trial_calls in [1, 2] {
            let b = breaker(&clock, trial_calls);
            trip(&b);
            clock.advance(RECOVERY);
            let stale = b.load();
            let winner = b.acquire().expect("the first trial");
            match b.admit(stale) {
                Ok(second) => {
                    assert_eq!(trial_calls, 2, "a second trial only with two slots");
                    assert!(second.is_trial());
                    second.record(crate::Outcome::Neutral);
                }
                Err(rejected) => {
                    assert_eq!(trial_calls, 1);
                    assert_eq!(rejected.state(), State::HalfOpen, "{rejected:?}");
                }
            }
            winner.record(crate::Outcome::Success);
        }
    }

    /// 36 bits of generation in the word repeat after 2^36 transitions; the
    /// permit's epoch still tells them apart.
    #[test]
    fn a_permit_held_across_2_pow_36_generations_stays_stale() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        trip(&b);
        clock.advance(RECOVERY);
        let old = b.acquire().expect("a trial");
        let generation = b.hot.generations.load(Ordering::Relaxed);
        // As if 2^36 − 2 transitions had happened: reset (one more) and the
        // next trial (one more) land on the same low bits as `old`.
        b.hot
            .generations
            .store(generation + (1 << 36) - 2, Ordering::Relaxed);
        b.set_mode(crate::Mode::Normal);
        trip(&b);
        clock.advance(RECOVERY);
        let current = b.acquire().expect("the current trial");
        assert_eq!(
            current.admitted.word().generation(),
            old.admitted.word().generation()
        );
        // The old trial's success must not count in the current round.
        old.record(crate::Outcome::Success);
        let s = b.snapshot();
        assert_eq!(
            (s.state, s.trial_successes, s.trials_in_flight),
            (State::HalfOpen, 0, 1)
        );
        current.record(crate::Outcome::Success);
        assert_eq!(b.snapshot().trial_successes, 1);
    }

    /// A closed permit held while 2^36 − 2 generations pass, then two more:
    /// the word's 36 bits match the permit's again, and its failure must still
    /// be ignored, whether the permit keeps the counter (no slow-call rule) or
    /// the generation's high bits (slow-call rule).
    #[test]
    fn a_stale_closed_permit_cannot_trip_after_a_wrap() {
        let clock = ManualClock::new();
        for slow in [None, Some(Duration::from_secs(10))] {
            let mut builder = Breaker::builder().threshold(1).clock(clock.clone());
            if let Some(slow) = slow {
                builder = builder.slow(slow);
            }
            let b = builder.build().unwrap();
            let old = b.acquire().expect("closed");
            let generation = b.hot.generations.load(Ordering::Relaxed);
            b.hot
                .generations
                .store(generation + (1 << 36) - 2, Ordering::Relaxed);
            // Two new periods (a reset of a closed breaker is none).
            b.set_mode(crate::Mode::ForcedClosed);
            b.set_mode(crate::Mode::Normal);
            assert_eq!(b.load().generation(), old.admitted.word().generation());
            old.record(crate::Outcome::Failure);
            assert_eq!(b.state(), State::Closed, "slow rule: {slow:?}");
            // A permit of the current generation still counts.
            b.acquire().unwrap().record(crate::Outcome::Failure);
            assert_eq!(b.state(), State::Open, "slow rule: {slow:?}");
        }
    }

    /// Generations handed out by lost races leave the counter ahead of the
    /// word; a permit admitted then is still current, also where the counter
    /// has crossed into the next 2^36.
    #[test]
    fn a_permit_admitted_while_the_counter_is_ahead_of_the_word_is_current() {
        let clock = ManualClock::new();
        let b = Breaker::builder()
            .threshold(3)
            .clock(clock.clone())
            .build()
            .unwrap();
        b.hot.generations.store((1 << 36) - 2, Ordering::Relaxed);
        b.set_mode(crate::Mode::Normal); // the word's generation: 2^36 − 1
        b.next_generation(); // lost races: the counter moves on to 2^36 + 1
        b.next_generation();
        b.acquire().unwrap().record(crate::Outcome::Failure);
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert_eq!(b.snapshot().consecutive_failures, 2);
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert_eq!(b.state(), State::Open);
    }
}
