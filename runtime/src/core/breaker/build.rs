//! Building a breaker: [`Builder::build`], [`Breaker::builder`], `TryFrom<Config>`.

use super::Breaker;
use crate::core::config::{Builder, Config};
use crate::core::error::ConfigError;

impl Builder {
    /// Checks the settings and builds the breaker.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the setting when a value is out of range (zero
    /// counts or durations, rates outside (0, 1]) or settings contradict each other
    /// (`threshold` with `failure_rate`, a window without a rate rule, `slow_rate`
    /// without `slow`), or a keyed family's own setting
    /// ([`max_keys`](Builder::max_keys), [`max_ejection_percent`](Builder::max_ejection_percent)).
    pub fn build(self) -> Result<Breaker, ConfigError> {
        if let Some(key) = self.patch.family_key() {
            let refused = ConfigError::new(key, crate::core::config::FAMILY_ONLY);
            return Err(refused.of(self.given_name()));
        }
        let mode = self.patch.mode;
        let (config, clock) = self.checked_with_clock()?;
        let breaker = Breaker::with_clock(config, clock);
        if let Some(mode) = mode.filter(|&m| m != super::Mode::Normal) {
            breaker.set_mode(mode);
        }
        Ok(breaker)
    }
}

impl Breaker {
    /// Starts building a breaker. See [`Builder`].
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The settings it was built or declared with, before any
    /// [`reconfigure`](Self::reconfigure).
    #[must_use]
    pub(crate) fn declared_config(&self) -> &Config {
        &self.config
    }
}

/// A breaker with `config`, checked as [`Builder::build`] checks settings, on
/// the system clock.
impl TryFrom<Config> for Breaker {
    type Error = ConfigError;

    fn try_from(config: Config) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Breaker::from_config(config))
    }
}
