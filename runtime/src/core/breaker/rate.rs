//! The rate rules' window: made on first use, read, tripped on, cleared;
//! and the consecutive rule's failure count.

use super::*;

impl Breaker {
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
    pub(super) fn rule(
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
    pub(super) fn not_recorded(&self) {
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

    /// Empties the rate rules' window (made here if no call needed it
    /// yet): it holds the calls from now on.
    pub(crate) fn clear_window(&self) {
        if self.config.uses_window() {
            self.window().clear(self.totals.recorded());
        }
    }
}
