//! The `#[circuit_breaker]` and `#[retry]` attributes of [failfast](https://docs.rs/failfast).
//!
//! Do not depend on this crate directly: add `failfast` and write
//! `#[failfast::circuit_breaker(...)]`. The full reference of the attribute's
//! keys lives in the facade's `docs/attribute.md`, shown on the facade's re-export, where every
//! example runs as a doctest against the real runtime.

//! The crate is three stages, as thiserror-impl and serde_derive are built,
//! each importing only the ones before it:
//!
//! - `attr`: the arguments parsed into a model (`attr::Args`), each value
//!   held to its own rule as it is read;
//! - `check`: the checks between keys and of the function, on the model,
//!   and what the keys mean together (`check::Breaker`);
//! - `expand`: the generated code, from the checked model only.
//!
//! `tokens` (span and literal helpers) and `moves` (what a body consumes)
//! sit below all three.

mod attr;
mod check;
mod expand;
#[cfg(test)]
mod fuzz;
mod moves;
mod tokens;

use proc_macro::TokenStream;

/// In short: the attribute puts a `static` breaker in the function's body
/// (one per function: a method's breaker serves every instance, a generic
/// function's breaker every instantiation), takes a permit before the body
/// runs, and records the body's `Result` as a success, a failure or a neutral
/// outcome. Generated code names the runtime as `::failfast` unless
/// `crate = path` says otherwise.
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::circuit_breaker(args.into(), item.into()).into()
}

/// Retries the function's `Err`s with exponential backoff, within a retry
/// budget. Written above `#[circuit_breaker]`, each attempt is one breaker
/// call, and a rejection or a neutral error is never retried. The full
/// reference lives in the facade's `docs/retry.md`.
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::retry::retry(args.into(), item.into()).into()
}

/// Declares a breaker once, for several functions to share with
/// `#[circuit_breaker(breaker = NAME, …)]`: `failfast::breaker!(static
/// PAYMENTS = threshold = 5, recovery = "30s");`. The settings are the
/// attribute's keys that configure a breaker, checked the same way; with
/// `max_keys = N` it is a keyed family, and each function gives its `key`.
/// The full reference lives in the facade's `docs/attribute.md`.
#[proc_macro]
pub fn breaker(input: TokenStream) -> TokenStream {
    expand::declaration::breaker(input.into()).into()
}
