//! The `#[circuit_breaker]` attribute of [failfast](https://docs.rs/failfast).
//!
//! Do not depend on this crate directly: add `failfast` and write
//! `#[failfast::circuit_breaker(...)]`. The full reference of the attribute's
//! keys lives in `ATTRIBUTE.md`, shown on the facade's re-export, where every
//! example runs as a doctest against the real runtime.

mod args;
mod classify;
mod expand;

use proc_macro::TokenStream;

/// Guards a function with a circuit breaker: `#[circuit_breaker(key = value, ..)]`
/// on a sync or `async` function or method that returns a `Result`.
///
/// One breaker per function, in a `static` inside its body: a method's breaker
/// serves every instance, and a generic function's breaker serves every
/// instantiation (it guards the dependency, not a type).
///
/// The full reference of the keys, with examples, is on `failfast::circuit_breaker`.
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::circuit_breaker(args.into(), item.into()).into()
}
