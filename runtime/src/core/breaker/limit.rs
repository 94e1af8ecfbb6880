//! An adaptive concurrency limit (`Builder::adaptive_concurrency`): at most
//! `limit` closed calls at once, the limit moved by AIMD on the calls'
//! outcomes, between the configured least and most places.
//!
//! Additive increase, multiplicative decrease, as Netflix's
//! `concurrency-limits` AIMD limit does: a counted failure (a timeout
//! included) cuts the limit by a tenth; a success raises it by one, but only
//! while at least half of the limit is in use, so that a lightly used
//! breaker does not drift up to its most places and then let a burst
//! through. Half-open trials take no place: the trial rules already hold
//! them to `trial_calls`.
//!
//! The places taken are one counter, written by every call admitted (a
//! compare-and-swap in, a subtraction out), on a line of its own, made on
//! the first call. Every permit of a closed call holds a place, and every
//! path that resolves one (an outcome, a drop, a refusal by a bulkhead, a
//! time limit) gives it back once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::core::totals::{REJECTED, WOULD_REJECT};

/// The places taken and the limit in force, on a line of their own.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Places {
    taken: AtomicU32,
    limit: AtomicU32,
}

/// A breaker's places, made on the first call that needs them.
#[derive(Debug)]
pub(crate) struct Limit(OnceLock<Box<Places>>);

impl Limit {
    pub(crate) const fn new() -> Self {
        Self(OnceLock::new())
    }
}

impl Breaker {
    fn places(&self, most: u32) -> &Places {
        self.limit.0.get_or_init(|| {
            Box::new(Places {
                taken: AtomicU32::new(0),
                limit: AtomicU32::new(most),
            })
        })
    }

    /// Takes a place for a closed call, if one is free. Observe-only, a
    /// call that finds none takes one all the same and is counted as
    /// `would_reject`.
    #[cold]
    #[inline(never)]
    pub(super) fn take_place(&self, mode: u64) -> Result<(), Rejected> {
        let Some((_, most)) = self.config.adaptive_range() else {
            return Ok(());
        };
        let places = self.places(most);
        let limit = places.limit.load(Ordering::Relaxed);
        let mut taken = places.taken.load(Ordering::Relaxed);
        while taken < limit {
            match places.taken.compare_exchange_weak(
                taken,
                taken + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => taken = now,
            }
        }
        if mode == MODE_DISABLED {
            self.totals.add(WOULD_REJECT);
            places.taken.fetch_add(1, Ordering::Acquire);
            return Ok(());
        }
        self.totals.add(REJECTED);
        Err(Rejected::concurrency_limit(
            self.carried_name(),
            State::Closed,
        ))
    }

    /// A permit admitted under `admitted` ended with `outcome`: its place
    /// (a closed call's) is given back, and the limit moves.
    #[inline]
    pub(super) fn give_place(&self, admitted: u64, outcome: Outcome) {
        if admitted & PLACED != 0 && Word(admitted).tag() == TAG_CLOSED {
            self.place_given(outcome);
        }
    }

    #[cold]
    #[inline(never)]
    fn place_given(&self, outcome: Outcome) {
        let Some((least, most)) = self.config.adaptive_range() else {
            return;
        };
        let places = self.places(most);
        // Taken before this one was given back: this call's included.
        let taken = places.taken.fetch_sub(1, Ordering::Release);
        match outcome {
            Outcome::Failure => {
                let cut = |limit: u32| Some((limit * 9 / 10).max(least));
                let before = places
                    .limit
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, cut)
                    .unwrap_or_else(|limit| limit);
                if before == most && least < most {
                    self.limit_changed();
                }
            }
            Outcome::Success => {
                let limit = places.limit.load(Ordering::Relaxed);
                if limit < most && taken.saturating_mul(2) >= limit {
                    // A lost race is another call's raise: one is enough.
                    let raised = places.limit.compare_exchange(
                        limit,
                        limit + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    if raised.is_ok() && limit + 1 == most {
                        self.limit_changed();
                    }
                }
            }
            Outcome::Neutral => {}
        }
    }

    /// The adaptive limit in force, if the breaker has one.
    pub(crate) fn concurrency_limit(&self) -> Option<u32> {
        let (_, most) = self.config.adaptive_range()?;
        Some(self.places(most).limit.load(Ordering::Relaxed))
    }

    /// The adaptive limit in force, 0 without one (for events).
    pub(super) fn limit_in_force(&self) -> u32 {
        self.concurrency_limit().unwrap_or(0)
    }

    /// Whether the adaptive limit is below its most places now.
    pub(super) fn limit_lowered(&self) -> bool {
        self.config
            .adaptive_range()
            .is_some_and(|(_, most)| self.places(most).limit.load(Ordering::Relaxed) < most)
    }

    /// Back to the most places, on a reset.
    pub(super) fn restore_limit(&self) {
        let Some((_, most)) = self.config.adaptive_range() else {
            return;
        };
        if self.places(most).limit.swap(most, Ordering::Relaxed) != most {
            self.limit_changed();
        }
    }
}
