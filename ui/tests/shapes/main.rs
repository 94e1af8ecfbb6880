//! Every supported function shape of `#[circuit_breaker]` and `#[retry]`
//! compiles, and runs as it should: each module is one program a user could
//! write, its `main` a test. They are ordinary tests, not trybuild cases: a
//! trybuild case that passes makes trybuild build and link every case and
//! its dependencies, where the compile errors need only be checked.

// The shapes declare what a user's code would: error variants a case never
// builds, fields it never reads, a lifetime bound written in both places,
// futures made only to show that a call compiles.
#![allow(
    dead_code,
    clippy::multiple_bound_locations,
    clippy::let_underscore_future
)]

mod async_trait;
mod const_values;
mod counts_forms;
mod crate_path;
mod every_key;
mod fallback;
mod fallback_by_value;
mod fallback_copy_arguments;
mod free_async;
mod free_sync;
mod generic;
mod impl_trait;
mod methods;
mod one_line_async;
mod result_alias_any_name;
mod result_aliases;
mod retry_fallback;
mod retry_sync;

/// Shapes that need failfast's `tokio` feature (`timeout`, async `#[retry]`).
mod with_tokio {
    mod retry_async;
    mod retry_fallback_async;
    mod timeout_and_max_concurrent;
}
