//! Graded shedding on a breaker's calls (see the `shed` module for the
//! rule and its window), and the admission of a closed call it guards
//! with an adaptive limit (`limit` module).

use super::transition::{Counts as TransitionCounts, Guard};
use super::*;
use crate::core::config::TIME_BUCKETS;
use crate::core::shed::{self, Counts, LOOK_EVERY, Period};
use crate::core::totals::{ADMITTED, FAILURE, NEUTRAL, SHED, SUCCESS, WITHDRAWN, WOULD_REJECT};

/// In the chance word (`Hot::shed`): the next call is let through as a
/// probe. The chance's lowest bit (2^-32 of a chance, nothing to a draw).
const PROBE: u32 = 1;

/// Told when graded shedding starts or stops refusing calls, with the
/// chance of refusal now (0 when it stopped), on the thread that saw it:
/// `metrics` watches it. Listeners and `tracing` get an event
/// ([`TransitionReason::SheddingStarted`]) in order with the transitions.
#[linkme::distributed_slice]
pub(crate) static SHEDDING: [fn(&Breaker, f64)];

impl Breaker {
    /// A call in Closed under graded shedding or an adaptive limit: refused
    /// with the shedding chance in force, or for want of a place, or
    /// admitted. Observe-only, a call either would refuse is let through
    /// and counted as `would_reject`.
    #[inline(always)]
    pub(super) fn admit_guarded(&self, w: Word) -> Result<Permit<'_>, Rejected> {
        let chance = self.hot.shed.load(Ordering::Relaxed);
        if chance != 0 && self.sheds_now(chance) {
            if w.mode() == Mode::ObserveOnly {
                self.totals.add(WOULD_REJECT);
            } else {
                return Err(self.shed_rejection());
            }
        }
        let placed = self.config.adaptive != 0;
        if placed {
            self.take_place(w.mode())?;
        }
        let timed = self.config.sheds() && self.count_admitted();
        let mut permit = self.permit(w);
        if timed {
            self.time_for_shedding(&mut permit);
        }
        if placed {
            permit.admitted = permit.admitted.placing();
        }
        Ok(permit)
    }

    /// Counts a call admitted under graded shedding; every
    /// [`LOOK_EVERY`]th one on a thread looks for a new period. The call
    /// that marks one is timed (whether it is): one call a period at most.
    #[inline(always)]
    fn count_admitted(&self) -> bool {
        self.totals.admit() % LOOK_EVERY == 0 && self.look()
    }

    /// Times `permit`'s call for graded shedding's patience (the `shed`
    /// module): its start in `started`, marked `TIMED` (`core::word`). Without the
    /// slow-call rule or an adaptive limit `started` held the generation
    /// counter, whose part the admitted word takes now, and the start is
    /// read on the coarse clock; with either, or timed for the duration
    /// histogram (`CLOCKED`, on the precise clock), `started` is the start
    /// already, and `finish` never takes its fast path.
    #[cold]
    #[inline(never)]
    fn time_for_shedding(&self, permit: &mut Permit<'_>) {
        if !self.config.timed && !permit.started.clocked() {
            // `PLACED` takes the call off `finish`'s fast path, as a place
            // of an adaptive limit would: this breaker has none, so giving
            // it back does nothing.
            permit.admitted = permit.admitted.with_epoch(permit.started.value()).placing();
            permit.started = Started::timed_from(self.clock.coarse_now());
        } else {
            permit.started = permit.started.timing();
        }
    }

    /// A timed call succeeded: how long it took goes into the window.
    #[cold]
    #[inline(never)]
    pub(super) fn timed_for_shedding(&self, started: Started) {
        // Timed for the duration histogram: on the precise clock.
        let now = if self.config.timed || started.clocked() {
            self.clock.now()
        } else {
            self.clock.coarse_now()
        };
        let took = now.saturating_sub(started.value());
        // Marked by the coarse clock, which the precise one may be ahead of.
        let at = self.clock.coarse_now();
        if !self.shed.timed(at, took) {
            self.look();
            self.shed.timed(at, took);
        }
    }

    /// A call the breaker admitted under graded shedding is taken out of
    /// the calls started: it waits in a bulkhead's line, or was refused by
    /// it. `admitted` is its permit's admitted word.
    pub(crate) fn withdraw(&self, admitted: Admitted) {
        if self.config.sheds() && admitted.closed() {
            self.totals.add(WITHDRAWN);
        }
    }

    /// A call withdrawn while it waited in a bulkhead's line starts now.
    pub(crate) fn readmit(&self, admitted: Admitted) {
        if self.config.sheds() && admitted.closed() {
            self.totals.add(ADMITTED);
        }
    }

    /// Whether to refuse this call, the chance being `chance`: while
    /// shedding, every call looks for a new period, so the chance follows
    /// the dependency's recovery from one period to the next.
    #[cold]
    #[inline(never)]
    fn sheds_now(&self, chance: u32) -> bool {
        let chance = if self.look() {
            self.hot.shed.load(Ordering::Relaxed)
        } else {
            chance
        };
        // A probe is due (`PROBE`): the one call that takes it goes.
        if chance & PROBE != 0
            && self
                .hot
                .shed
                .compare_exchange(
                    chance,
                    chance & !PROBE,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return false;
        }
        chance & !PROBE != 0 && shed::draw() < chance
    }

    #[cold]
    #[inline(never)]
    fn shed_rejection(&self) -> Rejected {
        self.totals.add(SHED);
        Rejected::shed(self.carried_name())
    }

    /// Marks the period begun, if no call did yet, and then works the
    /// chance out again; whether it did.
    #[cold]
    #[inline(never)]
    fn look(&self) -> bool {
        let at = self.clock.coarse_now();
        if self.shed.marked_at(at) {
            return false;
        }
        let period = self.shed_period_at(at);
        // The totals are summed over the threads' shards once, for the
        // mark and the chance alike (the first mark needs none).
        let mut now = None;
        if self.shed.roll(period, || *now.insert(self.shed_counts())) {
            self.reconsider_shedding(period, at, now.unwrap_or_else(|| self.shed_counts()));
            true
        } else {
            false
        }
    }

    /// A counted failure in Closed: the chance is worked out again.
    #[cold]
    pub(super) fn shed_failure(&self) {
        let (period, at) = self.shed_now();
        let now = self.shed_counts();
        self.shed.roll(period, || now);
        self.reconsider_shedding(period, at, now);
    }

    /// The chance of refusal over the window of `period` at `at`, the
    /// totals being `now`.
    fn reconsider_shedding(&self, period: Period, at: u64, now: Counts) {
        let settings = self.settings();
        let length = period.width.saturating_mul(u64::from(TIME_BUCKETS));
        let window = self.shed.window(period, at, now, length);
        if window.refusals_only() && self.hot.shed.load(Ordering::Relaxed) != 0 {
            // No call was sent in the window, and none is running: the
            // evidence has left it, and the chance stands until a probe,
            // the next call, brings more.
            self.hot.shed.fetch_or(PROBE, Ordering::Relaxed);
            return;
        }
        let chance = window.chance(settings.shed(), settings.min_calls) & !PROBE;
        drop(settings);
        let before = self.hot.shed.swap(chance, Ordering::Relaxed);
        if (before == 0) != (chance == 0) {
            let counts = TransitionCounts {
                window_calls: window.requests,
                window_failures: window.sent - window.accepted,
                ..TransitionCounts::default()
            };
            self.shedding_changed(chance, counts);
        }
    }

    /// Graded shedding started refusing calls with `chance`, or stopped (0).
    #[cold]
    pub(super) fn shedding_changed(&self, chance: u32, counts: TransitionCounts) {
        for observe in SHEDDING {
            // An observer's panic is its own: the breaker carries on.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                observe(self, shed::share(chance));
            }));
        }
        self.guard_changed(Guard::Shedding, counts);
    }

    /// The period of the shedding window now (`window / 20` long), and
    /// now on the coarse clock.
    fn shed_now(&self) -> (Period, u64) {
        let now = self.clock.coarse_now();
        (self.shed_period_at(now), now)
    }

    /// The period of the shedding window at `now`.
    fn shed_period_at(&self, now: u64) -> Period {
        Period::at(now, self.settings().shed_window() / u64::from(TIME_BUCKETS))
    }

    fn shed_counts(&self) -> Counts {
        let sums = self.totals.sums().counts;
        Counts {
            admitted: sums[ADMITTED],
            withdrawn: sums[WITHDRAWN],
            succeeded: sums[SUCCESS],
            failed: sums[FAILURE],
            neutral: sums[NEUTRAL],
            shed: sums[SHED],
        }
    }

    /// Starts the shedding window afresh, refusing nothing: on closing,
    /// on a reset. Whether it was shedding: the
    /// caller announces that it stopped (`shedding_changed`) once its own
    /// transition, if any, is queued.
    #[must_use]
    pub(crate) fn clear_shedding(&self) -> bool {
        if !self.config.sheds() {
            return false;
        }
        let before = self.hot.shed.swap(0, Ordering::Relaxed);
        self.shed.clear(self.shed_now().0, self.shed_counts());
        before != 0
    }

    /// The chance that graded shedding refuses a call now.
    pub(crate) fn shedding(&self) -> f64 {
        shed::share(self.hot.shed.load(Ordering::Relaxed))
    }
}
