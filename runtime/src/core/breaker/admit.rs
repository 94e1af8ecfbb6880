//! Admitting a call: the permit, or the refusal, decided on the state word.

use super::*;

/// What `Breaker::acquire_slow` decided.
enum Slow<'a> {
    /// Open, before the deadline: rejected (and counted).
    Open(RetryAt),
    /// Anything else.
    Decided(Result<Permit<'a>, Rejected>),
}

impl Breaker {
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
    pub(super) fn permit(&self, admitted: Word) -> Permit<'_> {
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
    pub(super) fn admit(&self, mut w: Word) -> Result<Permit<'_>, Rejected> {
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
