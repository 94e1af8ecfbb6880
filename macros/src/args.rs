//! The grammar of `#[circuit_breaker(key = value, ...)]` and the checks that
//! need nothing but the arguments themselves.

use std::time::Duration;

use proc_macro2::{Spacing, Span, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{
    Expr, ExprBlock, ExprClosure, ExprLit, ExprPath, ExprRange, ExprUnary, Ident, Lit, LitStr,
    Path, RangeLimits, Token, UnOp,
};

use failfast_rules::{self as rules, Key};

use crate::classify::Matcher;

/// Every key the attribute understands, in the order the docs list them.
pub(crate) const KEYS: &[&str] = &[
    "threshold",
    "failure_rate",
    "window",
    "min_calls",
    "slow",
    "slow_rate",
    "shed",
    "shed_window",
    "timeout",
    "max_concurrent",
    "max_wait",
    "recovery",
    "jitter",
    "trial_calls",
    "success_threshold",
    "key",
    "max_keys",
    "max_ejection_percent",
    "breaker",
    "counts",
    "ignores",
    "fallback",
    "reject_with",
    "name",
    "crate",
];

/// The keys that configure a breaker itself: what `failfast::breaker!`
/// declares, and what a function using a shared breaker (`breaker = NAME`)
/// may not set. `max_concurrent` is one as an adaptive limit `MIN..=MAX`,
/// which the breaker keeps; a fixed `max_concurrent = N` is a bulkhead of
/// one function's calls, which a declaration refuses and a function using
/// the breaker may set.
pub(crate) const BREAKER_KEYS: &[&str] = &[
    "threshold",
    "failure_rate",
    "window",
    "min_calls",
    "slow",
    "slow_rate",
    "shed",
    "shed_window",
    "max_concurrent",
    "recovery",
    "jitter",
    "trial_calls",
    "success_threshold",
    "max_keys",
    "max_ejection_percent",
    "name",
    "crate",
];

/// A key's value and where it was written, so that checks between keys can
/// point at the value.
pub struct Arg<T> {
    pub value: T,
    /// The value's first token, where a mistake in the value is reported.
    pub span: Span,
}

/// `fallback = path` is called with the function's arguments and the error;
/// `fallback = |error| ..` with the error only, so the body can take its
/// arguments by move; `fallback = { ..; move |error| .. }` is a block run
/// before the body, whose closure keeps what it captured.
pub enum Fallback {
    Path(ExprPath),
    Closure(ExprClosure),
    Prepared(ExprBlock),
}

impl Fallback {
    /// Does the fallback take the function's arguments?
    pub fn takes_arguments(&self) -> bool {
        matches!(self, Fallback::Path(_))
    }
}

pub enum Window {
    Calls(u32),
    Time(Duration),
}

/// `max_concurrent = N`: a bulkhead of `N` places beside the breaker; or
/// `max_concurrent = MIN..=MAX`: an adaptive limit the breaker itself keeps,
/// moving between `MIN` and `MAX` places.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Concurrency {
    Fixed(u32),
    Adaptive { min: u32, max: u32 },
}

/// `recovery = "30s"` or the growing form `recovery = "30s..10m"`; also
/// `#[retry]`'s `backoff`.
pub struct Recovery {
    pub start: Duration,
    pub max: Option<Duration>,
}

#[derive(Default)]
pub struct Args {
    pub threshold: Option<Arg<u32>>,
    pub failure_rate: Option<Arg<f64>>,
    pub window: Option<Arg<Window>>,
    pub min_calls: Option<Arg<u32>>,
    pub slow: Option<Arg<Duration>>,
    pub slow_rate: Option<Arg<f64>>,
    /// `shed = 2`: graded shedding's multiplier.
    pub shed: Option<Arg<f64>>,
    /// `shed_window = "10s"`: the time graded shedding measures over.
    pub shed_window: Option<Arg<Duration>>,
    pub timeout: Option<Arg<Duration>>,
    /// `max_concurrent = 8` or `max_concurrent = 2..=8`.
    pub max_concurrent: Option<Arg<Concurrency>>,
    /// `max_wait = "50ms"`: how long a call waits for a place.
    pub max_wait: Option<Arg<Duration>>,
    pub recovery: Option<Arg<Recovery>>,
    pub jitter: Option<Arg<f64>>,
    pub trial_calls: Option<Arg<u32>>,
    pub success_threshold: Option<Arg<u32>>,
    pub counts: Option<Arg<Matcher>>,
    pub ignores: Option<Arg<Matcher>>,
    pub fallback: Option<Arg<Fallback>>,
    pub reject_with: Option<Arg<ExprPath>>,
    /// `key = expr`: one breaker per value of `expr`.
    pub key: Option<Arg<Expr>>,
    pub max_keys: Option<Arg<u32>>,
    /// `max_ejection_percent = N`: a keyed family's ejection budget.
    pub max_ejection_percent: Option<Arg<u32>>,
    /// `breaker = PATH`: a breaker declared with `failfast::breaker!`.
    pub breaker: Option<Arg<Path>>,
    pub name: Option<Arg<LitStr>>,
    pub krate: Option<Arg<Path>>,
    /// Keys given a constant expression instead of a literal (see `consts`).
    pub consts: Vec<crate::consts::Const>,
    /// Set by `#[retry]` above this breaker, never by a key: the generated
    /// code reports each call's verdict to the retry loop.
    pub report_to_retry: bool,
    /// Every known key as written, valid value or not: checks between keys
    /// look at what was written, so a bad value is not reported a second time
    /// as a missing key.
    written: Vec<Ident>,
}

/// Collects independent mistakes so that one compile run reports all of them.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn into_result(self) -> Option<syn::Error> {
        self.0
    }

    /// Every message, in order: for tests.
    #[cfg(test)]
    pub fn messages(self) -> Vec<String> {
        self.0
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }
}

/// Stores a key's value, or reports the key as given twice. The one place
/// duplicates are handled, for every key.
pub(crate) fn set<T>(
    slot: &mut Option<Arg<T>>,
    key: &Ident,
    span: Span,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            key.span(),
            format!("`{}` is set more than once", key.unraw()),
        ));
    }
    *slot = Some(Arg { value, span });
    Ok(())
}

