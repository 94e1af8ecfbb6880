//! Graded shedding on a breaker's calls (see the `shed` module for the
//! rule and its window), and the admission of a closed call it guards
//! with an adaptive limit (`limit` module).

use super::transition::{Counts as TransitionCounts, Guard};
use super::*;
use crate::core::config::{TIME_BUCKETS, Window as Shape};
use crate::core::shed::{self, Counts, LOOK_EVERY, Period};
use crate::core::totals::{ADMITTED, NEUTRAL, SHED, SUCCESS, WOULD_REJECT};

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
            if w.mode() == MODE_DISABLED {
                self.totals.add(WOULD_REJECT);
            } else {
                return Err(self.shed_rejection());
            }
        }
        let placed = self.config.adaptive != 0;
        if placed {
            self.take_place(w.mode())?;
        }
        if self.config.sheds() {
            self.count_admitted();
        }
        let mut permit = self.permit(w);
        if placed {
            permit.admitted |= PLACED;
        }
        Ok(permit)
    }

    /// Counts a call admitted under graded shedding; every
    /// [`LOOK_EVERY`]th one on a thread looks for a new period.
    #[inline(always)]
    pub(super) fn count_admitted(&self) {
        if self.totals.admit() % LOOK_EVERY == 0 {
            self.look();
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
        chance != 0 && shed::draw() < chance
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
        let period = self.shed_period();
        // The totals are summed over the threads' shards once, for the
        // mark and the chance alike (the first mark needs none).
        let mut now = None;
        if self.shed.roll(period, || *now.insert(self.shed_counts())) {
            self.reconsider_shedding(period, now.unwrap_or_else(|| self.shed_counts()));
            true
        } else {
            false
        }
    }

    /// A counted failure in Closed: the chance is worked out again.
    #[cold]
    pub(super) fn shed_failure(&self) {
        let period = self.shed_period();
        let now = self.shed_counts();
        self.shed.roll(period, || now);
        self.reconsider_shedding(period, now);
    }

    /// The chance of refusal over the window of `period`, the totals being
    /// `now`.
    fn reconsider_shedding(&self, period: Period, now: Counts) {
        let settings = self.settings();
        let window = now.since(self.shed.base(period));
        let chance = window.chance(settings.shed(), settings.min_calls);
        drop(settings);
        let before = self.hot.shed.swap(chance, Ordering::Relaxed);
        if (before == 0) != (chance == 0) {
            let counts = TransitionCounts {
                window_calls: window.admitted,
                window_failures: window.admitted.saturating_sub(window.accepted),
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

    /// The period of the shedding window now: `window / 20` long.
    fn shed_period(&self) -> Period {
        let width = match self.settings().window {
            Shape::Time(t) => t / u64::from(TIME_BUCKETS),
            // Refused with `shed` when settings are checked.
            Shape::Calls(_) => u64::MAX,
        };
        Period::at(self.clock.coarse_now(), width)
    }

    fn shed_counts(&self) -> Counts {
        let sums = self.totals.sums().counts;
        Counts {
            admitted: sums[ADMITTED],
            succeeded: sums[SUCCESS],
            neutral: sums[NEUTRAL],
        }
    }

    /// Starts the shedding window afresh, refusing nothing: on closing,
    /// on a reset, on a new window shape. Whether it was shedding: the
    /// caller announces that it stopped (`shedding_changed`) once its own
    /// transition, if any, is queued.
    #[must_use]
    pub(crate) fn clear_shedding(&self) -> bool {
        if !self.config.sheds() {
            return false;
        }
        let before = self.hot.shed.swap(0, Ordering::Relaxed);
        self.shed.clear(self.shed_period(), self.shed_counts());
        before != 0
    }

    /// The chance that graded shedding refuses a call now.
    pub(crate) fn shedding(&self) -> f64 {
        shed::share(self.hot.shed.load(Ordering::Relaxed))
    }
}
