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

#[cfg_attr(not(feature = "keyed"), allow(dead_code))]
mod budget;
mod build;
mod call;
pub(crate) mod consult;
mod control;
pub(crate) mod durations;
mod limit;
mod origins;
mod permit;
pub(crate) mod remote;
mod settings;
pub(crate) mod shedding;
mod snapshot;
pub(crate) mod transition;

pub use crate::core::config::Mode;
pub use crate::core::outcome::Outcome;
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
/// publishes a `Config` (`size_of::<Config>()`, 136 bytes at most; its name is
/// shared, not copied); the one it replaces is freed once no call reads it
/// (see `kept`).
pub(crate) type Tuning = Kept<Config>;

#[cfg(feature = "keyed")]
pub(crate) use budget::Budget;

/// What `Breaker::acquire_slow` decided.
enum Slow<'a> {
    /// Open, before the deadline: rejected (and counted).
    Open(RetryAt),
    /// Anything else.
    Decided(Result<Permit<'a>, Rejected>),
}

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

    /// Asks to make a call. `Ok(permit)`: make it, then resolve the permit with its
    /// outcome. `Err(rejected)`: the breaker is open (or its half-open trials are
    /// taken); do not call the dependency.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when the breaker refuses the call.
    // Always inlined: see `__private::acquire`.
    #[inline(always)]
    pub fn acquire(&self) -> Result<Permit<'_>, Rejected> {
        self.acquire_refusing::<false>()
    }

    /// [`acquire`](Self::acquire); with `INLINE`, the common refusal (open,
    /// and the coarse clock shows the deadline still ahead) is decided here
    /// rather than in `acquire_slow`, with no call but the clock's. For the
    /// attribute's expansion, where the protected function has its frame
    /// already and a refusal is all it does: its open refusal costs about
    /// 1.4 ns less (`benches/targets.rs`). `Breaker::call`'s closure is
    /// better off without it. The refusal is the one `acquire_slow` makes.
    #[inline(always)]
    pub(crate) fn acquire_refusing<const INLINE: bool>(&self) -> Result<Permit<'_>, Rejected> {
        let w = self.load();
        if w.closed_normally() {
            if !self.config.guarded {
                return Ok(self.permit(w));
            }
            return self.admit_guarded(w);
        }
        if INLINE && self.clock.short_of(w.deadline()) && open_normally(w) {
            let retry = self.refuse_open(w);
            return Err(Rejected::new(self.carried_name(), State::Open, retry));
        }
        match self.acquire_slow(w) {
            Slow::Open(retry) => Err(Rejected::new(self.carried_name(), State::Open, retry)),
            Slow::Decided(result) => result,
        }
    }

    /// Refuses a call to a breaker open on its own evidence whose deadline
    /// `w` has not passed: counts the refusal, and gives the time left.
    #[inline(always)]
    fn refuse_open(&self, w: Word) -> RetryAt {
        self.totals.add(crate::core::totals::REJECTED);
        self.clock.retry_at(w.deadline())
    }

    #[inline(always)]
    fn permit(&self, admitted: Word) -> Permit<'_> {
        // The word holds the generation's low 36 bits; the permit also needs
        // the counter read now, to tell its generation from one 2^36 later.
        // Without the slow-call rule or an adaptive limit `started` is free
        // to hold the counter as read (the arithmetic waits for a write);
        // with either, the generation's bits 36..52 go into the admitted
        // word at once.
        let counter = self.hot.generations.load(Ordering::Relaxed);
        if !self.config.timed {
            if durations::durations_recorded() {
                return self.clocked_permit(admitted, counter);
            }
            Permit {
                breaker: self,
                admitted: Admitted::new(admitted),
                started: Started::new(counter),
            }
        } else {
            Permit {
                breaker: self,
                admitted: Admitted::new(admitted).with_epoch(counter),
                started: Started::new(self.clock.now()),
            }
        }
    }

    fn passive(&self) -> Permit<'_> {
        Permit {
            breaker: self,
            admitted: Admitted::PASSIVE,
            started: Started::new(0),
        }
    }

    /// Not Closed, or under manual control. Rejecting while open is the common
    /// case and is decided here, in a small function, on the word alone; the
    /// rest (time for a trial, half-open, manual modes, lost races) is in
    /// `admit`.
    ///
    /// That common refusal is returned bare: the caller builds the
    /// `Rejected` inline, where the compiler sees its name is not dropped
    /// when a caller throws the rejection away.
    #[cold]
    fn acquire_slow(&self, w: Word) -> Slow<'_> {
        if open_normally(w) && !self.clock.reached(w.deadline()) {
            return Slow::Open(self.refuse_open(w));
        }
        Slow::Decided(self.admit(w))
    }

    /// Decides on `w`, and on every newer word a lost race brings: a decision
    /// is never taken on a word known to be stale.
    #[inline(never)]
    fn admit(&self, mut w: Word) -> Result<Permit<'_>, Rejected> {
        loop {
            match (w.mode(), w.tag()) {
                (Mode::ForcedOpen, _) => return Err(self.rejection(State::Open, RetryAt::UNKNOWN)),
                (Mode::ForcedClosed, _) => return Ok(self.passive()),
                (_, Tag::Closed) if self.config.guarded => return self.admit_guarded(w),
                (_, Tag::Closed) => return Ok(self.permit(w)),
                (mode, Tag::Open) => {
                    if !self.clock.reached(w.deadline()) {
                        let retry = self.clock.retry_at(w.deadline());
                        return self.refuse(mode, State::Open, retry);
                    }
                    let now = self.take_lease();
                    let trial = Word::half_open(mode, self.next_generation(), 0, 1, 0);
                    match self.cas(w, trial) {
                        Ok(()) => {
                            self.last_transition.store(now, Ordering::Relaxed);
                            self.transitioned(w, trial, Why::Recovery, 0);
                            return Ok(self.permit(trial));
                        }
                        Err(actual) => w = actual,
                    }
                }
                (mode, _) => {
                    // Half-open: a free slot, or a new round once every slot is
                    // held past its lease.
                    let next = if w.in_flight() < self.settings().trial_calls {
                        w.with_trials(w.round(), w.in_flight() + 1, w.successes())
                    } else if !self.clock.reached(self.lease_until.load(Ordering::Acquire)) {
                        return self.refuse(mode, State::HalfOpen, RetryAt::UNKNOWN);
                    } else if w.round() < MAX_ROUND {
                        w.with_trials(w.round() + 1, 1, w.successes())
                    } else {
                        // The word counts rounds to `MAX_ROUND`: past it, a
                        // fresh generation, so that no number is ever given to
                        // two rounds whose trials could both still report.
                        Word::half_open(mode, self.next_generation(), 0, 1, w.successes())
                    };
                    self.take_lease();
                    match self.cas(w, next) {
                        Ok(()) if next.generation() != w.generation() => {
                            self.renumbered(w, next);
                            return Ok(self.permit(next));
                        }
                        Ok(()) => return Ok(self.permit(next)),
                        Err(actual) => w = actual,
                    }
                }
            }
        }
    }

    /// Whether a call made now would be let through (without taking a trial
    /// slot): Closed, Open past its open time (the call would be its trial),
    /// HalfOpen with a trial slot free or every slot past its lease, forced
    /// closed or observe-only; not forced open.
    #[cfg(feature = "keyed")]
    pub(crate) fn admits_now(&self) -> bool {
        let w = self.load();
        match (w.mode(), w.tag()) {
            (Mode::ForcedOpen, _) => false,
            (Mode::ForcedClosed | Mode::ObserveOnly, _) | (_, Tag::Closed) => true,
            (_, Tag::Open) => self.clock.reached(w.deadline()),
            _ => {
                w.in_flight() < self.settings().trial_calls
                    || self.clock.reached(self.lease_until.load(Ordering::Acquire))
            }
        }
    }

    /// Whether a keyed family may forget this breaker when it needs room:
    /// Closed, or still Open or HalfOpen but left alone for `idle` since
    /// its open time ended (no call came for a trial), or since the lease
    /// of its latest trial did. A breaker under manual control is kept.
    #[cfg(feature = "keyed")]
    pub(crate) fn forgettable(&self, idle: u64) -> bool {
        let w = self.load();
        if w.mode() != Mode::Normal {
            return false;
        }
        let since = match w.tag() {
            Tag::Closed => return true,
            Tag::Open => w.deadline(),
            _ => self.lease_until.load(Ordering::Acquire),
        };
        self.clock.reached(since.saturating_add(idle))
    }

    /// Extends the trial lease to cover a trial starting now; returns now.
    fn take_lease(&self) -> u64 {
        let now = self.clock.now();
        self.lease_until.fetch_max(
            now.saturating_add(self.settings().lease()),
            Ordering::Release,
        );
        now
    }

    fn refuse(&self, mode: Mode, state: State, retry: RetryAt) -> Result<Permit<'_>, Rejected> {
        if mode == Mode::ObserveOnly {
            self.totals.add(crate::core::totals::WOULD_REJECT);
            Ok(Permit {
                breaker: self,
                admitted: Admitted::OBSERVED,
                started: Started::new(0),
            })
        } else {
            Err(self.rejection(state, retry))
        }
    }

    /// Records a call's outcome. The common case, a success in Closed under the
    /// consecutive rule alone with no failure count to clear, is decided here,
    /// inlined into the caller: one read of the state word, no shared write
    /// (the call is counted on this thread's own line, see `totals`).
    #[inline]
    fn finish(&self, admitted: Admitted, started: Started, outcome: Outcome) {
        // Closed, and holding no place of an adaptive limit (`PLACED`, also
        // set on a call timed for graded shedding).
        if outcome == Outcome::Success && !self.config.timed && admitted.closed_unplaced() {
            self.totals.add(crate::core::totals::SUCCESS);
            // No slow-call rule, and nothing in the word's payload: no
            // failure count to clear (consecutive rule), no window to
            // consult (failure-rate rule, see the `consult` module).
            let w = self.load();
            if w.payload() == 0 && w.same_period(admitted.word()) {
                return;
            }
            return self.closed_success(admitted, w, started);
        }
        self.finish_slow(admitted, started, outcome);
    }

    /// A success in Closed without the slow-call rule, which the word
    /// alone could not settle: a failure count to clear, a window to
    /// consult, or a permit of an earlier period.
    #[inline(never)]
    fn closed_success(&self, admitted: Admitted, w: Word, started: Started) {
        if self.config.failure_rate != 0.0 {
            return self.closed_success_rate(admitted, w, started);
        }
        // A permit of an earlier period is ignored; a window's call positions
        // leave it out (failures within a window).
        if w.same_period(admitted.word()) {
            self.finish_counted(admitted, started, Outcome::Success, true);
        } else {
            self.not_recorded();
        }
    }

    /// A success in Closed under the failure-rate rule alone, the word
    /// `w` asking it to consult the window (see `consult`): what
    /// `finish_closed` does for it.
    #[cold]
    #[inline(never)]
    fn closed_success_rate(&self, admitted: Admitted, w: Word, started: Started) {
        // Recording a success of a permit that is stale by 2^36 generations
        // only records a real outcome; the trip below checks in full.
        if !w.same_period(admitted.word()) {
            return self.not_recorded();
        }
        let window = self.window();
        if window.record(false, false, self.rule()) {
            return self.trip(admitted.with_epoch(started.value()).word(), Why::Rate);
        }
        self.consulted(w, &window);
    }

    /// The consecutive rule's failure count in the Closed word `w` (0 under
    /// the failure-rate rule, whose payload is the `consult` module's).
    pub(crate) fn consecutive_failures(&self, w: Word) -> u32 {
        if self.config.uses_consecutive() {
            w.payload()
        } else {
            0
        }
    }

    /// The rate rules' window, made on the first call that needs it, of
    /// the shape the settings in force give; held while the returned guard
    /// lives (a reconfiguration may replace it meanwhile, see `kept`).
    #[inline]
    pub(crate) fn window(&self) -> Read<'_, Window> {
        if let Some(window) = self.window.get() {
            return window;
        }
        #[cfg(not(loom))]
        return Read::Borrowed(
            self.first_window.get_or_init(|| {
                Window::new(self.settings().window, self.clock.coarse_resolution())
            }),
        );
        #[cfg(loom)]
        self.window
            .get_or_publish(|| Window::new(self.settings().window, self.clock.coarse_resolution()))
    }

    /// The window in force, if one was made yet.
    pub(crate) fn made_window(&self) -> Option<Read<'_, Window>> {
        if let Some(window) = self.window.get() {
            return Some(window);
        }
        #[cfg(not(loom))]
        return self.first_window.get().map(Read::Borrowed);
        #[cfg(loom)]
        None
    }

    /// What the window asks of the breaker to record a call.
    #[inline]
    fn rule(
        &self,
    ) -> crate::core::window::Rule<
        impl FnOnce(bool) -> u64 + '_,
        impl FnOnce() -> u64 + '_,
        impl FnOnce() -> u64 + '_,
        impl FnOnce(Tally) -> bool + '_,
    > {
        crate::core::window::Rule {
            now: |coarse| {
                if coarse {
                    self.clock.coarse_now()
                } else {
                    self.clock.now()
                }
            },
            calls: || self.totals.recorded(),
            min_calls: || u64::from(self.settings().min_calls),
            trips: |t| self.rate_trips(t),
        }
    }

    /// A success or failure counted in the totals that the window does not
    /// hold (a trial, or a permit of an earlier period): the window's call
    /// positions must leave it out.
    #[cold]
    fn not_recorded(&self) {
        if self.config.uses_window() {
            self.window().skip();
        }
    }

    /// The rate rules' window's totals now.
    pub(crate) fn window_tally(&self, now: u64) -> Tally {
        if !self.config.uses_window() {
            return Tally::default();
        }
        // Made here if no call needed it yet (a count window's successes
        // need it only once it holds an event): it holds the calls since
        // the breaker was made, or since its latest clear.
        self.window().tally(now, self.totals.recorded())
    }

    /// Counts and records every outcome but the common success.
    fn finish_slow(&self, admitted: Admitted, started: Started, outcome: Outcome) {
        self.finish_timed(admitted, started, outcome, outcome != Outcome::Neutral);
    }

    /// Records `outcome`; when `timed`, a call that took longer than `slow`
    /// is also a slow call (a neutral one only when it was abandoned: see
    /// `Permit::abandoned`).
    fn finish_timed(&self, admitted: Admitted, started: Started, outcome: Outcome, timed: bool) {
        self.finish_ended(admitted, started, outcome, timed, outcome.into());
    }

    /// [`finish_timed`](Self::finish_timed), the call's duration labelled
    /// `ended` (a timeout is a failure labelled apart).
    fn finish_ended(
        &self,
        admitted: Admitted,
        started: Started,
        outcome: Outcome,
        timed: bool,
        ended: durations::Ended,
    ) {
        if admitted.is_passive() {
            return;
        }
        self.took(admitted, started, ended);
        self.give_timed_place(admitted, started.value(), outcome);
        self.totals.outcome(outcome);
        self.finish_counted(admitted, started, outcome, timed);
    }

    fn finish_counted(&self, admitted: Admitted, started: Started, outcome: Outcome, timed: bool) {
        if admitted.is_observed() {
            // Counted by its outcome (above) and as `would_reject` (at
            // admission); the state machine did not admit it, and the
            // window's call positions leave it out.
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            return;
        }
        let slow = self.config.slow != 0
            && timed
            && self.clock.now().saturating_sub(started.value()) > self.config.slow;
        if slow {
            self.totals.add(crate::core::totals::SLOW);
        }
        // Without the slow-call rule or an adaptive limit, and not timed
        // for graded shedding or the duration histogram, `started` is the
        // generation counter at admission, and the epoch is stamped now.
        let admitted = if !self.config.timed && !started.timed() && !started.clocked() {
            admitted.with_epoch(started.value()).word()
        } else {
            admitted.word()
        };
        if admitted.tag() == Tag::Closed {
            if started.timed() && outcome == Outcome::Success {
                self.timed_for_shedding(started);
            }
            self.finish_closed(admitted, outcome, slow);
        } else {
            // Trials are not the window's: a closing one's count is in the
            // base the fresh window starts from.
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            // A slow trial is a failed trial when the slow-call rule is on.
            let outcome = if slow { Outcome::Failure } else { outcome };
            self.finish_trial(admitted, outcome);
        }
    }

    fn finish_closed(&self, admitted: Word, outcome: Outcome, slow: bool) {
        let mut w = self.load();
        if !self.still_current(admitted, w) {
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            return;
        }
        if outcome == Outcome::Failure && self.config.sheds() {
            self.shed_failure();
        }
        if self.config.uses_window() && (outcome != Outcome::Neutral || slow) {
            let window = self.window();
            if outcome == Outcome::Neutral {
                window.extra();
            }
            let failed = outcome == Outcome::Failure;
            if window.record(failed, slow, self.rule()) {
                self.trip(admitted, Why::Rate);
                return;
            }
            if (failed || slow) && self.config.uses_failure_rate() {
                self.consult_window(admitted, &window);
            }
        }
        if !self.config.uses_consecutive() {
            return;
        }
        loop {
            let failures = match outcome {
                Outcome::Neutral => return,
                Outcome::Success if w.payload() == 0 => return,
                Outcome::Success => 0,
                // The settings are read only where they can decide a trip.
                Outcome::Failure if w.payload() + 1 >= self.settings().threshold => {
                    self.trip(admitted, Why::Threshold);
                    return;
                }
                Outcome::Failure => w.payload() + 1,
            };
            match self.cas(w, w.with_payload(failures)) {
                Ok(()) => return,
                Err(actual) => w = actual,
            }
            if !self.still_current(admitted, w) {
                return;
            }
        }
    }

    fn rate_trips(&self, t: Tally) -> bool {
        if t.failures == 0 && t.slow == 0 {
            return false;
        }
        // Read only once the window holds something that could trip it.
        let config = self.settings();
        // Failures within the window: a count, whatever the calls around it.
        if config.within && t.failures >= u64::from(config.threshold) {
            return true;
        }
        if t.calls < u64::from(config.min_calls) {
            return false;
        }
        // Compare shares, not `rate * calls`: a division is correctly rounded, so
        // 7 failures of 100 give exactly the same f64 as the literal 0.07, whereas
        // 0.07 * 100.0 is 7.000000000000001 and 7 failures would not trip.
        #[allow(clippy::cast_precision_loss)] // exact below 2^53 calls
        let share = |n: u64| n as f64 / t.calls as f64;
        (config.failure_rate > 0.0 && share(t.failures) >= config.failure_rate)
            || (config.slow != 0 && share(t.slow) >= config.slow_rate)
    }

    fn finish_trial(&self, admitted: Word, outcome: Outcome) {
        let mut w = self.load();
        // A close is made holding the family's ejection budget, if any.
        let mut held = None;
        loop {
            if !self.still_current(admitted, w) {
                return;
            }
            if outcome == Outcome::Failure {
                // Whatever the round: a trial that failed is evidence.
                self.trip(admitted, Why::Trial);
                return;
            }
            if w.round() != admitted.round() {
                // Presumed lost; its slot was given to a new round.
                return;
            }
            let in_flight = w.in_flight().saturating_sub(1);
            let next = if outcome == Outcome::Neutral {
                w.with_trials(w.round(), in_flight, w.successes())
            } else if w.successes() + 1 >= self.settings().success_threshold {
                Word::closed(w.mode(), self.next_generation(), 0)
            } else {
                w.with_trials(w.round(), in_flight, w.successes() + 1)
            };
            match self.cas_counted(w, next, &mut held) {
                Ok(()) if next.tag() == Tag::Closed => {
                    drop(held);
                    self.clear_window();
                    self.consult_time_window();
                    self.last_transition
                        .store(self.clock.now(), Ordering::Relaxed);
                    self.transitioned(w, next, Why::Closed, 0);
                    return;
                }
                Ok(()) => return,
                Err(actual) => w = actual,
            }
        }
    }

    /// Closed or HalfOpen → Open, if the breaker is still in `admitted`'s state and
    /// generation (its payload may have moved meanwhile).
    fn trip(&self, admitted: Word, cause: Why) {
        // A trip from Closed asks the family's ejection budget, if any, and
        // is made holding it: the question and the trip are one decision.
        // (A failed trial reopens a breaker already ejected.)
        let mut held = None;
        if admitted.tag() == Tag::Closed {
            match self.ask_budget() {
                Ok(budget) => held = budget,
                Err(()) => return,
            }
        }
        let mut w = self.load();
        let now = self.clock.now();
        let (period, level) = self.open_period(now, cause == Why::Trial);
        let deadline = now.saturating_add(period);
        loop {
            if !self.still_current(admitted, w) {
                return;
            }
            match self.cas_counted(w, Word::open(w.mode(), deadline), &mut held) {
                Ok(()) => break,
                Err(actual) => w = actual,
            }
        }
        drop(held);
        self.level.store(level, Ordering::Relaxed);
        self.last_transition.store(now, Ordering::Relaxed);
        self.transitioned(w, Word::open(w.mode(), deadline), cause, period);
    }

    /// Empties the rate rules' window (made here if no call needed it
    /// yet): it holds the calls from now on.
    pub(crate) fn clear_window(&self) {
        if self.config.uses_window() {
            self.window().clear(self.totals.recorded());
        }
    }

    /// How long to stay open for a transition happening at `now`, and the
    /// growing open time's level after it.
    ///
    /// With a growing open time, `level` counts the opens since the dependency was
    /// last healthy for a while: each open lasts `recovery × 2^level` (capped at
    /// `max_recovery`) and raises the level; each full `recovery` spent closed
    /// before a trip lowers it by one.
    fn open_period(&self, now: u64, from_trial: bool) -> (u64, u32) {
        let config = self.settings();
        let base = config.recovery;
        let mut period = base;
        let mut level = self.level.load(Ordering::Relaxed);
        if config.max_recovery != 0 {
            if !from_trial {
                let closed_for = now.saturating_sub(self.last_transition.load(Ordering::Relaxed));
                let healthy = u32::try_from(closed_for / base).unwrap_or(u32::MAX);
                level = level.saturating_sub(healthy);
            }
            period = base
                .checked_shl(level)
                .filter(|p| p >> level == base)
                .map_or(config.max_recovery, |p| p.min(config.max_recovery));
            if period < config.max_recovery {
                level += 1;
            }
        }
        if config.jitter > 0.0 {
            period = self.jittered(period, config.jitter);
        }
        (period, level)
    }

    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )] // durations in f64 lose only sub-nanosecond precision below 2^53 ns (104 days)
    fn jittered(&self, period: u64, jitter: f64) -> u64 {
        let mut seed = self.rng.load(Ordering::Relaxed);
        if seed == 0 {
            seed = crate::core::clock::system_now()
                ^ (u64::from(std::process::id()) << 32)
                ^ (std::ptr::from_ref(self) as u64);
        }
        let (next, random) = splitmix64(seed);
        self.rng.store(next, Ordering::Relaxed);
        // Uniform in [-jitter, +jitter).
        let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
        let factor = 1.0 + jitter * (2.0 * unit - 1.0);
        (period as f64 * factor).max(1.0) as u64
    }
}

pub(crate) fn splitmix64(state: u64) -> (u64, u64) {
    let next = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = next;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (next, z ^ (z >> 31))
}

impl Breaker {
    /// A rejection by this breaker, counted.
    pub(crate) fn rejection(
        &self,
        state: crate::core::error::State,
        retry: crate::core::clock::RetryAt,
    ) -> crate::core::error::Rejected {
        self.totals.add(crate::core::totals::REJECTED);
        crate::core::error::Rejected::new(self.carried_name(), state, retry)
    }
}

/// Open on its own evidence (not forced): refused until its deadline.
#[inline(always)]
fn open_normally(w: Word) -> bool {
    w.tag() == Tag::Open && w.mode() == Mode::Normal
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