impl Args {
    /// Parses the attribute's arguments. Never fails as a whole: a mistake is
    /// recorded in `errors` and parsing goes on with the next `key = value`.
    pub fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        parse_arguments(tokens, errors, |input| args.parse_one(input, KEYS));
        args.validate(errors);
        args.validate_keyed(errors);
        args
    }

    /// Parses the settings of `failfast::breaker!`: the keys of
    /// [`BREAKER_KEYS`] only.
    pub fn parse_declaration(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        parse_arguments(tokens, errors, |input| {
            if let Ok(key) = input.fork().call(Ident::parse_any) {
                let name = key.unraw().to_string();
                if KEYS.contains(&name.as_str()) && !BREAKER_KEYS.contains(&name.as_str()) {
                    input.call(Ident::parse_any)?;
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "`{name}` is set by each function that uses the breaker, not where \
                             it is declared: write it in `#[circuit_breaker(breaker = NAME, \
                             {name} = …)]`"
                        ),
                    ));
                }
            }
            args.parse_one(input, BREAKER_KEYS)
        });
        args.validate(errors);
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
        args
    }

    fn parse_one(&mut self, input: ParseStream, keys: &[&str]) -> syn::Result<()> {
        let (key, name) = parse_key(input, keys)?;
        self.written.push(key.clone());
        let span = input.span();
        if crate::consts::kind(&name).is_some()
            && self.written.iter().filter(|k| k.unraw() == name).count() > 1
        {
            return Err(syn::Error::new(
                key.span(),
                format!("`{name}` is set more than once"),
            ));
        }
        if crate::consts::is_const(input, &name) {
            let expr: Expr = input.parse()?;
            self.consts.push(crate::consts::Const { key, expr });
            return Ok(());
        }
        match name.as_str() {
            "threshold" => set(&mut self.threshold, &key, span, count(input, &name)?),
            "failure_rate" => set(&mut self.failure_rate, &key, span, rate(input, &name)?),
            "window" => {
                let window = if input.peek(LitStr) {
                    Window::Time(duration(input, &name)?)
                } else {
                    Window::Calls(count(input, &name)?)
                };
                set(&mut self.window, &key, span, window)
            }
            "min_calls" => set(&mut self.min_calls, &key, span, count(input, &name)?),
            "slow" => set(&mut self.slow, &key, span, duration(input, &name)?),
            "slow_rate" => set(&mut self.slow_rate, &key, span, rate(input, &name)?),
            "shed" => set(&mut self.shed, &key, span, shed(input)?),
            "shed_window" => set(&mut self.shed_window, &key, span, duration(input, &name)?),
            "timeout" => set(&mut self.timeout, &key, span, duration(input, &name)?),
            "max_concurrent" => set(&mut self.max_concurrent, &key, span, concurrency(input)?),
            "max_wait" => set(&mut self.max_wait, &key, span, duration(input, &name)?),
            "recovery" => set(&mut self.recovery, &key, span, recovery(input)?),
            "jitter" => set(&mut self.jitter, &key, span, jitter(input)?),
            "trial_calls" => set(&mut self.trial_calls, &key, span, count(input, &name)?),
            "success_threshold" => set(
                &mut self.success_threshold,
                &key,
                span,
                count(input, &name)?,
            ),
            "counts" => set(&mut self.counts, &key, span, input.call(Matcher::parse)?),
            "ignores" => set(&mut self.ignores, &key, span, input.call(Matcher::parse)?),
            "fallback" => set(&mut self.fallback, &key, span, fallback(input)?),
            "reject_with" => set(&mut self.reject_with, &key, span, reject_with(input)?),
            "key" => set(&mut self.key, &key, span, input.parse()?),
            "max_keys" => set(&mut self.max_keys, &key, span, count(input, &name)?),
            "max_ejection_percent" => set(
                &mut self.max_ejection_percent,
                &key,
                span,
                count(input, &name)?,
            ),
            "breaker" => set(&mut self.breaker, &key, span, shared_breaker(input)?),
            "name" => set(&mut self.name, &key, span, registry_name(input)?),
            "crate" => set(&mut self.krate, &key, span, crate_path(input)?),
            _ => unreachable!("every entry of KEYS has a parser"),
        }
    }

    /// `max_concurrent = N`: the places of the function's bulkhead (or of
    /// each key's, in a family of its own).
    pub(crate) fn bulkhead(&self) -> Option<u32> {
        match self.max_concurrent.as_ref()?.value {
            Concurrency::Fixed(n) => Some(n),
            Concurrency::Adaptive { .. } => None,
        }
    }

    /// `max_concurrent = MIN..=MAX`: the adaptive limit's least and most
    /// places, kept by the breaker (no bulkhead).
    pub(crate) fn adaptive_concurrency(&self) -> Option<(u32, u32)> {
        match self.max_concurrent.as_ref()?.value {
            Concurrency::Adaptive { min, max } => Some((min, max)),
            Concurrency::Fixed(_) => None,
        }
    }

    /// The key as written, if it was, valid value or not.
    pub(crate) fn written(&self, name: &str) -> Option<&Ident> {
        self.written.iter().find(|key| key.unraw() == name)
    }

    /// When both keys are written, the one written last: where a
    /// contradiction between them is reported.
    fn later_of(&self, a: &str, b: &str) -> Option<&Ident> {
        let (a, b) = (self.written(a)?, self.written(b)?);
        let position = |key: &Ident| self.written.iter().position(|k| k == key);
        Some(if position(a) > position(b) { a } else { b })
    }

    /// Checks between keys: each contradiction is reported once, at the key
    /// that cannot work with what was already said.
    fn validate(&self, errors: &mut Errors) {
        let written = |key| self.written(key).is_some();
        if let (Some(later), Err(violation)) = (
            self.later_of("threshold", "failure_rate"),
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
            if let (Some(written), Err(violation)) = (self.written(key), rule) {
                errors.push(syn::Error::new(written.span(), violation));
            }
        }
        if let (true, Some(threshold), Some(Window::Calls(size))) = (
            within,
            &self.threshold,
            self.window.as_ref().map(|w| &w.value),
        ) {
            if let Err(violation) = rules::threshold_within(threshold.value, Some(*size)) {
                errors.push(syn::Error::new(threshold.span, violation));
            }
        }
        if let (true, Some(min_calls)) = (has_rate_rule || sheds, &self.min_calls) {
            // The rate rule's count window; graded shedding alone measures
            // over a time, which holds any number of calls.
            let window = match self.window.as_ref().map(|w| &w.value) {
                Some(Window::Calls(size)) if has_rate_rule => Some(Some(*size)),
                // The default window, of calls.
                None if self.written("window").is_none() && has_rate_rule => Some(None),
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
            self.written("max_wait"),
            rules::max_wait_needs_max_concurrent(self.written("max_concurrent").is_some()),
        ) {
            errors.push(syn::Error::new(max_wait.span(), violation));
        }
        // An adaptive limit refuses at once: nothing waits for its places.
        if let (Some(max_wait), Err(violation)) = (
            self.written("max_wait"),
            rules::max_wait_needs_fixed_limit(self.adaptive_concurrency().is_some()),
        ) {
            errors.push(syn::Error::new(max_wait.span(), violation));
        }
        if let (Some(slow), Some(timeout)) = (&self.slow, &self.timeout) {
            if let Err(violation) = rules::slow_under_timeout(slow.value, timeout.value) {
                errors.push(syn::Error::new(slow.span, violation));
            }
        }
        if let (true, Some(timeout)) = (sheds, &self.timeout) {
            self.validate_shed_window(timeout, errors);
        }
        if let Some(later) = self.later_of("fallback", "reject_with") {
            errors.push(syn::Error::new(
                later.span(),
                "`fallback` and `reject_with` both answer a refused call; keep one: \
                 `reject_with` turns the refusal into the function's error, `fallback` \
                 answers with a value of its own",
            ));
        }
        if let (Some(rate), Err(violation)) = (
            self.written("slow_rate"),
            rules::slow_rate_needs_slow(written("slow")),
        ) {
            errors.push(syn::Error::new(rate.span(), violation));
        }
    }
}

