//! The runtime's behaviour, as one test binary: each module is the tests of
//! one concern. Tests that need a process of their own are binaries of
//! their own beside this one: a fork (`fork`), the transition hook
//! (`hook`), a counting allocator (`reconfigure_memory`), a test clock for
//! the whole process (`testing_kit`), no other event listener in the
//! process (`delivery`), events delivered on the test's own threads
//! (`tracing`), the document `configure::reload` remembers for the process
//! (`reload`), no metrics recorder in the process (`durations_unrecorded`),
//! the model checker (`loom`) and the long runs, under a panic hook of their
//! own (`stress`). The listing (`listing`) is the one module here that
//! reloads.

mod adaptive;
mod backoff;
mod call_async;
mod configure;
mod dropped;
mod events;
mod half_open;
#[cfg(feature = "keyed")]
mod keyed;
#[cfg(feature = "keyed")]
mod keyed_bounds;
#[cfg(all(feature = "keyed", feature = "serde", feature = "testing"))]
mod listing;
mod metrics_export;
mod model;
mod names;
mod open_transition;
mod panics;
mod reasons;
mod registry;
mod reshape;
mod rules;
mod scenarios;
mod serialized;
mod shed;
mod statistics;
#[cfg(feature = "tokio")]
mod timeout;
mod totals;

/// A call whose errors count only when `counts` says so: the permit
/// resolved with a rule, as the attribute's `counts` does.
pub(crate) fn call_counting<T, E>(
    b: &failfast_runtime::Breaker,
    counts: impl FnOnce(&E) -> bool,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, failfast_runtime::Error<E>> {
    let permit = b.acquire()?;
    let result = f();
    permit.resolve(&result, counts);
    result.map_err(failfast_runtime::Error::Failed)
}
