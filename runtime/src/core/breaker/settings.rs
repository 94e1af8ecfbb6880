//! Settings changed at run time: the tuning a breaker reads where it decides
//! something, and [`Breaker::reconfigure`].

use super::{Breaker, Origin, Origins};
use crate::core::config::Builder;
use crate::core::config::{Config, Window};
use crate::core::config::{FIXED, Patch};
use crate::core::error::ConfigError;
use crate::core::kept::Read;
use crate::sync::Ordering;

impl Breaker {
    /// The settings in force, held while the returned guard lives: one
    /// flag read while the breaker was never reconfigured, then a guard of
    /// `kept`'s (no shared write).
    #[inline]
    pub(crate) fn settings(&self) -> Read<'_, Config> {
        self.tuning.get().unwrap_or(Read::Borrowed(&self.config))
    }

    /// The settings in force: as built or declared, with any change made by
    /// [`reconfigure`](Self::reconfigure) applied.
    #[must_use]
    pub fn config(&self) -> Config {
        self.settings().clone()
    }

    /// Changes the settings of this breaker while it runs to those set on
    /// `settings` (the others stay as they are): checked whole, applied whole
    /// or not at all. See [the module](mod@crate::ops::configure) for what can
    /// change and when it takes effect.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Mode};
    ///
    /// let breaker = Breaker::builder().name("payments").threshold(5).build()?;
    /// breaker.reconfigure(&Breaker::builder().threshold(10).mode(Mode::ObserveOnly))?;
    /// assert_eq!(breaker.config().threshold(), 10);
    /// assert_eq!(breaker.snapshot().mode, Mode::ObserveOnly);
    ///
    /// // The name, `slow`, `trial_lease` and the clock are fixed once built.
    /// let error = breaker.reconfigure(&Breaker::builder().name("other")).unwrap_err();
    /// assert_eq!(error.key(), "name");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the breaker, the key and the reason; the
    /// breaker is left as it was.
    pub fn reconfigure(&self, settings: &Builder) -> Result<(), ConfigError> {
        if let Some(key) = settings.fixed {
            return Err(ConfigError::refused(self.name(), key, FIXED));
        }
        self.apply(&settings.patch, Origin::RunTime)
    }

    /// [`reconfigure`](Self::reconfigure) with the settings a patch holds,
    /// each recorded as coming `from` there.
    pub(crate) fn apply(&self, patch: &Patch, from: Origin) -> Result<(), ConfigError> {
        self.publish_settings(
            |current| {
                patch
                    .applied_to(current)
                    .map(Some)
                    .map_err(|(key, reason)| ConfigError::refused(self.name(), key, reason))
            },
            |origins| origins.with(patch.keys(), from),
        )?;
        if let Some(mode) = patch.mode {
            self.set_mode(mode);
        }
        Ok(())
    }

    /// Publishes the settings `next` makes of those in force, if any, and
    /// where they came from, `origins` of those recorded, under the right
    /// to publish (nothing when `next` refuses).
    fn publish_settings(
        &self,
        next: impl FnOnce(&Config) -> Result<Option<Config>, ConfigError>,
        origins: impl FnOnce(Origins) -> Origins,
    ) -> Result<(), ConfigError> {
        let mut tuning = self.tuning.publisher();
        let current = tuning.latest().unwrap_or(Read::Borrowed(&self.config));
        let next = next(&current)?;
        self.record_origins(origins(self.origins()));
        let Some(next) = next else {
            return Ok(());
        };
        let reshaped = next.window != current.window;
        drop(current);
        if reshaped {
            // A new shape: a fresh, empty window, published before the
            // settings that describe it (see the module docs on races).
            self.reshape(next.window);
        }
        let time_limit = next.timeout;
        let limits = super::limit::Limits::of(&next);
        tuning.publish(next);
        // Under the right to publish, so the last settings published set
        // them.
        self.time_limit.store(time_limit, Ordering::Relaxed);
        self.limits_changed(limits);
        drop(tuning);
        for observe in super::transition::RECONFIGURED {
            observe(self);
        }
        Ok(())
    }
}

impl Breaker {
    /// The time limit in force for a call starting now (`timeout`), in
    /// nanoseconds, 0 if the breaker has none: one relaxed load. A call
    /// reads it once, as it starts, and keeps it: a change applies to the
    /// calls that start after.
    #[inline]
    pub(crate) fn time_limit(&self) -> u64 {
        self.time_limit.load(Ordering::Relaxed)
    }

    /// The settings it was declared (or built) with: a family's member's
    /// are its family's when it was made.
    pub(crate) fn declared(&self) -> &Config {
        &self.config
    }

    /// Replaces the settings in force with `next`, this breaker's (its
    /// declared ones, or its family's, with a section applied), coming
    /// from `origins`: nothing is published when they are those in force;
    /// a new window's shape starts a fresh window, as [`apply`](Self::apply)
    /// does. Leaves the mode alone.
    pub(crate) fn replace(&self, next: Config, origins: Origins) {
        let replaced: Result<(), ConfigError> = self.publish_settings(
            |current| Ok((*current != next).then_some(next)),
            |_| origins,
        );
        debug_assert!(replaced.is_ok(), "a replacement is never refused");
    }
}

impl Breaker {
    /// Publishes a fresh, empty window of `shape`, holding the calls from
    /// now on. The window it replaces is freed once no call reads it (see
    /// `kept`): a call still recording into it is safe, and lost to the new
    /// window.
    ///
    /// Successes consult a time window always, a count window only once an
    /// event finds it unsettled (the `consult` module): the word says
    /// which, set to "no" before a count window is published (an event in
    /// it sets it again) and to "yes" after a time window is.
    fn reshape(&self, shape: Window) {
        let fresh = crate::core::window::Window::new(shape, self.clock.coarse_resolution());
        fresh.clear(self.totals.recorded());
        if !fresh.is_time() {
            self.consult(false);
        }
        self.window.publisher().publish(fresh);
        self.consult_time_window();
    }
}

impl Breaker {
    /// A new breaker with this one's declared settings and clock, and no
    /// history: a test scope's stand-in for a declared breaker.
    #[cfg(feature = "testing")]
    pub(crate) fn fresh_copy(&self) -> Breaker {
        Breaker::with_clock(self.config.clone(), self.clock.clone())
    }

    /// Settings published by reconfigurations so far.
    #[cfg(test)]
    pub(crate) fn reconfigurations(&self) -> usize {
        self.tuning.published()
    }
}