impl Args {
    /// Under `shed`, with a `timeout`: `shed_window`, written or the
    /// default, is at least as long as `timeout`. Reported at its value, or
    /// at `timeout`'s when it is the default.
    fn validate_shed_window(&self, timeout: &Arg<Duration>, errors: &mut Errors) {
        let (window, span, default) = match &self.shed_window {
            Some(Arg { value, span }) => (*value, *span, false),
            None if self.written("shed_window").is_none() => {
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
    fn validate_keyed(&self, errors: &mut Errors) {
        if let (Some(max_keys), None, None) = (
            self.written("max_keys"),
            self.written("key"),
            self.written("breaker"),
        ) {
            errors.push(syn::Error::new(
                max_keys.span(),
                "`max_keys` bounds a family of breakers, one per key; add `key = …` (the \
                 value that picks the breaker, e.g. `key = self.host.as_str()`), or drop \
                 `max_keys`",
            ));
        }
        if let (Some(budget), None, None) = (
            self.written("max_ejection_percent"),
            self.written("key"),
            self.written("breaker"),
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
            self.written("breaker"),
            self.written("max_concurrent"),
            self.adaptive_concurrency(),
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
        if self.written("breaker").is_some() {
            for key in self
                .written
                .iter()
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
}

/// `breaker = PAYMENTS`: the path of a breaker declared with
/// `failfast::breaker!`.
fn shared_breaker(input: ParseStream) -> syn::Result<Path> {
    let expr: Expr = input.parse()?;
    match expr {
        Expr::Path(path) if path.qself.is_none() => Ok(path.path),
        other => Err(syn::Error::new_spanned(
            &other,
            "expected the path of a breaker declared with `failfast::breaker!`, e.g. \
             `breaker = PAYMENTS`",
        )),
    }
}

/// Parses `key = value, ...` with `parse_one` for each argument. Never fails
/// as a whole: a mistake is recorded in `errors` and parsing goes on with the
/// next `key = value`, so one compile run reports every mistake.
pub(crate) fn parse_arguments(
    tokens: proc_macro2::TokenStream,
    errors: &mut Errors,
    mut parse_one: impl FnMut(ParseStream) -> syn::Result<()>,
) {
    let parser = |input: ParseStream| {
        while !input.is_empty() {
            if let Err(error) = parse_one(input) {
                errors.push(error);
                skip_to_next_key(input)?;
            }
            if input.is_empty() {
                break;
            }
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else {
                errors.push(input.error("expected `,` before the next argument"));
                skip_to_next_key(input)?;
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                }
            }
        }
        Ok(())
    };
    if let Err(error) = parser.parse2(tokens) {
        errors.push(error);
    }
}

/// `key =`, where `key` is one of `keys`: the key as written and its name.
pub(crate) fn parse_key(input: ParseStream, keys: &[&str]) -> syn::Result<(Ident, String)> {
    let key = if input.peek(Ident::peek_any) {
        input.call(Ident::parse_any)?
    } else {
        return Err(input.error(format!(
            "expected an argument `key = value`, one of {}",
            key_list(keys)
        )));
    };
    let name = key.unraw().to_string();
    if !keys.contains(&name.as_str()) {
        let hint = suggest(&name, keys)
            .map(|k| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
        return Err(syn::Error::new(
            key.span(),
            format!(
                "unknown argument `{name}`{hint}; expected one of {}",
                key_list(keys)
            ),
        ));
    }
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{name}` needs a value: `{name} = ...`"),
        ));
    }
    input.parse::<Token![=]>()?;
    Ok((key, name))
}

fn key_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The closest key within two edits, for typos such as `treshold`.
fn suggest<'k>(unknown: &str, keys: &[&'k str]) -> Option<&'k str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    keys.iter()
        .map(|k| (distance(unknown, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

/// After a mistake, skips to the `,` that starts the next `key =`, so one bad
/// value does not hide the mistakes after it. A comma inside a closure's
/// parameter list is not followed by `key =`, so it is skipped over.
fn skip_to_next_key(input: ParseStream) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            if let TokenTree::Punct(p) = &tt {
                if p.as_char() == ',' && starts_key(next) {
                    return Ok(((), rest));
                }
            }
            rest = next;
        }
        Ok(((), rest))
    })
}

fn starts_key(cursor: syn::buffer::Cursor) -> bool {
    let Some((_, after_ident)) = cursor.ident() else {
        return false;
    };
    match after_ident.punct() {
        Some((eq, after_eq)) => {
            eq.as_char() == '='
                && (eq.spacing() == Spacing::Alone
                    || after_eq.punct().is_none_or(|(p, _)| p.as_char() != '='))
        }
        None => false,
    }
}

/// The rules' name of `key`, an attribute key whose value has a rule.
fn rule_key(key: &str) -> Key {
    Key::from_name(key).unwrap_or_else(|| unreachable!("`{key}` has no rule"))
}

/// An integer of at least 1, such as `threshold = 5`, within the key's
/// largest (see `failfast_rules::count`).
pub(crate) fn count(input: ParseStream, key: &str) -> syn::Result<u32> {
    count_of(&input.parse()?, key)
}

/// [`count`] of an expression already parsed.
fn count_of(expr: &Expr, key: &str) -> syn::Result<u32> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => {
            let value: u64 = int.base10_parse()?;
            rules::count(rule_key(key), value)
                .map_err(|violation| syn::Error::new(int.span(), violation))
        }
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err(syn::Error::new_spanned(
            expr,
            format!("`{key}` must be a whole number of at least 1, not a negative number"),
        )),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "expected a whole number of at least 1, e.g. `{key} = 5`{}",
                crate::consts::literal_only(key, expr)
            ),
        )),
    }
}

/// `max_concurrent = N`, or an adaptive limit `MIN..=MAX` written with
/// integer literals, checked by `failfast_rules::adaptive_concurrency`.
fn concurrency(input: ParseStream) -> syn::Result<Concurrency> {
    const EXAMPLE: &str = "e.g. `max_concurrent = 10..=200`";
    let expr: Expr = input.parse()?;
    let range = match &expr {
        Expr::Range(range) => range,
        // The text of a configuration file, `max_concurrent = "10..=200"`.
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) if text.value().contains("..") => {
            return Err(syn::Error::new(
                text.span(),
                format!(
                    "an adaptive `max_concurrent` is a range written without quotes, \
                     `MIN..=MAX`: `max_concurrent = {}`",
                    text.value().trim()
                ),
            ));
        }
        _ => return count_of(&expr, "max_concurrent").map(Concurrency::Fixed),
    };
    let ExprRange {
        start: Some(start),
        end: Some(end),
        ..
    } = range
    else {
        return Err(syn::Error::new_spanned(
            range,
            format!(
                "an adaptive `max_concurrent` needs both ends, its least and most places: \
                 `MIN..=MAX`, {EXAMPLE}"
            ),
        ));
    };
    if let RangeLimits::HalfOpen(dots) = &range.limits {
        let (start, end) = (start.to_token_stream(), end.to_token_stream());
        return Err(syn::Error::new_spanned(
            dots,
            format!(
                "an adaptive `max_concurrent` is written with `..=`, both ends included: \
                 `max_concurrent = {start}..={end}` (from {start} to {end} places), not \
                 `{start}..{end}`"
            ),
        ));
    }
    let bound = |bound: &Expr| match bound {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse::<u64>(),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err(syn::Error::new_spanned(
            bound,
            "the ends of an adaptive `max_concurrent` are whole numbers of at least 1, not \
             negative numbers",
        )),
        _ => Err(syn::Error::new_spanned(
            bound,
            format!(
                "the ends of an adaptive `max_concurrent` are integer literals, {EXAMPLE}; \
                 `max_concurrent` takes no constant"
            ),
        )),
    };
    let (min, max) = (bound(start)?, bound(end)?);
    let checked = match (u32::try_from(min), u32::try_from(max)) {
        (Ok(min), Ok(max)) => rules::adaptive_concurrency(min, max).map_err(|v| v.to_string()),
        // Past `u32`: the rule's sentence without the values.
        _ => Err(rules::adaptive_concurrency(0, 0)
            .unwrap_err()
            .brief()
            .to_owned()),
    };
    checked
        .map(|(min, max)| Concurrency::Adaptive { min, max })
        .map_err(|message| syn::Error::new_spanned(range, message))
}

/// A number written as an integer or float literal, possibly negative.
pub(crate) fn number(input: ParseStream, key: &str, example: &str) -> syn::Result<(f64, Expr)> {
    let expr: Expr = input.parse()?;
    let (negative, lit) = match &expr {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => (true, &**inner),
        other => (false, other),
    };
    let value = match lit {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>()?,
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>()?,
        _ => {
            return Err(syn::Error::new_spanned(
                &expr,
                format!("expected a number, e.g. `{key} = {example}`"),
            ));
        }
    };
    Ok((if negative { -value } else { value }, expr))
}

/// A share of calls: `0 < rate <= 1` (`failure_rate`, `slow_rate`).
fn rate(input: ParseStream, key: &str) -> syn::Result<f64> {
    let (value, expr) = number(input, key, "0.5")?;
    let rule = match rule_key(key) {
        Key::SlowRate => rules::slow_rate,
        _ => rules::failure_rate,
    };
    rule(value).map_err(|violation| syn::Error::new_spanned(&expr, violation))
}

/// Graded shedding's multiplier: `1 <= shed <= 10`.
fn shed(input: ParseStream) -> syn::Result<f64> {
    let (value, expr) = number(input, "shed", "2")?;
    rules::shed(value).map_err(|violation| syn::Error::new_spanned(&expr, violation))
}

/// A fraction of the open time: `0 <= jitter < 1`.
fn jitter(input: ParseStream) -> syn::Result<f64> {
    let (value, expr) = number(input, "jitter", "0.2")?;
    rules::jitter(value).map_err(|violation| syn::Error::new_spanned(&expr, violation))
}

fn duration_lit(input: ParseStream, key: &str) -> syn::Result<LitStr> {
    if input.peek(LitStr) {
        return input.parse();
    }
    let expr: Expr = input.parse()?;
    Err(syn::Error::new_spanned(
        &expr,
        format!(
            "expected a duration string, e.g. `{key} = \"30s\"` or `{key} = \"250ms\"`{}",
            crate::consts::literal_only(key, &expr)
        ),
    ))
}

/// A duration in the grammar the runtime's overrides read too, longer than
/// zero.
fn parse_duration(text: &str, lit: &LitStr, key: &str) -> syn::Result<Duration> {
    let value = rules::parse_duration(text).map_err(|e| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid duration {text:?} for `{key}`: {e}; \
                 write e.g. \"250ms\", \"30s\", \"2m\" or \"1h 30m\""
            ),
        )
    })?;
    rules::duration(rule_key(key), value)
        .map_err(|violation| syn::Error::new(lit.span(), violation))
}

