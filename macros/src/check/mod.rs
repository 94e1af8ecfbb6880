//! The second stage: the checks between keys, on the parsed model
//! ([`Args`]). Each contradiction is reported once, at the key that cannot
//! work with what was already said, looking at what was written (so a bad
//! value, already reported, is not reported again as a missing key). What
//! the keys mean together is resolved here once ([`Rules`]), so that the
//! expansion reads values, never key names. `shape` checks the function.

pub(crate) mod shape;

use std::time::Duration;

use syn::ext::IdentExt;

use failfast_rules::{self as rules, DEFAULT_MIN_CALLS, DEFAULT_WINDOW_CALLS, Key};

use crate::attr::{Arg, Args, BREAKER_KEYS, Errors, Window};

/// A breaker's arguments, checked, and what they mean together: what the
/// expansion is generated from.
pub struct Breaker {
    pub args: Args,
    pub rules: Rules,
    /// Set by `#[retry]` above this breaker, never by a key: the generated
    /// code reports each call's verdict to the retry loop.
    pub report_to_retry: bool,
}

/// What the keys mean together, where one key's meaning depends on another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Graded shedding alone: no trip rule, not even the default one.
    pub no_trip_rule: bool,
    /// `threshold` with `window`: that many failures within the window,
    /// rather than in a row.
    pub failures_within: bool,
    /// The count window `min_calls` is held to, the rate rule's (the
    /// default one included); `None` without a rate rule or with a time
    /// window.
    pub min_calls_window: Option<u32>,
    /// Without a literal `min_calls`, a count window smaller than the
    /// default `min_calls`, which could never reach a verdict: a verdict
    /// waits for a full window instead.
    pub window_min_calls: Option<u32>,
}

impl Rules {
    /// Resolves what the keys written mean together.
    fn of(args: &Args) -> Rules {
        let written = |key| args.written(key).is_some();
        let rate_rule = ["failure_rate", "slow", "slow_rate"]
            .into_iter()
            .any(written);
        let window = args.window.as_ref().map(|w| &w.value);
        Rules {
            no_trip_rule: written("shed") && !written("threshold") && !written("failure_rate"),
            failures_within: written("threshold") && written("window") && !written("failure_rate"),
            min_calls_window: match window {
                Some(Window::Calls(n)) if rate_rule => Some(*n),
                None if !written("window") && rate_rule => Some(DEFAULT_WINDOW_CALLS),
                _ => None,
            },
            window_min_calls: match (&args.min_calls, window) {
                (None, Some(Window::Calls(n)))
                    if rules::default_min_calls(*n) != DEFAULT_MIN_CALLS =>
                {
                    Some(rules::default_min_calls(*n))
                }
                _ => None,
            },
        }
    }
}

/// Checks the arguments of `#[circuit_breaker]`.
pub fn breaker(args: Args, errors: &mut Errors) -> Breaker {
    validate(&args, errors);
    validate_keyed(&args, errors);
    resolved(args)
}

/// Checks the settings of `failfast::breaker!`.
pub fn declaration(args: Args, errors: &mut Errors) -> Breaker {
    validate(&args, errors);
    if let (Some(key), Some(_)) = (args.written("max_concurrent"), args.bulkhead()) {
        errors.push(syn::Error::new(
            key.span(),
            "a fixed `max_concurrent = N` is a bulkhead of each function's calls, set where \
             a function uses the breaker: `#[circuit_breaker(breaker = NAME, \
             max_concurrent = N)]`; a declaration takes an adaptive limit, \
             `max_concurrent = MIN..=MAX`, which the breaker keeps for every function that \
             uses it",
        ));
    }
    if let (Some(budget), None) = (
        args.written("max_ejection_percent"),
        args.written("max_keys"),
    ) {
        errors.push(syn::Error::new(
            budget.span(),
            "`max_ejection_percent` caps how many breakers of a family may be open at once, \
             and this declares a single breaker; add `max_keys = …` to declare a family \
             (each function then gives its `key = …`), or drop `max_ejection_percent`",
        ));
    }
    resolved(args)
}

