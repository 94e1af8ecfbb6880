//! Opening: the trip, and how long the breaker stays open (the growing
//! open time, the jitter).

use super::*;

impl Breaker {
    /// Closed or HalfOpen → Open, if the breaker is still in `admitted`'s state and
    /// generation (its payload may have moved meanwhile).
    pub(super) fn trip(&self, admitted: Word, cause: Why) {
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

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::splitmix64;

    /// The published SplitMix64 sequence from a state of 0 (Vigna's
    /// `splitmix64.c`): any change to the mixing is a change of numbers,
    /// which the spread of jittered periods alone cannot see.
    #[test]
    fn splitmix64_gives_the_published_sequence() {
        let (first, a) = splitmix64(0);
        let (second, b) = splitmix64(first);
        let (_, c) = splitmix64(second);
        assert_eq!(first, 0x9E37_79B9_7F4A_7C15);
        assert_eq!(
            [a, b, c],
            [
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F
            ]
        );
    }
}