/// A duration string such as `"30s"`, parsed now so a typo is a compile error.
pub(crate) fn duration(input: ParseStream, key: &str) -> syn::Result<Duration> {
    let lit = duration_lit(input, key)?;
    parse_duration(&lit.value(), &lit, key)
}

/// `"30s"`, or `"30s..10m"`: the open time starts at 30s, doubles each time
/// the breaker opens again, and never exceeds 10m.
fn recovery(input: ParseStream) -> syn::Result<Recovery> {
    growing(input, "recovery", "open time", "\"30s..10m\"")
}

/// A duration, or a growing one `"START..MAX"` (`recovery`, `backoff`):
/// `what` names what grows in messages, `example` is a range to copy.
pub(crate) fn growing(
    input: ParseStream,
    key: &str,
    what: &str,
    example: &str,
) -> syn::Result<Recovery> {
    let lit = duration_lit(input, key)?;
    let text = lit.value();
    let Some((start, max)) = text.split_once("..") else {
        return Ok(Recovery {
            start: parse_duration(&text, &lit, key)?,
            max: None,
        });
    };
    if start.trim().is_empty() || max.trim().is_empty() {
        return Err(syn::Error::new(
            lit.span(),
            format!("a growing `{key}` needs both ends: \"START..MAX\", e.g. {example}"),
        ));
    }
    let start_value = parse_duration(start, &lit, key)?;
    let max_value = parse_duration(max.trim_start_matches('='), &lit, key)?;
    // The rule of `max_recovery`, the end a growing `recovery` is written
    // with; a growing `backoff` keeps to it too.
    if rules::max_recovery(start_value, max_value).is_err() {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "the {what} of `{key}` grows from {:?} up to {:?}, so the maximum \
                 must not be shorter than the start",
                start.trim(),
                max.trim()
            ),
        ));
    }
    Ok(Recovery {
        start: start_value,
        max: Some(max_value),
    })
}

/// The path of a function as an expression (`cached`, `Self::cached`,
/// `cached::<u32>`, `<Self as Cache>::cached`), or a closure of the error
/// alone (`|error| cached(error)`).
fn fallback(input: ParseStream) -> syn::Result<Fallback> {
    if input.peek(Token![|]) || input.peek(Token![||]) || input.peek(Token![move]) {
        let closure: ExprClosure = input.parse()?;
        if closure.inputs.len() != 1 {
            return Err(syn::Error::new_spanned(
                &closure.inputs,
                "a `fallback` closure takes the error alone, a `failfast::Error<E>`: \
                 `fallback = |error| cached(error)`; to be given the function's arguments \
                 too, name a function: `fallback = cached`",
            ));
        }
        return Ok(Fallback::Closure(closure));
    }
    if input.peek(syn::token::Brace) {
        return input.parse().map(Fallback::Prepared);
    }
    fallback_path(input).map(Fallback::Path)
}