fn resolved(args: Args) -> Breaker {
    Breaker {
        rules: Rules::of(&args),
        args,
        report_to_retry: false,
    }
}

/// Checks between keys: each contradiction is reported once, at the key
/// that cannot work with what was already said.
fn validate(args: &Args, errors: &mut Errors) {
    let written = |key| args.written(key).is_some();
    if let (Some(later), Err(violation)) = (
        args.later_of("threshold", "failure_rate"),
        rules::one_trip_rule(written("threshold"), written("failure_rate")),
    ) {
        errors.push(syn::Error::new(later.span(), violation));
    }
    let has_rate_rule = ["failure_rate", "slow", "slow_rate"]
        .into_iter()
        .any(written);
    // `threshold` with `window`: that many failures within the window.
    let within = written("threshold") && !written("failure_rate");
    // Graded shedding: measured over `shed_window`, from `min_calls` on.
    let sheds = written("shed");
    // One key, one meaning: beside `shed`, a `window` that is no trip
    // rule's, or that would turn `threshold` into failures within it
    // unseen, is refused with the fix.
    let window_rule = if sheds {
        rules::window_beside_shed(within, has_rate_rule, written("shed_window"))
    } else {
        rules::needs_rate_rule(Key::Window, has_rate_rule || within)
    };
    for (key, rule) in [
        ("window", window_rule),
        (
            "min_calls",
            rules::needs_rate_rule(Key::MinCalls, has_rate_rule || sheds),
        ),
        ("shed_window", rules::shed_window_needs_shed(sheds)),
    ] {
        if let (Some(written), Err(violation)) = (args.written(key), rule) {
            errors.push(syn::Error::new(written.span(), violation));
        }
    }
    if let (true, Some(threshold), Some(Window::Calls(size))) = (
        within,
        &args.threshold,
        args.window.as_ref().map(|w| &w.value),
    ) {
        if let Err(violation) = rules::threshold_within(threshold.value, Some(*size)) {
            errors.push(syn::Error::new(threshold.span, violation));
        }
    }
    if let (true, Some(min_calls)) = (has_rate_rule || sheds, &args.min_calls) {
        // The rate rule's count window; graded shedding alone measures
        // over a time, which holds any number of calls.
        let window = match args.window.as_ref().map(|w| &w.value) {
            Some(Window::Calls(size)) if has_rate_rule => Some(Some(*size)),
            // The default window, of calls.
            None if args.written("window").is_none() && has_rate_rule => Some(None),
            // A time window holds any number of calls; a bad `window`
            // value is already reported.
            _ => None,
        };
        if let Some(Err(violation)) =
            window.map(|window| rules::min_calls_within(min_calls.value, window))
        {
            errors.push(syn::Error::new(min_calls.span, violation));
        }
    }
    if let (Some(max_wait), Err(violation)) = (
        args.written("max_wait"),
        rules::max_wait_needs_max_concurrent(args.written("max_concurrent").is_some()),
    ) {
        errors.push(syn::Error::new(max_wait.span(), violation));
    }
    // An adaptive limit refuses at once: nothing waits for its places.
    if let (Some(max_wait), Err(violation)) = (
        args.written("max_wait"),
        rules::max_wait_needs_fixed_limit(args.adaptive_concurrency().is_some()),
    ) {
        errors.push(syn::Error::new(max_wait.span(), violation));
    }
    if let (Some(slow), Some(timeout)) = (&args.slow, &args.timeout) {
        if let Err(violation) = rules::slow_under_timeout(slow.value, timeout.value) {
            errors.push(syn::Error::new(slow.span, violation));
        }
    }
    if let (true, Some(timeout)) = (sheds, &args.timeout) {
        validate_shed_window(args, timeout, errors);
    }
    if let Some(later) = args.later_of("fallback", "reject_with") {
        errors.push(syn::Error::new(
            later.span(),
            "`fallback` and `reject_with` both answer a refused call; keep one: \
             `reject_with` turns the refusal into the function's error, `fallback` \
             answers with a value of its own",
        ));
    }
    if let (Some(rate), Err(violation)) = (
        args.written("slow_rate"),
        rules::slow_rate_needs_slow(written("slow")),
    ) {
        errors.push(syn::Error::new(rate.span(), violation));
    }
}

