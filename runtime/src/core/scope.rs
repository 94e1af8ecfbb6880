//! The slot of the test scopes (feature `testing`): the breakers,
//! bulkheads and keyed families a scope of `testing::isolate` puts in place
//! of the program's `static`s, on the threads it is entered on. `testing`
//! fills it (it enters and leaves scopes, and says how a stand-in is made:
//! [`StandIn`]); the macros' entry points and the registry read it, as
//! `clock::SOURCE` is the test clock's slot.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::core::breaker::Breaker;
use crate::core::listed::DECLARED;

/// What a scope can stand in for: a `static` of the program, of which a
/// scope makes a fresh one of its own on first use.
pub(crate) trait StandIn: Any + Sync {
    /// The scope's own, fresh from `shared`'s declared settings.
    fn fresh(shared: &Self) -> Self;
}

/// Scopes entered now, on any thread: each `testing::Scope` alive, and each
/// future of `Scope::bind` or closure of `Scope::wrap` while it runs.
/// While none is, a call reads this and nothing else. Relaxed is enough: a
/// thread in a scope entered it itself, and reads its own increment.
static ENTERED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The scopes entered on this thread, the innermost last.
    static ENTERED_HERE: RefCell<Vec<Arc<Own>>> = const { RefCell::new(Vec::new()) };
}

/// A scope's breakers, families and bulkheads, each by its type and the
/// address of the `static` it stands for. They are leaked, never freed: a
/// call the scope admitted may outlive it (on a thread the test left
/// running), holding a `&'static` to its breaker. With the scope's id,
/// which the registry marks the breakers and families registered in it
/// with.
pub(crate) struct Own(
    Mutex<HashMap<(TypeId, usize), &'static (dyn Any + Sync)>>,
    u64,
);

impl Default for Own {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Own(Mutex::default(), NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

fn address<T>(item: &T) -> usize {
    std::ptr::from_ref(item).addr()
}

fn key<T: Any>(item: &T) -> (TypeId, usize) {
    (TypeId::of::<T>(), address(item))
}

impl Own {
    fn lock(&self) -> MutexGuard<'_, HashMap<(TypeId, usize), &'static (dyn Any + Sync)>> {
        // A map of references: a panic cannot leave it half-changed.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The scope's own for `shared`, made on first use (under the lock:
    /// making one looks up no stand-in).
    fn get<T: StandIn>(&self, shared: &'static T) -> &'static T {
        let own: &'static dyn Any = *self
            .lock()
            .entry(key(shared))
            .or_insert_with(|| Box::leak(Box::new(T::fresh(shared))));
        own.downcast_ref()
            .expect("a stand-in is kept under its own type")
    }

    /// The scope's breaker for `shared`, if `shared` is one an attribute
    /// declared (or one the scope already stands in for).
    fn listed(&self, shared: &'static Breaker) -> Option<&'static Breaker> {
        let known = self.lock().contains_key(&key(shared));
        (known || declared(shared)).then(|| self.get(shared))
    }
}

/// Whether `breaker` is one of the program's declared breakers
/// (`#[circuit_breaker]`, `breaker!`).
fn declared(breaker: &Breaker) -> bool {
    static DECLARED_AT: OnceLock<HashSet<usize>> = OnceLock::new();
    DECLARED_AT
        .get_or_init(|| DECLARED.iter().map(|d| address(d.breaker)).collect())
        .contains(&address(breaker))
}

/// `f` of the innermost scope entered on this thread, if there is one.
#[cold]
#[inline(never)]
fn in_scope<R>(f: impl FnOnce(&Own) -> R) -> Option<R> {
    if ENTERED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let own = ENTERED_HERE
        .try_with(|entered| entered.borrow().last().cloned())
        .ok()
        .flatten()?;
    Some(f(&own))
}

/// What a call through the `static` `shared` uses instead: the scope's
/// own, inside one.
#[inline]
pub(crate) fn stand_in<T: StandIn>(shared: &'static T) -> Option<&'static T> {
    if ENTERED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    in_scope(|own| own.get(shared))
}

/// What the registry shows for the `static` breaker `shared`: inside a
/// scope, the scope's breaker in place of a declared one.
pub(crate) fn listed(shared: &'static Breaker) -> Option<&'static Breaker> {
    in_scope(|own| own.listed(shared)).flatten()
}

/// The id of the innermost scope entered on this thread, if any: the
/// registry lists a breaker or family registered in a scope in that scope
/// alone.
pub(crate) fn current() -> Option<u64> {
    in_scope(|own| own.1)
}

/// Enters `own` on this thread.
pub(crate) fn enter(own: &Arc<Own>) {
    ENTERED.fetch_add(1, Ordering::Relaxed);
    ENTERED_HERE.with_borrow_mut(|entered| entered.push(Arc::clone(own)));
}

/// Leaves `own` on this thread: its latest entry, so that scopes ended out
/// of order leave the others in force.
pub(crate) fn leave(own: &Arc<Own>) {
    let left = ENTERED_HERE.try_with(|entered| {
        let mut entered = entered.borrow_mut();
        let at = entered.iter().rposition(|o| Arc::ptr_eq(o, own))?;
        Some(entered.remove(at))
    });
    drop(left);
    ENTERED.fetch_sub(1, Ordering::Relaxed);
}