fn fallback_path(input: ParseStream) -> syn::Result<ExprPath> {
    const EXPECTED: &str = "expected the path of a function, e.g. `fallback = cached_stock` or \
                            `fallback = Self::cached_stock`";
    if input.peek(Ident::peek_any) || input.peek(Token![::]) || input.peek(Token![<]) {
        let path: ExprPath = input.parse()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Ok(path);
        }
        if input.peek(Token![<]) {
            return Err(input.error(
                "generic arguments of a `fallback` are written with `::<`, as in an \
                 expression: `fallback = cached::<u32>`",
            ));
        }
        if input.peek(syn::token::Paren) {
            let arguments: TokenTree = input.parse()?;
            let written = if path.qself.is_none() {
                path.to_token_stream().to_string().replace(' ', "")
            } else {
                "cached_stock".to_owned()
            };
            return Err(syn::Error::new(
                arguments.span(),
                format!(
                    "`fallback` takes the path of a function, not a call: the attribute calls \
                     it with the function's arguments and a `failfast::Error`; write \
                     `fallback = {written}`"
                ),
            ));
        }
        return Err(input.error(format!("{EXPECTED}; expected `,` after the path")));
    }
    let expr: Expr = input.parse()?;
    Err(syn::Error::new_spanned(&expr, EXPECTED))
}

/// The path of a `fn(failfast::Rejected) -> E`.
fn reject_with(input: ParseStream) -> syn::Result<ExprPath> {
    const EXPECTED: &str = "expected the path of a function from `failfast::Rejected` to the \
                            function's error type, e.g. `reject_with = unavailable`";
    let expr: Expr = input.parse()?;
    match expr {
        Expr::Path(path) => Ok(path),
        other => Err(syn::Error::new_spanned(&other, EXPECTED)),
    }
}

fn registry_name(input: ParseStream) -> syn::Result<LitStr> {
    if !input.peek(LitStr) {
        let expr: Expr = input.parse()?;
        return Err(syn::Error::new_spanned(
            &expr,
            "expected a string literal, e.g. `name = \"inventory\"`",
        ));
    }
    let lit: LitStr = input.parse()?;
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(lit.span(), "`name` must not be empty"));
    }
    Ok(lit)
}