/// Under `shed`, with a `timeout`: `shed_window`, written or the
/// default, is at least as long as `timeout`. Reported at its value, or
/// at `timeout`'s when it is the default.
fn validate_shed_window(args: &Args, timeout: &Arg<Duration>, errors: &mut Errors) {
    let (window, span, default) = match &args.shed_window {
        Some(Arg { value, span, .. }) => (*value, *span, false),
        None if args.written("shed_window").is_none() => {
            (rules::DEFAULT_SHED_WINDOW, timeout.span, true)
        }
        // A bad `shed_window` value: already reported.
        None => return,
    };
    if let Err(violation) = rules::shed_window_covers_timeout(window, timeout.value) {
        let message = if default {
            format!(
                "{violation}; without `shed_window`, `shed` measures over {window:?}: \
                 write a `shed_window` at least as long as `timeout`, e.g. \
                 `shed_window = \"{:?}\"`",
                timeout.value
            )
        } else {
            violation.to_string()
        };
        errors.push(syn::Error::new(span, message));
    }
}

/// Checks of `key`, `max_keys` and `breaker`: a family's bound needs a
/// key, and a shared breaker is configured where it is declared.
fn validate_keyed(args: &Args, errors: &mut Errors) {
    if let (Some(max_keys), None, None) = (
        args.written("max_keys"),
        args.written("key"),
        args.written("breaker"),
    ) {
        errors.push(syn::Error::new(
            max_keys.span(),
            "`max_keys` bounds a family of breakers, one per key; add `key = …` (the \
             value that picks the breaker, e.g. `key = self.host.as_str()`), or drop \
             `max_keys`",
        ));
    }
    if let (Some(budget), None, None) = (
        args.written("max_ejection_percent"),
        args.written("key"),
        args.written("breaker"),
    ) {
        errors.push(syn::Error::new(
            budget.span(),
            "`max_ejection_percent` caps how many breakers of a family, one per key, may \
             be open at once; add `key = …` (e.g. `key = replica`), or drop \
             `max_ejection_percent`",
        ));
    }
    // The adaptive limit is kept by the breaker, and a shared breaker's
    // settings are those of its declaration.
    if let (Some(_), Some(key), Some(_)) = (
        args.written("breaker"),
        args.written("max_concurrent"),
        args.adaptive_concurrency(),
    ) {
        errors.push(syn::Error::new(
            key.span(),
            "an adaptive `max_concurrent = MIN..=MAX` is a limit the breaker itself keeps, \
             and this function uses a shared breaker (`breaker = …`); write it where the \
             breaker is declared (`failfast::breaker!(static NAME = max_concurrent = \
             MIN..=MAX, …)`), or here a fixed `max_concurrent = N` (a bulkhead of this \
             function's calls)",
        ));
    }
    if args.written("breaker").is_some() {
        for key in args
            .written_keys()
            .filter(|key| BREAKER_KEYS.contains(&key.unraw().to_string().as_str()))
            // Fixed, a bulkhead of this function's; adaptive, refused above.
            .filter(|key| key.unraw() != "max_concurrent")
            .filter(|key| key.unraw() != "crate")
        {
            errors.push(syn::Error::new(
                key.span(),
                format!(
                    "`{}` configures the breaker, and this function uses a shared one: \
                     configure the shared breaker where it is declared \
                     (`failfast::breaker!`); next to `breaker = …` only the function's \
                     own keys are allowed: `key`, `counts`, `ignores`, `fallback`, \
                     `reject_with`, `timeout`, `max_concurrent`",
                    key.unraw()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests;
