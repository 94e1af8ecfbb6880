//! The duration grammar: how `recovery = "30s"` and
//! `FAILFAST__INVENTORY__RECOVERY=1m` are read.

use std::fmt;
use std::time::Duration;

/// Reads a duration as the attribute, serialized configurations and
/// run-time overrides write it: [humantime]'s grammar (`"250ms"`, `"30s"`,
/// `"2m"`, `"1h 30m"`), with whitespace around it ignored.
///
/// Zero is a duration here; whether a setting may be zero is its own rule
/// ([`recovery`](crate::recovery), [`slow`](crate::slow), …).
///
/// ```
/// use std::time::Duration;
/// use failfast_rules::parse_duration;
///
/// assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration(" 250ms "), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("30x").is_err());
/// ```
///
/// # Errors
///
/// A [`DurationError`] saying what in `text` is not a duration.
///
/// [humantime]: https://docs.rs/humantime
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    humantime::parse_duration(text.trim()).map_err(DurationError)
}

/// Why a text is not a duration: an unknown unit, a number too large, an
/// empty text, …
#[derive(Clone, Debug, PartialEq)]
pub struct DurationError(humantime::DurationError);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DurationError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_reads_what_the_docs_show() {
        for (text, expected) in [
            ("1ns", Duration::from_nanos(1)),
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            ("2m", Duration::from_secs(120)),
            ("1h 30m", Duration::from_secs(5400)),
            ("\t1m\n", Duration::from_secs(60)),
            ("0s", Duration::ZERO),
            ("1.5s", Duration::from_millis(1500)),
            ("18446744073709551615ns", Duration::from_nanos(u64::MAX)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
        for text in ["", " ", "30", "30x", "-1s", "s", "1s..2s"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
        assert!(
            parse_duration("30x")
                .unwrap_err()
                .to_string()
                .contains("unknown time unit")
        );
    }
}
