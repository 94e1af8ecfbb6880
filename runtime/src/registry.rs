//! Every breaker, reachable by name.
//!
//! Breakers declared by `#[circuit_breaker]` register themselves on their first
//! call (a breaker whose function has never run has nothing to report).
//! Breakers built with [`Breaker::builder`] are registered with [`register`].
//!
//! ```
//! use failfast_runtime::{registry, Breaker};
//! use std::sync::Arc;
//!
//! let payments = Arc::new(Breaker::builder().name("payments").build()?);
//! registry::register(&payments);
//!
//! let handle = registry::get("payments").expect("registered");
//! handle.force_open();
//! assert_eq!(payments.state(), failfast_runtime::State::Open);
//! handle.reset();
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! Registration takes a lock, once per breaker; calls through a breaker never
//! touch the registry.

use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::breaker::Breaker;

enum Entry {
    Static(&'static Breaker),
    Shared(Weak<Breaker>),
}

impl Entry {
    fn upgrade(&self) -> Option<BreakerRef> {
        match self {
            Entry::Static(b) => Some(BreakerRef::Static(b)),
            Entry::Shared(w) => w.upgrade().map(BreakerRef::Shared),
        }
    }
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn with_entries<R>(f: impl FnOnce(&mut Vec<Entry>) -> R) -> R {
    // The registry holds no invariant a panic could break halfway.
    let mut entries = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    entries.retain(|e| match e {
        Entry::Static(_) => true,
        Entry::Shared(w) => w.strong_count() > 0,
    });
    f(&mut entries)
}

/// A handle to a registered breaker: derefs to [`Breaker`], so it has
/// `name()`, `state()`, `snapshot()`, `reset()`, `force_open()`,
/// `force_closed()` and `disable()`.
#[derive(Clone, Debug)]
pub enum BreakerRef {
    /// A breaker in a `static`, as `#[circuit_breaker]` declares them.
    Static(&'static Breaker),
    /// A breaker built at run time and [`register`]ed.
    Shared(Arc<Breaker>),
}

impl Deref for BreakerRef {
    type Target = Breaker;

    fn deref(&self) -> &Breaker {
        match self {
            BreakerRef::Static(b) => b,
            BreakerRef::Shared(b) => b,
        }
    }
}

/// Registers a breaker built at run time, so [`get`] and [`all`] find it. The
/// registry holds it weakly: once every `Arc` is dropped it disappears.
/// Registering the same breaker twice has no effect.
pub fn register(breaker: &Arc<Breaker>) {
    if breaker.mark_registered() {
        let weak = Arc::downgrade(breaker);
        with_entries(|entries| entries.push(Entry::Shared(weak)));
    }
}

/// Registers a breaker that lives in a `static`.
pub fn register_static(breaker: &'static Breaker) {
    if breaker.mark_registered() {
        with_entries(|entries| entries.push(Entry::Static(breaker)));
    }
}

/// The breaker registered under `name`. When several share a name (two
/// functions given the same `name = "…"`), the first registered.
#[must_use]
pub fn get(name: &str) -> Option<BreakerRef> {
    with_entries(|entries| {
        entries
            .iter()
            .filter_map(Entry::upgrade)
            .find(|b| b.name() == name)
    })
}

/// Every registered breaker, in order of registration.
#[must_use]
pub fn all() -> Vec<BreakerRef> {
    with_entries(|entries| entries.iter().filter_map(Entry::upgrade).collect())
}
