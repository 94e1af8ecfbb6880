//! Values given as constants: `threshold = limits::PAYMENTS_THRESHOLD`,
//! `recovery = RECOVERY` (a `Duration` const), `failure_rate = 0.25 * 2.0`.
//!
//! A literal is checked here, at expansion; any other expression is handed
//! to the runtime's `__private::consts::KEY(expr)`, a `const fn` applying the
//! same rule, inside the breaker's `static` initialiser: const evaluation
//! runs it, so a value that cannot work is a compile error naming the key.
//!
//! ```text
//! Config::new(..)<literal settings>
//!     .threshold(CRATE::__private::consts::threshold(limits::PAYMENTS_THRESHOLD))
//!     .recovery(CRATE::__private::consts::recovery(RECOVERY))
//! ```

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Expr, Lit, Token};

use failfast_rules::DEFAULT_WINDOW_CALLS;

use crate::args::{Args, Window};

/// Keys whose value may be a constant: those that are settings of the
/// breaker's `Config`, with their kind for messages.
const KEYS: &[(&str, &str)] = &[
    ("threshold", "a `u32`"),
    ("failure_rate", "an `f64`"),
    ("min_calls", "a `u32`"),
    ("slow", "a `Duration`"),
    ("slow_rate", "an `f64`"),
    ("shed", "an `f64`"),
    ("recovery", "a `Duration`"),
    ("jitter", "an `f64`"),
    ("trial_calls", "a `u32`"),
    ("success_threshold", "a `u32`"),
];

/// A key's value given as an expression other than a literal.
pub struct Const {
    pub key: Ident,
    pub expr: Expr,
}

/// Whether the value about to be parsed is a constant expression for `key`
/// (any expression but a literal or a negated literal, which the key's own
/// parser checks).
pub(crate) fn is_const(input: ParseStream, key: &str) -> bool {
    KEYS.iter().any(|(k, _)| *k == key)
        && !input.peek(Lit)
        && !(input.peek(Token![-]) && input.peek2(Lit))
}

/// The kind of constant `key` accepts, for messages: "a `u32`".
pub(crate) fn kind(key: &str) -> Option<&'static str> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
}

/// What else the key takes: a constant of its kind; or, for a key that takes
/// literals only and was given something else, why, and which keys do.
pub(crate) fn literal_only(key: &str, expr: &Expr) -> String {
    if let Some(kind) = kind(key) {
        return format!(", or {kind} constant");
    }
    if matches!(expr, Expr::Lit(_)) {
        return String::new();
    }
    format!(
        "; `{key}` is written as a literal (it shapes the code generated beside the breaker), \
         while the breaker's settings (`threshold`, `failure_rate`, `min_calls`, `slow`, \
         `slow_rate`, `shed`, `recovery`, `jitter`, `trial_calls`, `success_threshold`) also \
         take a constant"
    )
}

/// The setter calls of every constant value, checked by const evaluation;
/// they come last in the `Config` chain, after any default they replace.
pub(crate) fn setters(args: &Args, private: &TokenStream) -> TokenStream {
    args.consts
        .iter()
        .map(|c| {
            let key = &c.key;
            let expr = &c.expr;
            let span = expr.span();
            // The whole call at the value: a failed evaluation points there.
            let consts = crate::tokens::respan(quote!(#private::consts), span);
            let check = format_ident!("{}", key, span = span);
            let mut value = quote_spanned!(span=> #consts::#check(#expr));
            if key == "slow" {
                if let Some(timeout) = &args.timeout {
                    let timeout =
                        crate::tokens::respan(crate::tokens::duration(timeout.value), span);
                    value = quote_spanned!(span=> #consts::slow_under_timeout(#value, #timeout));
                }
            }
            if key == "threshold" && args.written("failure_rate").is_none() {
                if let Some(Window::Calls(n)) = args.window.as_ref().map(|w| &w.value) {
                    let window = proc_macro2::Literal::u32_unsuffixed(*n);
                    value = quote_spanned!(span=> #consts::threshold_within(#value, #window));
                }
            }
            if key == "min_calls" {
                // The rate rule's count window, the default one included;
                // graded shedding alone measures over a time.
                let rate_rule = ["failure_rate", "slow", "slow_rate"]
                    .into_iter()
                    .any(|key| args.written(key).is_some());
                let window = match args.window.as_ref().map(|w| &w.value) {
                    Some(Window::Calls(n)) if rate_rule => Some(*n),
                    None if args.written("window").is_none() && rate_rule => {
                        Some(DEFAULT_WINDOW_CALLS)
                    }
                    _ => None,
                };
                if let Some(window) = window {
                    let window = proc_macro2::Literal::u32_unsuffixed(window);
                    value = quote_spanned!(span=> #consts::min_calls_within(#value, #window));
                }
            }
            let setter = format_ident!("{}", key);
            quote!(.#setter(#value))
        })
        .collect()
}
