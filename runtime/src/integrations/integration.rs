//! The points other crates build on: what a fleet of instances sharing
//! their opens (the `failfast-fleet` crate), an exporter or a dashboard
//! needs beyond the breakers' own API. An application rarely calls these.
//!
//! - [`install_hook`]: one process-wide function told of every transition,
//!   on the transitioning thread, without ever making it wait.
//! - [`open_remote`] and [`release_remote`]: opens imposed from outside,
//!   on a verdict reached elsewhere; [`fingerprint`] says whether two
//!   instances' breakers of one name have the same settings.
//! - [`watch`]: every registered breaker, those to come included.
//!
//! # The transition hook
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
//! use failfast_runtime::integration::{self, Change};
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
//! assert!(integration::install_hook(&count_opens), "no hook yet");
//! assert!(!integration::install_hook(&count_opens));
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
//!   instant on two threads (a trip racing a [`set_mode`](crate::Breaker::set_mode))
//!   reach it on their own threads, in either order; each [`Change`] says
//!   where it started ([`from`](Change::from)), so a consumer sees when one
//!   does not start where the previous one ended.
//! - **A panicking hook** is caught: the breaker and its caller carry on.
//! - The hook is called before the [`events`](crate::ops::events) listeners, and
//!   whether or not there are any.
//!
//! # Opens imposed from outside
//!
//! A remote open is one compare-and-swap on the state word, like every other
//! transition: Closed → Open with a deadline, or an Open deadline moved later.
//! It never shortens an open, never interrupts a half-open trial already
//! running, and leaves manual modes alone. [`release_remote`] ends an
//! imposed open early, but only while the word still holds the deadline it
//! wrote, and never before the local open it extended: an open caused by this
//! breaker's own evidence is never cut short from outside.
//!
//! Both transitions are delivered to listeners with
//! [`TransitionReason::Remote`](crate::ops::events::TransitionReason::Remote), which is how a fleet
//! tells them from opens caused by local evidence and does not echo them back.
//!
//! Nothing here is on a call's path: the state word keeps its layout, and a
//! call through a breaker that a fleet opened is rejected exactly as one that
//! opened on its own.
//!
//! ```
//! use failfast_runtime::integration::{open_remote, release_remote};
//! use failfast_runtime::{Breaker, State};
//! use std::time::Duration;
//!
//! let breaker = Breaker::builder().name("payments").build()?;
//! let open = open_remote(&breaker, Duration::from_secs(20), None).expect("closed, so opened");
//! assert_eq!(breaker.state(), State::Open);
//! // A shorter remote open changes nothing; the fleet closes: the open ends now.
//! assert!(open_remote(&breaker, Duration::from_secs(1), Some(open)).is_none());
//! assert!(release_remote(&breaker, open, Duration::ZERO).is_some());
//! assert_eq!(breaker.snapshot().retry_after, Some(Duration::ZERO)); // the next call is a trial
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::core::breaker::Breaker;
use crate::core::breaker::transition::TRANSITIONED;
use crate::ops::events::Subscription;
use crate::ops::registry::{self, BreakerRef};

pub use crate::core::breaker::remote::RemoteOpen;
pub use crate::core::breaker::transition::{Cause, Change};

/// The hook: a function of the [`Change`], for the life of the process.
type Hook = dyn Fn(&Change<'_>) + Send + Sync;

static HOOK: OnceLock<&'static Hook> = OnceLock::new();

/// Installs the process's transition hook, called from now on for every
/// transition of every breaker. Once per process: `true` when `hook` is
/// installed, `false` when a hook was installed before (and `hook` is not).
#[must_use = "`false`: another hook was installed before, and this one is not"]
pub fn install_hook(hook: &'static (dyn Fn(&Change<'_>) + Send + Sync)) -> bool {
    HOOK.set(hook).is_ok()
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

/// Refuses calls through `breaker` for `remaining` from now, on a verdict
/// reached elsewhere: opens a closed breaker, or moves an open breaker's
/// deadline later.
///
/// `previous` is the open this breaker last imposed, if any: extending it
/// keeps track of the local open underneath, which [`release_remote`] will
/// not cut short.
///
/// Returns `None`, changing nothing, when the breaker is already open
/// until then or later, is running a half-open trial, or is under manual
/// control ([`Mode`](crate::Mode) other than normal). The transition is
/// delivered to listeners with
/// [`TransitionReason::Remote`](crate::ops::events::TransitionReason::Remote).
pub fn open_remote(
    breaker: &Breaker,
    remaining: Duration,
    previous: Option<RemoteOpen>,
) -> Option<RemoteOpen> {
    breaker.open_remote(remaining, previous)
}

/// Ends an open imposed by [`open_remote`] no later than `within` from now
/// (a trial is then admitted as after any open). Returns the open as it now
/// stands, for a later `open_remote` or `release_remote`.
///
/// Returns `None`, changing nothing, when the breaker no longer holds that
/// open (it moved on, or opened again on its own), or when it would end no
/// sooner. An open caused by local evidence that `open` extended still runs
/// to its own deadline.
pub fn release_remote(breaker: &Breaker, open: RemoteOpen, within: Duration) -> Option<RemoteOpen> {
    breaker.release_remote(open, within)
}

/// A fingerprint of the settings the breaker was built or declared with
/// that decide when it opens and how it recovers, its time limit
/// (`timeout`) included (every setting but the name, the jitter, the
/// trial lease and the concurrency limits, `max_concurrent` and
/// `max_wait`, which bound the calls, not when the breaker opens; a later
/// [`reconfigure`](Breaker::reconfigure) does not change it). Breakers of the same name on different instances count as the
/// same breaker only when their fingerprints match. Stable across
/// processes, platforms and releases of this crate's 0.x line.
#[must_use]
pub fn fingerprint(breaker: &Breaker) -> u64 {
    breaker.declared_config().fingerprint()
}

/// Calls `watcher` with every registered breaker, at once for those
/// registered already and on registration for those to come, until the
/// returned [`Subscription`] is dropped. Each breaker is handed over exactly once,
/// whatever registrations race with this call.
///
/// The callback runs on the registering thread (for an attribute breaker,
/// the thread of its first call): keep it short.
///
/// ```
/// use failfast_runtime::{integration, registry, Breaker};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let _watch = integration::watch(move |b| sink.lock().unwrap().push(b.name().to_owned()));
/// let late = Arc::new(Breaker::builder().name("registered-later").build()?);
/// registry::register(&late);
/// assert!(seen.lock().unwrap().iter().any(|n| n == "registered-later"));
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
pub fn watch(watcher: impl Fn(&BreakerRef) + Send + Sync + 'static) -> Subscription {
    let watcher: Arc<registry::Watcher> = Arc::new(watcher);
    let (id, present) = registry::add_watcher(watcher.clone());
    for breaker in &present {
        watcher(breaker);
    }
    Subscription::new(id, registry::remove_watcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's own tests never install a hook, so none is reported
    /// (the installing side is `tests/hook.rs`, a process of its own).
    #[test]
    fn no_hook_is_reported_until_one_is_installed() {
        assert!(HOOK.get().is_none());
    }
}
