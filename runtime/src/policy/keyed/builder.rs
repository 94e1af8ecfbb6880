//! Building a [`Family`]: [`FamilyBuilder`].

use std::hash::Hash;

use crate::core::config::Builder;
use crate::core::error::ConfigError;
use crate::policy::bulkhead::Limit;

use super::{Bounds, DEFAULT_MAX_KEYS, Family};
use crate::core::breaker::Budget;

/// Builds a [`Family`]: the members' settings come from a breaker
/// [`Builder`], whose name becomes the family's, and so do the family's
/// own bounds ([`Builder::max_keys`], [`Builder::max_ejection_percent`]),
/// which change at run time as the members' settings do.
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FamilyBuilder<K> {
    breaker: Builder,
    max_concurrent: Option<u32>,
    _key: std::marker::PhantomData<fn() -> K>,
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> FamilyBuilder<K> {
    /// Each key may run at most `n` calls at once (the attribute's
    /// `max_concurrent = n` beside `key`); a call past that is refused with
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit).
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = Some(n);
        self
    }

    /// The family, once the breaker settings are valid and `max_keys` is at
    /// least 1.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the setting that cannot work.
    pub fn build(self) -> Result<Family<K>, ConfigError> {
        let mut breaker = self.breaker;
        // The members' wait is their bulkhead's, made here: the members'
        // breakers are checked without it.
        let max_wait = breaker.take_max_wait();
        let broken = |v| crate::core::config::broken(v).of(breaker.given_name());
        let bounds = DECLARED
            .patched(&breaker.patch)
            .map_err(|(key, reason)| ConfigError::new(key, reason).of(breaker.given_name()))?;
        if !max_wait.is_zero() {
            failfast_rules::max_wait(max_wait).map_err(broken)?;
            failfast_rules::max_wait_needs_max_concurrent(self.max_concurrent.is_some())
                .map_err(broken)?;
        }
        let (config, clock) = breaker.checked_with_clock()?;
        if !max_wait.is_zero() {
            // A wait is for a fixed number of places, as in the attribute.
            failfast_rules::max_wait_needs_fixed_limit(config.adaptive_range().is_some())
                .map_err(|v| crate::core::config::broken(v).of(&config.name))?;
        }
        Ok(Family::with_parts(
            config,
            clock,
            bounds,
            Limit::of(self.max_concurrent, max_wait),
            Budget::new(bounds.max_ejection_percent),
        ))
    }
}

/// A family's bounds unless set: 1024 keys, no ejection budget.
const DECLARED: Bounds = Bounds {
    max_keys: DEFAULT_MAX_KEYS,
    max_ejection_percent: failfast_rules::MAX_EJECTION_PERCENT as u8,
};

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Family<K> {
    /// A builder taking the members' settings (and the family's name) from
    /// `breaker`.
    pub fn builder(breaker: Builder) -> FamilyBuilder<K> {
        FamilyBuilder {
            breaker,
            max_concurrent: None,
            _key: std::marker::PhantomData,
        }
    }
}
