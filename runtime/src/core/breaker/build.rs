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
    /// without `slow`).
    pub fn build(self) -> Result<Breaker, ConfigError> {
        let (config, clock) = self.checked_with_clock()?;
        Ok(Breaker::with_clock(config, clock))
    }
}

impl Breaker {
    /// Starts building a breaker. See [`Builder`].
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The breaker's settings.
    #[must_use]
    pub fn config(&self) -> &Config {
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
