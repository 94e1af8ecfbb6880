//! The rules of failfast's breaker settings, written once for the
//! `#[circuit_breaker]` attribute (which checks literals as it expands, and
//! constants by const evaluation) and for the runtime (`Breaker::builder`,
//! deserialized configurations, run-time overrides):
//!
//! - the limits and defaults ([`MAX_THRESHOLD`], [`DEFAULT_RECOVERY`], …);
//! - the duration grammar ([`parse_duration`]: `"30s"`, `"1m 30s"`);
//! - the rule of each setting, as a `const fn` returning the value or the
//!   [`Violation`] ([`threshold`], [`failure_rate`], [`recovery`], …), and
//!   the rules between settings ([`min_calls_within`],
//!   [`slow_under_timeout`], [`one_trip_rule`], …);
//! - what the settings written mean together ([`resolution`]: from
//!   [`Written`] to the rules in force, [`Resolved`], or the
//!   [`Violations`]), resolved once for the attribute and the builder.
//!
//! A `Violation` says what is wrong in the words of each side: its
//! [`Display`](core::fmt::Display) is the attribute's compile error,
//! [`brief`](Violation::brief) the same without values (what const
//! evaluation can show), [`problem`](Violation::problem) what a
//! `ConfigError` says after the setting's name.
//!
//! ```
//! use failfast_rules::{Key, threshold};
//!
//! assert_eq!(threshold(5), Ok(5));
//! let refused = threshold(0).unwrap_err();
//! assert_eq!(refused.key(), Key::Threshold);
//! assert_eq!(refused.to_string(), "`threshold` must be at least 1");
//! assert_eq!(refused.problem(), "must be at least 1");
//! ```
//!
//! This crate is an implementation detail of `failfast`: depend on
//! `failfast` instead.

#![warn(missing_docs)]

mod duration;
mod key;
mod limits;
mod resolve;
mod settings;
mod violation;

pub use duration::{DurationError, parse_duration};
pub use key::{Key, Place};
pub use limits::*;
pub use resolve::*;
pub use settings::*;
pub use violation::Violation;
