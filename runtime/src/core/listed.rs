//! What the registry lists, seen from below it: the breakers the program
//! declares, gathered by the linker, and the observer point at which a
//! breaker's listing is announced.
//!
//! `#[circuit_breaker]` and `breaker!` put an entry in [`DECLARED`] (through
//! `__private`, which re-exports it); the registry reads it on its first
//! use, and a test scope (`testing::isolate`) to know which breakers it
//! stands in for. The registry announces each breaker it lists at
//! [`REGISTERED`], where `metrics` writes its series.

use crate::core::breaker::Breaker;

/// A breaker declared by `#[circuit_breaker]`, and where.
#[doc(hidden)]
#[derive(Debug)]
pub struct Declared {
    /// The function's breaker.
    pub breaker: &'static Breaker,
    /// `file:line` of the function.
    pub at: &'static str,
    /// `module_path!()` of the function: its first segment names the crate.
    pub module: &'static str,
}

/// Every breaker declared by `#[circuit_breaker]` in the program, gathered
/// by the linker.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static DECLARED: [Declared];

/// Told of each breaker the registry lists (a declared one on the
/// registry's first use, another when it is registered), outside the
/// registry's lock: a watcher may look breakers up.
#[linkme::distributed_slice]
pub(crate) static REGISTERED: [fn(&Breaker)];

/// Tells the watchers of [`REGISTERED`] that `breaker` is listed.
pub(crate) fn registered(breaker: &Breaker) {
    for watch in REGISTERED {
        watch(breaker);
    }
}
