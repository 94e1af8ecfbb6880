//! The grammar of `#[retry(key = value, ...)]`. Parsing, duplicates, typo
//! suggestions, durations and error collection are the breaker's
//! (`grammar`, `value`); `retry_on` takes the forms of `counts` (`matcher`).

use syn::Path;
use syn::parse::ParseStream;

use super::grammar::{parse_arguments, parse_key, set};
use super::value::{count, crate_path, growing, number};
use super::{Arg, Errors, Matcher, Recovery};

/// Every key the attribute understands, in the order the docs list them.
pub(crate) const KEYS: &[&str] = &[
    "attempts", "backoff", "jitter", "retry_on", "budget", "crate",
];

#[derive(Default)]
pub struct RetryArgs {
    pub attempts: Option<Arg<u32>>,
    pub backoff: Option<Arg<Recovery>>,
    pub jitter: Option<Arg<f64>>,
    pub retry_on: Option<Arg<Matcher>>,
    pub budget: Option<Arg<f64>>,
    pub krate: Option<Arg<Path>>,
}

impl RetryArgs {
    /// Parses the attribute's arguments; mistakes go to `errors`, one each.
    pub fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> RetryArgs {
        let mut args = RetryArgs::default();
        parse_arguments(tokens, errors, |input| args.parse_one(input));
        args
    }

    fn parse_one(&mut self, input: ParseStream) -> syn::Result<()> {
        let (key, name) = parse_key(input, KEYS)?;
        let span = input.span();
        match name.as_str() {
            "attempts" => set(&mut self.attempts, &key, span, count(input, &name)?),
            "backoff" => set(
                &mut self.backoff,
                &key,
                span,
                growing(input, "backoff", "delay", "\"100ms..2s\"")?,
            ),
            "jitter" => set(&mut self.jitter, &key, span, jitter(input)?),
            "retry_on" => set(&mut self.retry_on, &key, span, input.call(Matcher::parse)?),
            "budget" => set(&mut self.budget, &key, span, budget(input)?),
            "crate" => set(&mut self.krate, &key, span, crate_path(input)?),
            _ => unreachable!("every entry of KEYS has a parser"),
        }
    }
}

/// A fraction of each delay: `0 <= jitter <= 1`.
fn jitter(input: ParseStream) -> syn::Result<f64> {
    let (value, expr) = number(input, "jitter", "0.5")?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(syn::Error::new_spanned(
            &expr,
            "`jitter` is the fraction of each backoff delay that may be cut at random: at \
             least 0 and at most 1 (0.5 waits between half and all of each delay)",
        ))
    }
}

/// The share of extra calls retries may add: `0 < budget <= 1`.
fn budget(input: ParseStream) -> syn::Result<f64> {
    let (value, expr) = number(input, "budget", "0.2")?;
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(syn::Error::new_spanned(
            &expr,
            "`budget` is the share of extra calls retries may add over 10 s: greater than 0 \
             and at most 1 (0.2 lets retries add at most 20% to the calls made)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(tokens: &str) -> Vec<String> {
        let mut errors = Errors::default();
        RetryArgs::parse(tokens.parse().unwrap(), &mut errors);
        errors.messages()
    }

    #[test]
    fn every_key_parses() {
        let mut errors = Errors::default();
        let args = RetryArgs::parse(
            r#"attempts = 4, backoff = "50ms..1s", jitter = 1, retry_on = E::Busy | E::Down,
               budget = 0.1, crate = ::failfast"#
                .parse()
                .unwrap(),
            &mut errors,
        );
        assert!(errors.into_result().is_none());
        assert_eq!(args.attempts.unwrap().value, 4);
        let backoff = args.backoff.unwrap().value;
        assert_eq!(backoff.start.as_millis(), 50);
        assert_eq!(backoff.max.map(|d| d.as_millis()), Some(1000));
        assert_eq!(args.jitter.unwrap().value, 1.0);
        assert_eq!(args.budget.unwrap().value, 0.1);
    }

    #[test]
    fn one_error_per_mistake_and_parsing_goes_on() {
        let errors = errors_of(
            r#"attemps = 3, attempts = 0, backoff = "2s..1s", jitter = 1.5, budget = 0, budget = 0.5"#,
        );
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].starts_with("unknown argument `attemps` (did you mean `attempts`?)"));
        assert_eq!(errors[1], "`attempts` must be at least 1");
        assert!(errors[2].starts_with("the delay of `backoff` grows from"));
        assert!(errors[3].starts_with("`jitter` is the fraction"));
        assert!(errors[4].starts_with("`budget` is the share"));
    }

    #[test]
    fn breaker_keys_are_not_retry_keys() {
        let errors = errors_of("threshold = 3");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("unknown argument `threshold`; expected one of `attempts`"));
    }
}
