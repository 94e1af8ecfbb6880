//! Call durations, for the `metrics` feature's histogram: the breaker times
//! its calls only once a recorder was found ([`record_durations`]), and
//! announces each call's duration at [`TOOK`] with how it ended.
//!
//! A breaker with the slow-call rule or an adaptive limit times every call
//! already (its permit's `Started` word is the precise clock at
//! admission). Any other breaker's permit holds the generation counter
//! there; while durations are recorded it holds the precise clock instead,
//! marked `CLOCKED` (`core::word`), with the epoch stamped in the admitted
//! word and `PLACED` set, which takes the call off `finish`'s fast path.
//! Until then a call reads one relaxed atomic more, and no clock; without
//! the `metrics` feature, not even that.

#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// Whether calls are timed for the duration histogram: set once a
/// recorder is found (`ops::metrics`), never cleared.
#[cfg(feature = "metrics")]
static DURATIONS: AtomicBool = AtomicBool::new(false);

/// From now on every breaker times its calls and announces their
/// durations at [`TOOK`].
#[cfg(feature = "metrics")]
pub(crate) fn record_durations() {
    DURATIONS.store(true, Ordering::Relaxed);
}

/// Whether calls are timed for the duration histogram: one relaxed load
/// with the `metrics` feature, and `false`, which the compiler folds away,
/// without it.
#[inline(always)]
pub(crate) fn durations_recorded() -> bool {
    #[cfg(feature = "metrics")]
    return DURATIONS.load(Ordering::Relaxed);
    #[cfg(not(feature = "metrics"))]
    false
}

/// How a timed call ended, as the histogram labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Success = 0,
    Failure = 1,
    Neutral = 2,
    /// Cut off at its time limit (also a failure).
    Timeout = 3,
}

impl From<Outcome> for Ended {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => Ended::Success,
            Outcome::Failure => Ended::Failure,
            Outcome::Neutral => Ended::Neutral,
        }
    }
}

/// Told of each timed call's end on the calling thread, with its duration
/// in nanoseconds on the breaker's clock: must not block.
#[linkme::distributed_slice]
pub(crate) static TOOK: [fn(&Breaker, Ended, u64)];

impl Breaker {
    /// A permit for a call in `admitted`, timed for the duration
    /// histogram: see the module docs.
    #[cold]
    #[inline(never)]
    pub(super) fn clocked_permit(&self, admitted: Word, counter: u64) -> Permit<'_> {
        Permit {
            breaker: self,
            admitted: Admitted::new(admitted).with_epoch(counter).placing(),
            started: Started::clocked_from(self.clock.now()),
        }
    }

    /// A call admitted under `admitted` at `started` ended as `ended`:
    /// its duration is announced, if it was timed.
    #[inline]
    pub(super) fn took(&self, admitted: Admitted, started: Started, ended: Ended) {
        if started.clocked() || (self.config.timed && durations_recorded()) {
            if admitted.is_observed() {
                return;
            }
            self.announce_took(started, ended);
        }
    }

    #[cold]
    #[inline(never)]
    fn announce_took(&self, started: Started, ended: Ended) {
        let took = self.clock.now().saturating_sub(started.value());
        for told in TOOK {
            told(self, ended, took);
        }
    }
}
