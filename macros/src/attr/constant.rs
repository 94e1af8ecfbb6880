//! Values given as constants: `threshold = limits::PAYMENTS_THRESHOLD`,
//! `recovery = RECOVERY` (a `Duration` const), `failure_rate = 0.25 * 2.0`.
//!
//! A literal is checked as it is parsed (`value`); any other expression is handed
//! to the runtime's `__private::consts::KEY(expr)`, a `const fn` applying the
//! same rule, inside the breaker's `static` initialiser: const evaluation
//! runs it, so a value that cannot work is a compile error naming the key.
//!
//! ```text
//! Config::new(..)<literal settings>
//!     .threshold(CRATE::__private::consts::threshold(limits::PAYMENTS_THRESHOLD))
//!     .recovery(CRATE::__private::consts::recovery(RECOVERY))
//! ```

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Expr, Lit, Token};

use failfast_rules::Key;

/// A key's value given as an expression other than a literal.
pub struct Const {
    /// Where the key was written.
    pub key: Span,
    /// The setting it is.
    pub setting: Key,
    pub expr: Expr,
}

/// Whether the value about to be parsed is a constant expression for `key`
/// (any expression but a literal or a negated literal, which the key's own
/// parser checks).
pub(crate) fn is_const(input: ParseStream, key: &str) -> bool {
    kind(key).is_some() && !input.peek(Lit) && !(input.peek(Token![-]) && input.peek2(Lit))
}

/// The kind of constant `key` accepts, for messages: "a `u32`"; `None`
/// for a key written as a literal only. Keys whose value may be a
/// constant are settings of the breaker's `Config`, as the table of the
/// settings says (`Key::constant`).
pub(crate) fn kind(key: &str) -> Option<&'static str> {
    Key::from_name(key).and_then(Key::constant)
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
    let constants: Vec<String> = Key::ALL
        .iter()
        .filter(|key| key.constant().is_some())
        .map(|key| format!("`{}`", key.name()))
        .collect();
    format!(
        "; `{key}` is written as a literal (it shapes the code generated beside the breaker), \
         while the breaker's settings ({}) also take a constant",
        constants.join(", ")
    )
}
