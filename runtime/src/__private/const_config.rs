//! The settings a breaker's `static` is built with, in `const` context.

use std::time::Duration;

#[cfg(doc)]
use crate::core::breaker::Breaker;
use crate::core::config::Config;

/// The settings `#[circuit_breaker]` writes into its breaker's `static`,
/// built in `const` context; every value was checked at expansion or by
/// [`consts`](super::consts). Not for users: they build with [`Breaker::builder`].
#[derive(Clone, Debug)]
pub struct ConstConfig(std::mem::ManuallyDrop<Config>);

macro_rules! const_setters {
    ($($key:ident: $ty:ty => $with:ident;)*) => {
        impl ConstConfig {
            $(
                #[doc = concat!("Sets `", stringify!($key), "`.")]
                #[must_use]
                pub const fn $key(self, value: $ty) -> Self {
                    let config = std::mem::ManuallyDrop::into_inner(self.0);
                    Self(std::mem::ManuallyDrop::new(config.$with(value)))
                }
            )*
        }
    };
}

// The settings of shapes of their own: a `window` of calls or of a time, a
// fixed `max_concurrent`.
const_setters! {
    window_calls: u32 => with_window_calls;
    window_time: Duration => with_window_time;
    bulkhead: u32 => with_bulkhead;
}

/// The setter of each plain setting of `Config`, from the table of the
/// settings (`failfast_rules::settings_table!`): named as its key, so that the
/// attribute writes `.<key>(value)`.
macro_rules! plain_setters {
    ({} $($docs:tt $variant:ident $name:ident ($ty:ty) $kind:tt $places:tt $constant:tt
        [$($setter:ident)?])*) => {
        const_setters! { $($($name: $ty => $setter;)?)* }
    };
}

failfast_rules::settings_table!(plain_setters {});

impl ConstConfig {
    /// The defaults, named `name`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self(std::mem::ManuallyDrop::new(Config::new(name)))
    }

    /// `threshold` counts the failures within `window`, not consecutive
    /// ones.
    #[must_use]
    pub const fn failures_within(self) -> Self {
        let config = std::mem::ManuallyDrop::into_inner(self.0);
        Self(std::mem::ManuallyDrop::new(config.with_failures_within()))
    }

    /// No `threshold`: graded shedding without a trip rule of its own.
    #[must_use]
    pub const fn without_threshold(self) -> Self {
        let config = std::mem::ManuallyDrop::into_inner(self.0);
        Self(std::mem::ManuallyDrop::new(config.without_threshold()))
    }

    /// `max_concurrent = MIN..=MAX`: an adaptive concurrency limit between
    /// `min` and `max` places (checked at expansion with
    /// `failfast_rules::adaptive_concurrency`).
    #[must_use]
    pub const fn adaptive_concurrency(self, min: u32, max: u32) -> Self {
        let config = std::mem::ManuallyDrop::into_inner(self.0);
        Self(std::mem::ManuallyDrop::new(
            config.with_adaptive_concurrency(min, max),
        ))
    }

    /// The settings.
    #[must_use]
    pub const fn into_config(self) -> Config {
        std::mem::ManuallyDrop::into_inner(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::breaker::{Breaker, Outcome};

    /// `max_concurrent = MIN..=MAX` writes the adaptive limit into the
    /// breaker's `const` settings.
    #[test]
    fn an_adaptive_limit_is_a_const_setting() {
        static ADAPTIVE: Breaker = Breaker::from_config(
            ConstConfig::new("private::adaptive")
                .threshold(100)
                .adaptive_concurrency(2, 8)
                .into_config(),
        );
        assert_eq!(ADAPTIVE.snapshot().concurrency_limit, Some(8));
        let fixed = Breaker::from_config(ConstConfig::new("private::fixed").into_config());
        assert_eq!(fixed.snapshot().concurrency_limit, None);
        for _ in 0..10 {
            ADAPTIVE.acquire().unwrap().record(Outcome::Failure);
        }
        assert_eq!(ADAPTIVE.snapshot().concurrency_limit, Some(2));
    }
}
