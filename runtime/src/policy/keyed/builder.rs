//! Building a [`Family`]: [`FamilyBuilder`].

use std::hash::Hash;
use std::time::Duration;

use crate::core::config::Builder;
use crate::core::error::ConfigError;
use crate::policy::bulkhead::Limit;

use super::{Bounds, DEFAULT_MAX_KEYS, Family};
use crate::core::breaker::Budget;

/// Builds a [`Family`]: the members' settings come from a breaker
/// [`Builder`], whose name becomes the family's, and so may the family's
/// own ([`Builder::max_keys`], [`Builder::max_ejection_percent`], the
/// same settings as this builder's setters of those names).
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FamilyBuilder<K> {
    breaker: Builder,
    max_concurrent: Option<u32>,
    max_wait: Duration,
    _key: std::marker::PhantomData<fn() -> K>,
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> FamilyBuilder<K> {
    /// At most this many breakers are kept (default 1024);
    /// see the [module docs](crate::keyed) for what happens when the family is full.
    /// It can change at run time: see [`Builder::max_keys`].
    pub fn max_keys(mut self, n: usize) -> Self {
        self.breaker = self.breaker.max_keys(n);
        self
    }

    /// Each key may run at most `n` calls at once (the attribute's
    /// `max_concurrent = n` beside `key`); a call past that is refused with
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit).
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = Some(n);
        self
    }

    /// A call that finds every place of its key taken waits this long at
    /// most for one, in turn (the attribute's `max_wait`), with
    /// [`max_concurrent`](Self::max_concurrent)
    /// and members without an adaptive limit (`build` refuses it beside
    /// [`Builder::adaptive_concurrency`]):
    /// the attribute's calls and the reqwest middleware's requests wait;
    /// the tower layer refuses at once all the same (a service's `call`
    /// does not wait).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// An ejection budget, as Envoy's outlier detection has: a member
    /// trips from Closed only if, after the trip, at most `percent` % of
    /// the stored members (rounded down, and at least one) are Open or
    /// HalfOpen. Of four replicas at 50 %, two may be open; of three at
    /// 50 %, one (1.5, rounded down), not two. A failure that would trip a
    /// member beyond the budget leaves it Closed, still counting (each
    /// further failure asks again), and is counted by
    /// [`FamilyStats::spared`](super::FamilyStats::spared). The budget is read and the trip made as one
    /// decision: members failing at the same moment never open more of the
    /// family between them than it allows.
    ///
    /// Only a trip from Closed asks. A failed trial reopens as usual (its
    /// member is ejected already); a member forced open
    /// ([`Breaker::set_mode`](crate::Breaker::set_mode)) or opened on a verdict reached elsewhere
    /// ([`integration::open_remote`](crate::integration::open_remote)) is
    /// not held back, and counts toward the budget while it is, as every
    /// Open or HalfOpen stored member does. The overflow breaker asks too,
    /// and is not counted.
    ///
    /// For a client failing over between replicas: when most of them
    /// fail at once, the fault is more likely the client's own (its
    /// network, its credentials) or a shared dependency's, and opening
    /// every breaker would refuse all traffic; with a budget, the rest
    /// keep being called. `percent` is from 1 to 100; 100 (the default)
    /// sets no budget. It can change at run time: see
    /// [`Builder::max_ejection_percent`].
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Family, State};
    ///
    /// let replicas: Family<String> = Family::builder(Breaker::builder().name("replicas").threshold(1))
    ///     .max_ejection_percent(50)
    ///     .build()?;
    /// let all = ["a", "b", "c"];
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Ok::<_, ()>(()));
    /// }
    /// // Then every replica fails: the client's network is down.
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Err::<(), _>("connection refused"));
    /// }
    /// // 50 % of three is 1.5: one may be ejected. `b` and `c` stay Closed,
    /// // still called.
    /// assert_eq!(replicas.get("a").state(), State::Open);
    /// assert_eq!(replicas.get("b").state(), State::Closed);
    /// assert_eq!(replicas.failover(&all).copied().collect::<Vec<_>>(), ["b", "c"]);
    /// assert_eq!(replicas.stats().spared, 2);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn max_ejection_percent(mut self, percent: u8) -> Self {
        self.breaker = self.breaker.max_ejection_percent(percent);
        self
    }

    /// The family, once the breaker settings are valid and `max_keys` is at
    /// least 1.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the setting that cannot work.
    pub fn build(self) -> Result<Family<K>, ConfigError> {
        let broken = |v| crate::core::config::broken(v).of(self.breaker.given_name());
        let bounds = DECLARED
            .patched(&self.breaker.patch)
            .map_err(|(key, reason)| ConfigError::new(key, reason).of(self.breaker.given_name()))?;
        if !self.max_wait.is_zero() {
            failfast_rules::max_wait(self.max_wait).map_err(broken)?;
            failfast_rules::max_wait_needs_max_concurrent(self.max_concurrent.is_some())
                .map_err(broken)?;
        }
        let (config, clock) = self.breaker.checked_with_clock()?;
        if !self.max_wait.is_zero() {
            // A wait is for a fixed number of places, as in the attribute.
            failfast_rules::max_wait_needs_fixed_limit(config.adaptive_range().is_some())
                .map_err(|v| crate::core::config::broken(v).of(&config.name))?;
        }
        Ok(Family::with_parts(
            config,
            clock,
            bounds,
            Limit::of(self.max_concurrent, self.max_wait),
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
            max_wait: Duration::ZERO,
            _key: std::marker::PhantomData,
        }
    }
}
