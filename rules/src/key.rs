//! The settings a rule is about, named as the attribute's keys, and the
//! table they are declared in.

/// The table of the settings: each key declared once, and everything
/// written about each key generated from it: [`Key`], [`Key::ALL`],
/// [`Key::name`], [`Key::kind`], [`Key::places`], [`Key::constant`],
/// [`Key::in_config`],
/// `sentence!`, the fields of [`Written`](crate::Written); in the runtime
/// the setters of the attribute's `const` settings and the checks of its
/// constants; in the macros the attribute's keys, what each parses, and
/// the `Written` its check resolves.
///
/// A row, in the order the attribute's docs list the keys:
///
/// ```text
/// /// docs
/// Variant name: Type, kind, [places], constant "its type", config setter;
/// ```
///
/// - `Type`: the value as [`Written`](crate::Written) holds it;
/// - `kind`: how the attribute reads it, a [`Kind`](crate::Kind);
/// - `places`: which of the attribute, a `breaker!` declaration and
///   `#[retry]` take it ([`Place`]);
/// - `constant`, when it takes a constant: the type one has, in messages
///   (its rule is `failfast_rules::<name>`);
/// - `config`, when it is one of the runtime's plain `Config` settings:
///   the `const` setter it is written with, taking a `Type`.
///
/// `settings_table!(callback { args })` calls `callback! { { args } rows }`, a
/// row as `[docs] Variant name (Type) {kind} [places] [constant] [setter]`.
#[macro_export]
#[doc(hidden)]
macro_rules! settings_table {
    ($($callback:ident)::+ { $($args:tt)* }) => {
        $crate::settings_table! { @rows [$($callback)::+] { $($args)* }
        /// `threshold`: consecutive counted failures that trip the breaker.
        Threshold threshold: u32, Kind::Count, [Attribute Declaration],
            constant "a `u32`", config with_threshold;
        /// `failure_rate`: the share of failed calls that trips the breaker.
        FailureRate failure_rate: f64, Kind::Number(failure_rate, "0.5"), [Attribute Declaration],
            constant "an `f64`", config with_failure_rate;
        /// `window`: the calls, or the time, a rate is measured over.
        Window window: Window, Kind::Shaped, [Attribute Declaration];
        /// `min_calls`: calls the window must hold before a rate can trip.
        MinCalls min_calls: u32, Kind::Count, [Attribute Declaration],
            constant "a `u32`", config with_min_calls;
        /// `slow`: the duration above which a call is slow.
        Slow slow: Duration, Kind::Duration, [Attribute Declaration],
            constant "a `Duration`", config with_slow;
        /// `slow_rate`: the share of slow calls that trips the breaker.
        SlowRate slow_rate: f64, Kind::Number(slow_rate, "0.5"), [Attribute Declaration],
            constant "an `f64`", config with_slow_rate;
        /// `shed`: graded shedding's multiplier `k`: calls are refused with
        /// chance `1 − k × accepted / sent`.
        Shed shed: f64, Kind::Number(shed, "2"), [Attribute Declaration],
            constant "an `f64`", config with_shed;
        /// `shed_window`: the time graded shedding measures over.
        ShedWindow shed_window: Duration, Kind::Duration, [Attribute Declaration],
            config with_shed_window;
        /// `timeout`: the time limit of an async call.
        Timeout timeout: Duration, Kind::Duration, [Attribute], config with_timeout;
        /// `max_concurrent`: calls admitted at once.
        MaxConcurrent max_concurrent: Concurrency, Kind::Shaped, [Attribute Declaration];
        /// `max_wait`: how long a call waits for a place under `max_concurrent`.
        MaxWait max_wait: Duration, Kind::Duration, [Attribute], config with_max_wait;
        /// `recovery`: the open time before a trial.
        Recovery recovery: Duration, Kind::Shaped, [Attribute Declaration],
            constant "a `Duration`", config with_recovery;
        /// `max_recovery`: the cap of a growing open time.
        MaxRecovery max_recovery: Duration, Kind::Shaped, [], config with_max_recovery;
        /// `jitter`: the random spread of each open period.
        Jitter jitter: f64, Kind::Number(jitter, "0.2"), [Attribute Declaration],
            constant "an `f64`", config with_jitter;
        /// `trial_calls`: trial calls admitted at once in half-open.
        TrialCalls trial_calls: u32, Kind::Count, [Attribute Declaration],
            constant "a `u32`", config with_trial_calls;
        /// `success_threshold`: successful trials needed to close.
        SuccessThreshold success_threshold: u32, Kind::Count, [Attribute Declaration],
            constant "a `u32`", config with_success_threshold;
        /// `trial_lease`: how long a trial permit may stay unresolved.
        TrialLease trial_lease: Duration, Kind::Duration, [], config with_trial_lease;
        /// `max_keys`: the most breakers a keyed family holds.
        MaxKeys max_keys: u32, Kind::Count, [Attribute Declaration];
        /// `max_ejection_percent`: a keyed family's ejection budget.
        MaxEjectionPercent max_ejection_percent: u32, Kind::Count, [Attribute Declaration];
        /// `attempts`: how many times `#[retry]` tries a call.
        Attempts attempts: u32, Kind::Count, [Retry];
        /// `backoff`: `#[retry]`'s delay before a retry.
        Backoff backoff: Duration, Kind::Shaped, [Retry];
        }
    };
    (@rows [$($callback:tt)*] $args:tt $(
        $(#[$doc:meta])*
        $variant:ident $name:ident: $ty:ty, $kind:expr, [$($place:ident)*]
        $(, constant $constant:literal)? $(, config $setter:ident)?;
    )*) => {
        $($callback)*! {
            $args
            $(
                [$(#[$doc])*] $variant $name ($ty) {$kind} [$($place)*]
                [$($constant)?] [$($setter)?]
            )*
        }
    };
}

/// Where a key is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Place {
    /// `#[circuit_breaker(…)]`.
    Attribute,
    /// `failfast::breaker!(static NAME = …)`, a breaker declared for
    /// functions to share.
    Declaration,
    /// `#[retry(…)]`.
    Retry,
}

/// [`Key`] and what is said of each key, from the table.
macro_rules! keys {
    ({} $([$(#[$doc:meta])*] $variant:ident $name:ident ($ty:ty) $kind:tt
        [$($place:ident)*] [$($constant:literal)?] [$($setter:ident)?])*) => {
        /// A setting, named as the attribute's key (and the builder's method).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Key {
            $($(#[$doc])* $variant,)*
        }

        impl Key {
            /// Every key, in the order the attribute's docs list them.
            pub const ALL: &'static [Key] = &[$(Key::$variant),*];

            /// The key as written: `"threshold"`, `"failure_rate"`, …
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Key::$variant => stringify!($name),)*
                }
            }

            /// Where the key is written: the attribute, a declaration,
            /// `#[retry]` (none for a setting of the builder's only).
            #[must_use]
            pub const fn places(self) -> &'static [Place] {
                match self {
                    $(Key::$variant => &[$(Place::$place),*],)*
                }
            }

            /// The type a constant given for the key has, for messages
            /// (`"a `u32`"`); `None` for a key written as a literal only.
            #[must_use]
            pub const fn constant(self) -> Option<&'static str> {
                match self {
                    $(Key::$variant => [$(Some($constant),)? None][0],)*
                }
            }

            /// Whether the key is one of the runtime's plain `Config`
            /// settings, which the attribute writes as `.<name>(value)`.
            #[must_use]
            pub const fn in_config(self) -> bool {
                match self {
                    $(Key::$variant => [$({ stringify!($setter); true },)? false][0],)*
                }
            }
        }
    };
    // `sentence!`: the key's match, each arm one `&'static str`.
    ({ $key:expr, $rest:literal }
        $($docs:tt $variant:ident $name:ident $ty:tt $kind:tt $places:tt $constant:tt
            $setter:tt)*) => {
        match $key {
            $(Key::$variant => concat!("`", stringify!($name), "`", $rest),)*
        }
    };
}

crate::settings_table!(keys {});
pub(crate) use keys;

impl Key {
    /// The key written as `name`, if there is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.iter().copied().find(|key| key.name() == name)
    }

    /// Whether `place` takes the key.
    #[must_use]
    pub fn written_in(self, place: Place) -> bool {
        self.places().contains(&place)
    }
}

/// `` "`key`" `` followed by `rest`, as one `&'static str` for every key:
/// what const evaluation can show, where nothing can be formatted.
macro_rules! sentence {
    ($key:expr, $rest:literal) => {
        $crate::settings_table!(crate::key::keys { $key, $rest })
    };
}
pub(crate) use sentence;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_named_once_and_found_by_its_name() {
        for (i, key) in Key::ALL.iter().enumerate() {
            assert_eq!(Key::from_name(key.name()), Some(*key));
            assert!(!Key::ALL[..i].contains(key));
            assert_eq!(sentence!(*key, "!"), format!("`{}`!", key.name()));
        }
        assert_eq!(Key::from_name("treshold"), None);
    }
}
