//! The breaker's settings as a `const` `Config` expression, from the checked
//! model: literal values as literals, constants checked by const evaluation.
//!
//! ```text
//! ConstConfig::new(NAME)<literal settings>
//!     .threshold(CRATE::__private::consts::threshold(limits::PAYMENTS_THRESHOLD))
//!     .recovery(CRATE::__private::consts::recovery(RECOVERY))
//!     .into_config()
//! ```
//!
//! Constants come last, in the order they were written, after any default
//! they replace; a constant held to another key's value is wrapped in the
//! rule's check (`slow_under_timeout`, `threshold_within`,
//! `min_calls_within`).

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use failfast_rules::{FailureRule, Key, Value};

use crate::attr::Window;
use crate::check::Breaker;
use crate::tokens::{duration, respan};

/// The breaker's settings as a `const` `Config` expression, named `name`
/// or, by default, `default_name` (see `declare::default_name`).
pub(crate) fn config(
    breaker: &Breaker,
    default_name: TokenStream,
    private: &TokenStream,
) -> TokenStream {
    let args = &breaker.args;
    let int = proc_macro2::Literal::u32_unsuffixed;

    let name = match &args.name {
        Some(name) => name.value.to_token_stream(),
        None => default_name,
    };
    let mut chain = quote!(#private::ConstConfig::new(#name));
    chain.extend(trip_rules(breaker));
    if let Some(recovery) = &args.recovery {
        let start = duration(recovery.value.start);
        chain.extend(quote!(.recovery(#start)));
        if let Some(max) = recovery.value.max {
            let max = duration(max);
            chain.extend(quote!(.max_recovery(#max)));
        }
    }
    // `max_concurrent = MIN..=MAX`: the breaker keeps the limit itself.
    if let Some((min, max)) = args.adaptive_concurrency() {
        let (min, max) = (int(min), int(max));
        chain.extend(quote!(.adaptive_concurrency(#min, #max)));
    }
    // `max_concurrent = N` on a breaker of its own: the limit is the
    // bulkhead's in front of it, and the breaker tells it the limit in
    // force (`__private::acquire_bounded`), which can change at run time.
    if let (Some(n), None) = (args.bulkhead(), &args.key) {
        let n = int(n);
        chain.extend(quote!(.bulkhead(#n)));
        if let Some(wait) = args.duration(Key::MaxWait) {
            let d = duration(wait.value);
            chain.extend(quote!(.max_wait(#d)));
        }
    }
    chain.extend(literals(breaker));
    chain.extend(setters(breaker, private));
    quote!(#chain.into_config())
}

/// What the rules that trip the breaker need beyond the values written:
/// the default rule or none, the window, the `min_calls` a small window
/// implies, failures counted within the window.
fn trip_rules(breaker: &Breaker) -> TokenStream {
    let int = proc_macro2::Literal::u32_unsuffixed;
    let (args, rules) = (&breaker.args, &breaker.rules);
    let mut chain = TokenStream::new();
    let written = |key| args.setting(key).is_some();
    match (written(Key::Threshold), written(Key::FailureRate)) {
        // A literal `threshold` is set by `literals`.
        (true, _) => {}
        // Graded shedding alone has no trip rule of its own (a constant
        // `threshold` or `failure_rate` is set after, by `setters`).
        (false, false) if rules.failures == FailureRule::Off => {
            chain.extend(quote!(.without_threshold()));
        }
        // The consecutive-failure rule is the default rule.
        (false, false) => {
            let n = int(failfast_rules::DEFAULT_THRESHOLD);
            chain.extend(quote!(.threshold(#n)));
        }
        (false, true) => {}
    }
    match args.window.as_ref().map(|w| &w.value) {
        Some(Window::Calls(n)) => {
            let n = int(*n);
            chain.extend(quote!(.window_calls(#n)));
        }
        Some(Window::Time(d)) => {
            let d = duration(*d);
            chain.extend(quote!(.window_time(#d)));
        }
        None => {}
    }
    // A `min_calls` a small count window implies, when none is written.
    if let (false, Some(n)) = (written(Key::MinCalls), rules.implied_min_calls) {
        let n = int(n);
        chain.extend(quote!(.min_calls(#n)));
    }
    // `threshold` with `window` (literal or constant): failures within it.
    if rules.failures == FailureRule::WithinWindow {
        chain.extend(quote!(.failures_within()));
    }
    chain
}
/// The setter calls of the plain settings given a literal, each
/// `.<key>(literal)`: the settings of the breaker's `Config`
/// (`Key::in_config`), but `max_wait`, which is the bulkhead's, set with
/// it.
fn literals(breaker: &Breaker) -> TokenStream {
    breaker
        .args
        .settings()
        .filter(|(key, _)| key.in_config() && *key != Key::MaxWait)
        .map(|(key, arg)| {
            let setter = format_ident!("{}", key.name());
            let value = match arg.value {
                Value::Count(n) => proc_macro2::Literal::u32_unsuffixed(n).into_token_stream(),
                Value::Number(x) => proc_macro2::Literal::f64_unsuffixed(x).into_token_stream(),
                Value::Duration(d) => duration(d),
            };
            quote!(.#setter(#value))
        })
        .collect()
}

/// The setter calls of every constant value, checked by const evaluation;
/// they come last in the `Config` chain, after any default they replace.
fn setters(breaker: &Breaker, private: &TokenStream) -> TokenStream {
    let (args, rules) = (&breaker.args, &breaker.rules);
    args.consts
        .iter()
        .map(|c| {
            let name = c.setting.name();
            let expr = &c.expr;
            let span = expr.span();
            // The whole call at the value: a failed evaluation points there.
            let consts = respan(quote!(#private::consts), span);
            let check = format_ident!("{}", name, span = span);
            let mut value = quote_spanned!(span=> #consts::#check(#expr));
            if c.setting == Key::Slow {
                if let Some(timeout) = args.duration(Key::Timeout) {
                    let timeout = respan(duration(timeout.value), span);
                    value = quote_spanned!(span=> #consts::slow_under_timeout(#value, #timeout));
                }
            }
            if c.setting == Key::Threshold && rules.failures == FailureRule::WithinWindow {
                if let Some(Window::Calls(n)) = args.window.as_ref().map(|w| &w.value) {
                    let window = proc_macro2::Literal::u32_unsuffixed(*n);
                    value = quote_spanned!(span=> #consts::threshold_within(#value, #window));
                }
            }
            if c.setting == Key::MinCalls {
                // The rate rule's count window, the default one included;
                // graded shedding alone measures over a time.
                if let Some(window) = rules.min_calls_window {
                    let window = proc_macro2::Literal::u32_unsuffixed(window);
                    value = quote_spanned!(span=> #consts::min_calls_within(#value, #window));
                }
            }
            let setter = format_ident!("{}", name, span = c.key);
            quote!(.#setter(#value))
        })
        .collect()
}
