//! One process-wide transition hook that never makes the transitioning
//! thread wait.
//!
//! [`events`](crate::ops::events) listeners get transitions in order, with their
//! counts, and may do anything; to keep the order they take a lock, a
//! transition may wait (briefly) for another thread's, and listeners that
//! fall 32 events behind lose the oldest (counted). The hook is for code
//! that must never hold up a breaker's caller — a fleet of instances sharing
//! their opens hands transitions to its background task from here: one
//! function, installed once for the life of the process, called on the
//! transitioning thread right after the transition took effect, with no lock
//! taken and nothing waited for on the way.
//!
//! ```
//! use failfast_runtime::hook::{self, Change};
//! use failfast_runtime::{Breaker, State};
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! static OPENS: AtomicU64 = AtomicU64::new(0);
//!
//! fn count_opens(change: &Change<'_>) {
//!     if change.to == State::Open {
//!         OPENS.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! // Once per process: a second hook is refused.
//! hook::install(&count_opens).expect("no hook yet");
//! assert!(hook::install(&count_opens).is_err());
//!
//! let breaker = Breaker::builder().name("ledger").threshold(1).build()?;
//! let _ = breaker.call(|| Err::<(), _>("timed out"));
//! assert_eq!(OPENS.load(Ordering::Relaxed), 1);
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! # Contract
//!
//! - **Cost.** Nothing on the path of a call that changes no state. A
//!   transition reads one atomic (acquire) to find the hook; the hook gets a
//!   [`Change`] built from the words the transition swapped (no lock, no
//!   allocation, no settings read).
//! - **The hook must not block**: it runs on the caller's thread. Push to a
//!   lock-free structure and let another thread do the work.
//! - **Order.** Transitions of one breaker made one after the other reach
//!   the hook in that order. Two transitions of one breaker made at the same
//!   instant on two threads (a trip racing a [`reset`](crate::Breaker::reset))
//!   reach it on their own threads, in either order; each [`Change`] says
//!   where it started ([`from`](Change::from)), so a consumer sees when one
//!   does not start where the previous one ended.
//! - **A panicking hook** is caught: the breaker and its caller carry on.
//! - The hook is called before the [`events`](crate::ops::events) listeners, and
//!   whether or not there are any.

use std::fmt;
use std::sync::OnceLock;

use crate::core::breaker::transition::TRANSITIONED;

pub use crate::core::breaker::transition::{Cause, Change};

/// The hook's type: a function of the [`Change`], for the life of the process.
pub type Hook = dyn Fn(&Change<'_>) + Send + Sync;

static HOOK: OnceLock<&'static Hook> = OnceLock::new();

/// [`install`] found a hook installed already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyInstalled;

impl fmt::Display for AlreadyInstalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a transition hook is installed already")
    }
}

impl std::error::Error for AlreadyInstalled {}

/// Installs the process's transition hook, called from now on for every
/// transition of every breaker. Once per process.
///
/// # Errors
///
/// [`AlreadyInstalled`] when a hook was installed before (this one is not).
pub fn install(hook: &'static Hook) -> Result<(), AlreadyInstalled> {
    HOOK.set(hook).map_err(|_| AlreadyInstalled)
}

/// Whether a hook is installed.
#[must_use]
pub fn installed() -> bool {
    HOOK.get().is_some()
}

/// Hands every transition to the hook, if one is installed (the state
/// machine catches its panic).
#[linkme::distributed_slice(TRANSITIONED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static CALL: fn(&Change<'_>) = |change| {
    if let Some(hook) = HOOK.get() {
        hook(change);
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's own tests never install a hook, so none is reported
    /// (the installing side is `tests/hook.rs`, a process of its own).
    #[test]
    fn no_hook_is_reported_until_one_is_installed() {
        assert!(!installed());
    }

    #[test]
    fn the_refusal_says_what_happened() {
        assert_eq!(
            AlreadyInstalled.to_string(),
            "a transition hook is installed already"
        );
    }
}