/// `crate = path` or, as tokio accepts it, `crate = "path"`.
pub(crate) fn crate_path(input: ParseStream) -> syn::Result<Path> {
    const EXPECTED: &str = "expected the path of the failfast crate, e.g. `crate = ::failfast`";
    let path = if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        lit.parse_with(Path::parse_mod_style)
            .map_err(|_| syn::Error::new(lit.span(), EXPECTED))?
    } else {
        input
            .call(Path::parse_mod_style)
            .map_err(|e| syn::Error::new(e.span(), EXPECTED))?
    };
    // Generated code imports from it (`use CRATE::__private::..`), where
    // `Self` cannot be written; no crate is reached through `Self` anyway.
    if let Some(self_type) = path.segments.iter().find(|s| s.ident == "Self") {
        return Err(syn::Error::new(self_type.ident.span(), EXPECTED));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(tokens: &str) -> Vec<String> {
        let mut errors = Errors::default();
        Args::parse(tokens.parse().unwrap(), &mut errors);
        errors.messages()
    }

    #[test]
    fn every_key_parses() {
        let mut errors = Errors::default();
        let args = Args::parse(
            r#"failure_rate = 0.5, window = "1m", min_calls = 20, slow = "2s", slow_rate = 1,
               timeout = "3s", max_concurrent = 8, recovery = "30s..10m", jitter = 0.2, trial_calls = 3, success_threshold = 2,
               counts = |e: &E| e.is_transient(), ignores = E::BadRequest(_), fallback = Self::cached,
               name = "inventory", crate = ::failfast"#
                .parse()
                .unwrap(),
            &mut errors,
        );
        assert!(errors.into_result().is_none());
        assert_eq!(args.failure_rate.unwrap().value, 0.5);
        assert!(
            matches!(args.window.unwrap().value, Window::Time(d) if d == Duration::from_secs(60))
        );
        assert_eq!(args.slow_rate.unwrap().value, 1.0);
        let recovery = args.recovery.unwrap().value;
        assert_eq!(recovery.start, Duration::from_secs(30));
        assert_eq!(recovery.max, Some(Duration::from_secs(600)));
        assert_eq!(args.trial_calls.unwrap().value, 3);
        assert_eq!(args.timeout.unwrap().value, Duration::from_secs(3));
        assert_eq!(args.max_concurrent.unwrap().value, Concurrency::Fixed(8));
    }

    #[test]
    fn keyed_and_shared_keys_are_checked_once_each() {
        assert!(errors_of("key = self.host.as_str(), max_keys = 8, threshold = 2").is_empty());
        let errors = errors_of("max_keys = 8");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("`max_keys` bounds a family"),
            "{errors:?}"
        );
        assert_eq!(
            errors_of("key = id, max_keys = 0"),
            ["`max_keys` must be at least 1"]
        );
        // Next to `breaker`, each key of the breaker is one error, `max_keys`
        // included (not also "without `key`"); the function's own keys pass.
        let errors = errors_of("breaker = PAYMENTS, threshold = 2, max_keys = 8, name = \"x\"");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors
                .iter()
                .all(|e| e.contains("configure the shared breaker where it is declared"))
        );
        assert!(errors_of(
            "breaker = PAYMENTS, key = host, counts = E::A, timeout = \"1s\", max_concurrent = 2, \
             crate = ::failfast"
        )
        .is_empty());
        assert_eq!(errors_of("breaker = \"PAYMENTS\"").len(), 1);
        let declared = |tokens: &str| {
            let mut errors = Errors::default();
            Args::parse_declaration(tokens.parse().unwrap(), &mut errors);
            errors.messages()
        };
        assert!(declared("threshold = 5, max_keys = 64, name = \"gateway\"").is_empty());
        let errors = declared("counts = E::A, key = id, threshold = 0");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("`counts` is set by each function"));
        assert!(errors[1].starts_with("`key` is set by each function"));
        // An adaptive limit is the breaker's: declared with it, for one
        // breaker or each member of a family; a fixed one is a function's.
        assert!(declared("max_concurrent = 5..=50, threshold = 5").is_empty());
        assert!(declared("max_concurrent = 5..=50, max_keys = 8").is_empty());
        let errors = declared("max_concurrent = 8");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("a fixed `max_concurrent = N` is a bulkhead"));
        assert_eq!(declared("max_concurrent = 50..=5").len(), 1);
        let errors = errors_of("breaker = PAYMENTS, max_concurrent = 5..=50");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("write it where the breaker is declared"));
    }

    #[test]
    fn slow_is_shorter_than_timeout() {
        for (slow, timeout) in [("3s", "3s"), ("5s", "3s")] {
            let errors = errors_of(&format!("slow = \"{slow}\", timeout = \"{timeout}\""));
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(errors[0].starts_with("`slow` must be shorter than `timeout`"));
        }
        assert!(errors_of(r#"slow = "2s", timeout = "3s""#).is_empty());
        assert_eq!(errors_of("max_concurrent = 0").len(), 1);
    }

    #[test]
    fn one_error_per_mistake_and_parsing_goes_on() {
        let errors =
            errors_of(r#"treshold = 5, counts = |a, b| a == b, recovery = "30x", threshold = 0"#);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("unknown argument `treshold` (did you mean `threshold`?)"));
        assert!(errors[1].starts_with("invalid duration \"30x\""));
        assert_eq!(errors[2], "`threshold` must be at least 1");
    }

    #[test]
    fn a_bad_value_is_not_also_a_missing_key() {
        assert_eq!(errors_of("failure_rate = 1.5, window = 20").len(), 1);
        assert_eq!(errors_of(r#"slow = "0s", slow_rate = 0.5"#).len(), 1);
    }

    #[test]
    fn contradictions_point_at_the_later_key() {
        let errors = errors_of("threshold = 5, failure_rate = 0.5");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("`threshold` and `failure_rate`"));
        assert_eq!(errors_of("window = 10").len(), 1);
        assert_eq!(errors_of("slow_rate = 0.5").len(), 1);
        assert_eq!(
            errors_of("failure_rate = 0.5, window = 10, min_calls = 11").len(),
            1
        );
        assert!(errors_of(r#"slow = "1s", window = 10"#).is_empty());
    }

    #[test]
    fn shed_is_a_multiplier_over_a_time_no_shorter_than_timeout() {
        for accepted in [
            "shed = 1",
            "shed = 1.0",
            "shed = 2",
            "shed = 10",
            "shed = 10.0",
            "shed = K",
            "shed = K * 2.0",
            "shed = 2, threshold = 5",
            "shed = 2, failure_rate = 0.5",
            "shed = 2, failure_rate = 0.5, min_calls = 100",
            "shed = 2, failure_rate = 0.5, window = 20",
            r#"shed = 2, failure_rate = 0.5, window = "1m", min_calls = 500"#,
            r#"shed = 2, slow = "1s", window = "1m""#,
            // `min_calls` with `shed` alone: its window is a time, which
            // holds any number of calls.
            "shed = 2, min_calls = 500",
            r#"shed = 2, shed_window = "1m", min_calls = 5000"#,
            r#"shed = 2, shed_window = "3s", timeout = "3s""#,
            r#"shed = 2, timeout = "10s""#,
            r#"timeout = "1m", shed_window = "2m", shed = 2"#,
            // Failures within a window beside a shedding window of its own.
            r#"shed = 2, threshold = 5, window = 100, shed_window = "5s""#,
            r#"shed = 2, threshold = 5, window = "5s", shed_window = "5s""#,
        ] {
            assert!(errors_of(accepted).is_empty(), "{accepted}");
        }
        let outside = |k: &str| {
            format!(
                "`shed = {k}` is outside [1, 10]: it is the `k` of `1 − k × accepted / sent`, the \
                 chance a call is refused (2 is the usual choice)"
            )
        };
        for (refused, message) in [
            ("shed = 0.5", outside("0.5")),
            ("shed = 11", outside("11")),
            ("shed = -2", outside("-2")),
            ("shed = \"2\"", "expected a number, e.g. `shed = 2`".into()),
            (
                r#"shed = 2, window = "5s""#,
                "`window` is the window of a trip rule (`threshold`, `failure_rate`, `slow`), and \
                 there is none here: graded shedding's window is `shed_window`, e.g. \
                 `shed_window = \"10s\"`"
                    .into(),
            ),
            (
                r#"shed = 2, threshold = 10, window = "5s""#,
                "beside `shed`, `window` would make `threshold` count the failures within it \
                 instead of failures in a row: for the shedding window write \
                 `shed_window = \"10s\"` instead; to count the failures within `window`, write \
                 `shed_window` as well"
                    .into(),
            ),
            (
                r#"shed_window = "5s""#,
                "`shed_window` needs `shed`: it is the time graded shedding measures over, e.g. \
                 `shed = 2, shed_window = \"10s\"`"
                    .into(),
            ),
            (
                "shed = 2, shed_window = 100",
                "expected a duration string, e.g. `shed_window = \"30s\"` or \
                 `shed_window = \"250ms\"`"
                    .into(),
            ),
            (
                r#"shed = 2, shed_window = "1s", timeout = "3s""#,
                "`shed_window` (1s) is shorter than `timeout` (3s): graded shedding's window must \
                 be at least as long as the longest call, or a call still running when the \
                 window has moved on is counted in no window"
                    .into(),
            ),
            (
                r#"shed = 2, timeout = "30s""#,
                "`shed_window` (10s) is shorter than `timeout` (30s): graded shedding's window \
                 must be at least as long as the longest call, or a call still running when the \
                 window has moved on is counted in no window; without `shed_window`, `shed` \
                 measures over 10s: write a `shed_window` at least as long as `timeout`, e.g. \
                 `shed_window = \"30s\"`"
                    .into(),
            ),
            ("shed = 2, shed = 3", "`shed` is set more than once".into()),
            ("shed = K, shed = 3", "`shed` is set more than once".into()),
            (
                r#"shed = 2, shed_window = "1s", shed_window = "2s""#,
                "`shed_window` is set more than once".into(),
            ),
        ] {
            assert_eq!(errors_of(refused), [message], "{refused}");
        }
        // A `window` is reported at `window`, a short shedding window at
        // its value, the default one at `timeout`'s.
        assert_eq!(columns_of(r#"shed = 2, window = "5s""#), [10]);
        assert_eq!(
            columns_of(r#"shed = 2, threshold = 10, window = "5s""#),
            [26]
        );
        assert_eq!(
            columns_of(r#"shed = 2, shed_window = "1s", timeout = "3s""#),
            [24]
        );
        assert_eq!(columns_of(r#"shed = 2, timeout = "30s""#), [20]);
        assert_eq!(suggest("shd", KEYS), Some("shed"));
        assert_eq!(suggest("sheds", KEYS), Some("shed"));
        // A breaker's setting: declared with it, not beside `breaker = …`.
        assert_eq!(errors_of("breaker = PAYMENTS, shed = 2").len(), 1);
    }

    #[test]
    fn min_calls_fits_in_the_count_window_explicit_or_default() {
        let default = errors_of("failure_rate = 0.5, min_calls = 200");
        assert_eq!(default.len(), 1, "{default:?}");
        assert!(
            default[0].starts_with("`min_calls = 200` is more than the 100 calls the default"),
            "{default:?}"
        );
        assert_eq!(errors_of(r#"slow = "1ns", min_calls = 101"#).len(), 1);
        assert!(errors_of(r#"slow = "1ns", min_calls = 100"#).is_empty());
        assert!(errors_of("failure_rate = 0.5, window = 500, min_calls = 200").is_empty());
        // A time window holds any number of calls.
        assert!(errors_of(r#"failure_rate = 0.5, window = "1m", min_calls = 5000"#).is_empty());
        // One mistake, one error: no rate rule at all, or a bad window value.
        assert_eq!(errors_of("min_calls = 200").len(), 1);
        assert_eq!(
            errors_of("failure_rate = 0.5, window = 0, min_calls = 200").len(),
            1
        );
    }

    #[test]
    fn duplicates_are_reported_for_every_key() {
        for key in [
            "threshold = 1",
            "recovery = \"1s\"",
            "counts = E::A",
            "name = \"a\"",
        ] {
            let errors = errors_of(&format!("{key}, {key}"));
            assert_eq!(errors.len(), 1, "{key}");
            assert!(errors[0].ends_with("is set more than once"), "{errors:?}");
        }
    }

    #[test]
    fn suggestions_only_for_near_misses() {
        assert_eq!(suggest("treshold", KEYS), Some("threshold"));
        assert_eq!(suggest("ignore", KEYS), Some("ignores"));
        assert_eq!(suggest("retries", KEYS), None);
        // Edits at the start, in the middle and at the end, up to two.
        assert_eq!(suggest("hreshold", KEYS), Some("threshold"));
        assert_eq!(suggest("xxthreshold", KEYS), Some("threshold"));
        assert_eq!(suggest("xxxthreshold", KEYS), None);
        assert_eq!(suggest("thresholdxx", KEYS), Some("threshold"));
        assert_eq!(suggest("fallbak", KEYS), Some("fallback"));
    }

    #[test]
    fn an_unknown_key_lists_every_key() {
        let errors = errors_of("retries = 3");
        assert_eq!(errors.len(), 1);
        let list = KEYS
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(
            errors[0],
            format!("unknown argument `retries`; expected one of {list}")
        );
    }

    /// The column of each error's first token.
    fn columns_of(tokens: &str) -> Vec<usize> {
        let mut errors = Errors::default();
        Args::parse(tokens.parse().unwrap(), &mut errors);
        errors
            .into_result()
            .map(|e| e.into_iter().map(|e| e.span().start().column).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_later_of_two_contradicting_keys_is_the_one_reported() {
        // "threshold = 5, failure_rate = 0.5": `failure_rate` starts at 15.
        assert_eq!(columns_of("threshold = 5, failure_rate = 0.5"), [15]);
        // "failure_rate = 0.5, threshold = 5": `threshold` starts at 20.
        assert_eq!(columns_of("failure_rate = 0.5, threshold = 5"), [20]);
        // "reject_with = f, fallback = g": `fallback` starts at 17.
        assert_eq!(columns_of("reject_with = f, fallback = g"), [17]);
        assert_eq!(columns_of("fallback = g, reject_with = f"), [14]);
        assert_eq!(
            errors_of("reject_with = \"f\"")[0],
            "expected the path of a function from `failfast::Rejected` to the function's \
             error type, e.g. `reject_with = unavailable`"
        );
    }

    #[test]
    fn after_a_bad_value_parsing_resumes_at_the_next_key_only() {
        // Commas and `==` inside a bad value are not the start of a key.
        for value in ["|a, b| a == b", "|a, b| a, b = c", "x, b== c", "x, b ==c"] {
            let errors = errors_of(&format!("counts = {value}, threshold = 0"));
            assert_eq!(
                errors.last().map(String::as_str),
                Some("`threshold` must be at least 1"),
                "{value}: {errors:?}"
            );
        }
        // After a stray token, only `, key =` starts the next argument: not
        // `, x y`, `, x == y` or `, x= =y`.
        for rest in ["x y", "x == y", "x ==y", "x | y"] {
            let errors = errors_of(&format!("jitter = 0.5 0.5, {rest}, threshold = 0"));
            assert_eq!(
                errors,
                [
                    "expected `,` before the next argument",
                    "`threshold` must be at least 1"
                ],
                "{rest}"
            );
        }
        // A key right after the bad value is found, with or without spaces.
        assert_eq!(errors_of("recovery = \"30x\", threshold=0").len(), 2);
        assert_eq!(errors_of("threshold = 0, name = \"x\"").len(), 1);
    }

    #[test]
    fn settings_take_constants_and_a_key_is_still_set_once() {
        let mut errors = Errors::default();
        let args = Args::parse(
            "threshold = limits::T, recovery = RECOVERY, jitter = J / 2.0"
                .parse()
                .unwrap(),
            &mut errors,
        );
        assert!(errors.messages().is_empty());
        let keys: Vec<String> = args.consts.iter().map(|c| c.key.to_string()).collect();
        assert_eq!(keys, ["threshold", "recovery", "jitter"]);
        for twice in [
            "threshold = 5, threshold = T",
            "threshold = T, threshold = 5",
        ] {
            assert_eq!(
                errors_of(twice),
                ["`threshold` is set more than once"],
                "{twice}"
            );
        }
        // Keys that shape the generated code take literals only.
        for literal_only in [
            "timeout = LIMIT",
            "max_concurrent = MAX",
            "failure_rate = 0.5, window = W",
        ] {
            let errors = errors_of(literal_only);
            assert_eq!(errors.len(), 1, "{literal_only}");
            assert!(errors[0].contains("is written as a literal"), "{errors:?}");
        }
    }

    #[test]
    fn numbers_are_checked_with_their_sign_and_bounds() {
        for refused in [
            "failure_rate = -0.5",
            "failure_rate = 0",
            "failure_rate = 0.0",
            "failure_rate = 1.0001",
            "slow = \"1s\", slow_rate = -1",
            "jitter = -0.1",
            "jitter = 1",
        ] {
            assert_eq!(errors_of(refused).len(), 1, "{refused}");
        }
        for accepted in [
            "failure_rate = 1",
            "failure_rate = 0.001",
            "jitter = 0",
            "jitter = 0.99",
        ] {
            assert!(errors_of(accepted).is_empty(), "{accepted}");
        }
        assert_eq!(
            errors_of("failure_rate = -1")[0],
            "`failure_rate` is a share of calls: greater than 0 and at most 1 \
             (0.5 means half of the calls)"
        );
    }

    #[test]
    fn a_growing_recovery_needs_both_ends_in_order() {
        for refused in ["\"..10m\"", "\"30s..\"", "\"30s..10s\"", "\"1m..59s\""] {
            assert_eq!(
                errors_of(&format!("recovery = {refused}")).len(),
                1,
                "{refused}"
            );
        }
        let mut errors = Errors::default();
        let args = Args::parse("recovery = \"30s..30s\"".parse().unwrap(), &mut errors);
        assert!(errors.into_result().is_none());
        let recovery = args.recovery.unwrap().value;
        assert_eq!(
            (recovery.start, recovery.max),
            (Duration::from_secs(30), Some(Duration::from_secs(30)))
        );
    }

    #[test]
    fn fallback_closures_of_every_spelling_are_closures() {
        let fallback = |tokens: &str| {
            let mut errors = Errors::default();
            let args = Args::parse(tokens.parse().unwrap(), &mut errors);
            (
                errors.into_result().map(|e| e.to_string()),
                args.fallback.map(|f| f.value),
            )
        };
        assert!(matches!(
            fallback("fallback = move |e| x(e)"),
            (None, Some(Fallback::Closure(_)))
        ));
        assert!(matches!(
            fallback("fallback = |e| x(e)"),
            (None, Some(Fallback::Closure(_)))
        ));
        let (error, _) = fallback("fallback = || x()");
        assert!(
            error
                .unwrap()
                .starts_with("a `fallback` closure takes the error alone")
        );
    }

    #[test]
    fn counts_are_bounded_by_what_the_runtime_accepts() {
        for (key, max) in [
            ("trial_calls", 255u64),
            ("success_threshold", 255),
            ("threshold", (1 << 24) - 1),
        ] {
            assert!(errors_of(&format!("{key} = {max}")).is_empty(), "{key}");
            let errors = errors_of(&format!("{key} = {}", max + 1));
            assert_eq!(
                errors,
                [format!("`{key}` is too large; the largest value is {max}")]
            );
        }
        let window = 1u64 << 20;
        assert!(errors_of(&format!("failure_rate = 0.5, window = {window}")).is_empty());
        assert_eq!(
            errors_of(&format!("failure_rate = 0.5, window = {}", window + 1)),
            [format!(
                "`window` is too large; the largest value is {window}"
            )]
        );
        assert!(
            errors_of("failure_rate = 0.5, min_calls = 4294967295, window = \"1m\"").is_empty()
        );
    }

    #[test]
    fn each_mistake_has_its_own_message() {
        assert_eq!(
            errors_of("threshold = -3"),
            ["`threshold` must be a whole number of at least 1, not a negative number"]
        );
        for recovery in [r#""30s..""#, r#""..5m""#, r#"" .. ""#] {
            let errors = errors_of(&format!("recovery = {recovery}"));
            assert_eq!(errors.len(), 1, "{recovery}: {errors:?}");
            assert!(
                errors[0].starts_with("a growing `recovery` needs both ends"),
                "{recovery}: {errors:?}"
            );
        }
        // A qualified path is not a breaker declared with `failfast::breaker!`.
        let errors = errors_of("breaker = <T>::PAYMENTS");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("expected the path of a breaker declared with"),
            "{errors:?}"
        );
    }

    #[test]
    fn max_concurrent_takes_an_adaptive_range_of_literals() {
        let adaptive = |tokens: &str| {
            let mut errors = Errors::default();
            let args = Args::parse(tokens.parse().unwrap(), &mut errors);
            assert!(errors.messages().is_empty(), "{tokens}");
            (args.adaptive_concurrency(), args.bulkhead())
        };
        assert_eq!(
            adaptive("max_concurrent = 10..=200"),
            (Some((10, 200)), None)
        );
        assert_eq!(adaptive("max_concurrent = 1..=1"), (Some((1, 1)), None));
        assert_eq!(
            adaptive("max_concurrent = 65535..=65535"),
            (Some((65535, 65535)), None)
        );
        assert_eq!(
            adaptive("max_concurrent = 1u32..=0x10"),
            (Some((1, 16)), None)
        );
        assert_eq!(adaptive("max_concurrent = 8"), (None, Some(8)));
        for accepted in [
            "key = id, max_concurrent = 2..=8",
            "max_concurrent = 2..=8, shed = 2",
            "max_concurrent = 2..=8, threshold = 100, timeout = \"1s\"",
        ] {
            assert!(errors_of(accepted).is_empty(), "{accepted}");
        }
        const RANGE: &str = "is not an adaptive range: write `MIN..=MAX` with 1 <= MIN <= MAX \
                             <= 65535, e.g. `max_concurrent = 10..=200`";
        const BOTH_ENDS: &str = "an adaptive `max_concurrent` needs both ends, its least and \
                                 most places: `MIN..=MAX`, e.g. `max_concurrent = 10..=200`";
        for (refused, message) in [
            (
                "max_concurrent = 0..=10",
                format!("`max_concurrent = 0..=10` {RANGE}"),
            ),
            (
                "max_concurrent = 20..=10",
                format!("`max_concurrent = 20..=10` {RANGE}"),
            ),
            (
                "max_concurrent = 1..=70000",
                format!("`max_concurrent = 1..=70000` {RANGE}"),
            ),
            (
                "max_concurrent = 1..=4294967296",
                "an adaptive `max_concurrent` is a range `MIN..=MAX` with 1 <= MIN <= MAX <= \
                 65535, e.g. `max_concurrent = 10..=200`"
                    .to_owned(),
            ),
            (
                "max_concurrent = 10..200",
                "an adaptive `max_concurrent` is written with `..=`, both ends included: \
                 `max_concurrent = 10..=200` (from 10 to 200 places), not `10..200`"
                    .to_owned(),
            ),
            ("max_concurrent = ..=8", BOTH_ENDS.to_owned()),
            ("max_concurrent = 8..", BOTH_ENDS.to_owned()),
            ("max_concurrent = ..", BOTH_ENDS.to_owned()),
            (
                "max_concurrent = MIN..=200",
                "the ends of an adaptive `max_concurrent` are integer literals, e.g. \
                 `max_concurrent = 10..=200`; `max_concurrent` takes no constant"
                    .to_owned(),
            ),
            (
                "max_concurrent = -1..=8",
                "the ends of an adaptive `max_concurrent` are whole numbers of at least 1, not \
                 negative numbers"
                    .to_owned(),
            ),
            (
                "max_concurrent = 1..=8, max_wait = \"10ms\"",
                "`max_wait` needs a fixed `max_concurrent = N`: an adaptive limit refuses at \
                 once, so that the calls it sheds never wait"
                    .to_owned(),
            ),
            (
                "breaker = PAYMENTS, max_concurrent = 2..=8",
                "an adaptive `max_concurrent = MIN..=MAX` is a limit the breaker itself keeps, \
                 and this function uses a shared breaker (`breaker = …`); write it where the \
                 breaker is declared (`failfast::breaker!(static NAME = max_concurrent = \
                 MIN..=MAX, …)`), or here a fixed `max_concurrent = N` (a bulkhead of this \
                 function's calls)"
                    .to_owned(),
            ),
            (
                "max_concurrent = \"10..=200\"",
                "an adaptive `max_concurrent` is a range written without quotes, `MIN..=MAX`: \
                 `max_concurrent = 10..=200`"
                    .to_owned(),
            ),
            (
                "max_concurrent = 2..=8, max_concurrent = 4",
                "`max_concurrent` is set more than once".to_owned(),
            ),
        ] {
            assert_eq!(errors_of(refused), [message], "{refused}");
        }
        // A bad range is one mistake: not also `max_wait` beside it.
        assert_eq!(
            errors_of("max_concurrent = 0..=8, max_wait = \"10ms\"").len(),
            1
        );
        // `max_wait` is reported at its key; the half-open range at `..`;
        // bad bounds at the range.
        assert_eq!(
            columns_of("max_concurrent = 1..=8, max_wait = \"10ms\""),
            [24]
        );
        assert_eq!(columns_of("max_concurrent = 10..200"), [19]);
        assert_eq!(columns_of("max_concurrent = 20..=10"), [17]);
        // Fixed or adaptive, a `max_concurrent` beside `breaker` is refused
        // only for the adaptive form.
        assert!(errors_of("breaker = PAYMENTS, max_concurrent = 2").is_empty());
    }

    /// Generated code imports from the crate's path, where `Self` cannot be
    /// written: found by the grammar fuzz once the default `counts` did.
    #[test]
    fn the_crate_path_is_a_module_path() {
        for value in ["Self::cached", "\"Self::failfast\"", "a::Self"] {
            let errors = errors_of(&format!("crate = {value}"));
            assert_eq!(
                errors,
                ["expected the path of the failfast crate, e.g. `crate = ::failfast`"],
                "{value}"
            );
        }
        assert!(errors_of("crate = crate::reexport").is_empty());
        assert!(errors_of("crate = \"::failfast\"").is_empty());
    }
}
