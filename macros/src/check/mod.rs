//! The second stage: the checks between keys, on the parsed model
//! ([`Args`]). Each contradiction is reported once, at the key that cannot
//! work with what was already said, looking at what was written (so a bad
//! value, already reported, is not reported again as a missing key). What
//! the keys mean together is resolved by `failfast_rules::resolution`, the
//! builder's resolution too ([`Breaker::rules`]), so that the expansion
//! reads values, never key names. `shape` checks the function.

pub(crate) mod shape;

use proc_macro2::Span;
use syn::Ident;
use syn::ext::IdentExt;

use failfast_rules::{self as rules, Key, Kind, Resolution, Resolved, Setting, Violation, Written};

use crate::attr::{Arg, Args, BREAKER_KEYS, Errors};

/// A breaker's arguments, checked, and what they mean together: what the
/// expansion is generated from.
pub struct Breaker {
    pub args: Args,
    /// What the keys mean together, resolved by `failfast_rules` as the
    /// builder resolves its settings: which rule failures trip on, the
    /// count window `min_calls` is held to, the `min_calls` a small count
    /// window implies.
    pub rules: Resolved,
    /// Set by `#[retry]` above this breaker, never by a key: the generated
    /// code reports each call's verdict to the retry loop.
    pub report_to_retry: bool,
}

/// The keys written, as the rules' resolution reads them: a literal's
/// value, or a key written whose value is known later (a constant, checked
/// by const evaluation, or a value already refused).
fn written(args: &Args) -> Written {
    fn setting<T: Copy>(args: &Args, key: &str, arg: Option<&Arg<T>>) -> Setting<T> {
        match (arg, args.written(key)) {
            (Some(arg), _) => Setting::Set(arg.value),
            (None, Some(_)) => Setting::Later,
            (None, None) => Setting::Unset,
        }
    }
    let mut written = Written::NOTHING;
    for &key in Key::ALL {
        if !matches!(key.kind(), Kind::Shaped) {
            written.write(key, setting(args, key.name(), args.setting(key)));
        }
    }
    let recovery = args.recovery.as_ref();
    Written {
        window: setting(args, "window", args.window.as_ref()),
        max_concurrent: setting(args, "max_concurrent", args.max_concurrent.as_ref()),
        recovery: match recovery {
            Some(recovery) => Setting::Set(recovery.value.start),
            None => setting::<std::time::Duration>(args, "recovery", None),
        },
        max_recovery: match recovery.and_then(|r| r.value.max) {
            Some(max) => Setting::Set(max),
            None => Setting::Unset,
        },
        ..written
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
        rules: rules::resolution(&written(&args)).rules,
        args,
        report_to_retry: false,
    }
}

/// Checks between keys: what the keys written mean together is resolved
/// by `failfast_rules` (as the builder resolves its settings), and each
/// setting that cannot work with the others is reported once, at its key
/// or at the value at fault.
fn validate(args: &Args, errors: &mut Errors) {
    let Resolution { violations, .. } = rules::resolution(&written(args));
    for violation in violations.iter() {
        errors.push(reported(args, violation));
    }
    if let Some(later) = args.later_of("fallback", "reject_with") {
        errors.push(syn::Error::new(
            later.span(),
            "`fallback` and `reject_with` both answer a refused call; keep one: \
             `reject_with` turns the refusal into the function's error, `fallback` \
             answers with a value of its own",
        ));
    }
}

/// A violation where it is reported: at the value at fault (a `threshold`
/// over its window, `slow` not under `timeout`, …), at the later of two
/// trip rules, or at the key that cannot work with what else was written.
fn reported(args: &Args, violation: Violation) -> syn::Error {
    let key = violation.key();
    let at_key = || {
        args.written(key.name())
            .map_or_else(Span::call_site, Ident::span)
    };
    let span = match key {
        _ if !violation.at_value() => match key {
            // Two trip rules: at the one written last.
            Key::Threshold => args
                .later_of("threshold", "failure_rate")
                .map_or_else(Span::call_site, Ident::span),
            _ => at_key(),
        },
        Key::Threshold | Key::MinCalls | Key::Slow => {
            args.setting(key).map_or_else(at_key, |a| a.span)
        }
        Key::ShedWindow => match (args.setting(key), args.duration(Key::Timeout)) {
            (Some(window), _) => window.span,
            // The default window, shorter than `timeout`: at `timeout`'s
            // value, with the default and the fix.
            (None, Some(timeout)) => {
                return syn::Error::new(
                    timeout.span,
                    format!(
                        "{violation}; without `shed_window`, `shed` measures over {:?}: \
                         write a `shed_window` at least as long as `timeout`, e.g. \
                         `shed_window = \"{:?}\"`",
                        rules::DEFAULT_SHED_WINDOW,
                        timeout.value
                    ),
                );
            }
            (None, None) => at_key(),
        },
        _ => at_key(),
    };
    syn::Error::new(span, violation)
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
                     own keys are allowed: `key`, `counts`, `ignores`, `counts_ok`, `fallback`, \
                     `reject_with`, `timeout`, `max_concurrent`",
                    key.unraw()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests;
