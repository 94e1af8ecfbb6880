//! Transition events: every change of a breaker's state, delivered to
//! listeners as it happens; and, in the same sequence, graded shedding or
//! an adaptive concurrency limit starting or stopping to refuse calls
//! (events from and to the same state, see
//! [`TransitionReason::SheddingStarted`] and [`TransitionReason::LimitLowered`]).
//!
//! ```
//! use failfast_runtime::events::{self, TransitionReason};
//! use failfast_runtime::{Breaker, State};
//! use std::sync::{Arc, Mutex};
//!
//! let breaker = Breaker::builder().name("payments").threshold(2).build()?;
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = Arc::clone(&seen);
//! let _listening = events::subscribe(&breaker, move |t: &events::Transition| {
//!     sink.lock().unwrap().push((t.from, t.to, t.reason));
//! });
//! for _ in 0..2 {
//!     let _ = breaker.call(|| Err::<(), _>("connection refused"));
//! }
//! assert_eq!(
//!     *seen.lock().unwrap(),
//!     [(State::Closed, State::Open, TransitionReason::ThresholdReached)]
//! );
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! # Listeners
//!
//! [`subscribe`] listens to every breaker (`subscribe(.., …)`), to the
//! breakers of one name (registered or not, called yet or not: an attribute
//! breaker can be listened to before its first call) and, by a keyed
//! family's name, to its members, or to one breaker given itself
//! (`subscribe(&breaker, …)`). It returns a [`Subscription`]: dropping it
//! stops the listener
//! (`std::mem::forget` keeps it for the rest of the program).
//!
//! # Delivery
//!
//! - **On the thread that made the transition**, right after it took effect
//!   (the breaker already behaves in its new state): the thread whose call or
//!   control made a transition delivers its event, unless another thread is
//!   delivering that breaker's events at that moment. Then it queues the event
//!   for that thread and returns at once; the event may arrive on that thread.
//! - **In order per breaker**: one breaker's events reach listeners one at a
//!   time, in the order its transitions happened, numbered by
//!   [`Transition::seq`] 1, 2, 3, … Numbers are skipped only for events
//!   dropped from a full backlog (each delivered event says how many were
//!   dropped just before it, [`Transition::dropped`]) and for transitions made
//!   while nobody listened.
//! - **Bounded work per call**: a thread delivers at most 4 events per
//!   transition it makes (its own, and those queued before or while it
//!   delivers), each to every listener that wants it. A call that makes one
//!   transition therefore calls any one listener at most 4 times, and a call
//!   that makes none calls no listener. Events still queued when a thread has
//!   delivered its 4 wait for the breaker's next transition, whose thread
//!   delivers them before its own event (within its own 4). This happens only
//!   when events come faster than the listeners take them: more than 3 while
//!   one thread delivers.
//! - **Bounded backlog**: at most 32 events of one breaker wait for delivery
//!   (3 KiB: an event takes 96 bytes, its name shared). When a 33rd comes,
//!   the oldest waiting event is dropped and counted in the `dropped` of the
//!   next one delivered. Events still waiting when their breaker is dropped
//!   are not delivered.
//! - **A slow listener** delays only the thread delivering to it, by at most 4
//!   calls to it per transition that thread makes; a listener that blocks
//!   holds up one thread, in one call. The breaker itself, and every other
//!   caller, go on meanwhile (their events wait, then drop once 32 wait). Do
//!   slow work (I/O, locks held by callers) elsewhere: send the event to a
//!   channel.
//! - **The ordering wait.** To queue events in the order the transitions
//!   happened, a transition made on one thread right after another thread's
//!   waits until that one is queued: the few instructions between the other
//!   thread's compare-and-swap and its queueing (a queue lock held only to
//!   push or pop an event, never while a listener runs), unless the scheduler
//!   interrupts that thread there. The wait is bounded: after 100 ms the event
//!   is queued anyway (which can only happen should one period of the
//!   breaker's state come back at once, two `set_mode` calls racing say, or
//!   that thread be kept off a processor that long). Only a call that made a
//!   transition can wait (and, rarely, one that started a 257th round of
//!   trials in one half-open period, which renumbers the period, or one
//!   whose outcome started or stopped shedding or moved an adaptive limit
//!   off or back to its most places; that one stops waiting as soon as the
//!   breaker's state moves on), never for a listener; any other call never
//!   does.
//! - **Panics** of a listener, of the `tracing` subscriber, of the `metrics`
//!   recorder or of the [`hook`](crate::integration#the-transition-hook) are caught (`catch_unwind`), each
//!   on its own: the panic is reported by the panic hook as usual, the other
//!   listeners still get the event, delivery goes on, and the breaker and the
//!   calling thread carry on as if nothing happened. (Not a panic whose
//!   payload panics as it is dropped, twice over: that one unwinds into
//!   the call that made the transition, and the listeners after the one
//!   that panicked miss the event at hand. The breaker's state stands, and
//!   its next transition delivers again, with any event queued meanwhile.)
//! - A listener may call into breakers, subscribe and unsubscribe; a
//!   transition it causes is queued and delivered after the event at hand.
//!
//! # Cost
//!
//! Nothing on the path of a call that changes no state. A transition reads one
//! relaxed atomic to see whether anyone listens; when nobody does, no event is
//! built and nothing is queued (the transition still counts itself for
//! [`Snapshot::transitions`](crate::Snapshot::transitions)). Listeners are
//! kept in a copy-on-write list, so subscribing takes a lock but delivering
//! only clones an `Arc`. With the `tracing` feature, `tracing` is a listener
//! too: every transition builds its event. The `metrics` feature is not a
//! listener: the transitioning thread reports each transition to the
//! recorder itself, so no transition is missing from the metrics even when
//! events are dropped.
//!
//! For a consumer that must never make a transition wait (a fleet handing
//! transitions to a background task), see [`hook`](crate::integration#the-transition-hook): one
//! process-wide function, called without a lock before the listeners.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::core::breaker::Breaker;
pub use crate::core::breaker::transition::{Counts, Transition, TransitionReason};
use crate::core::breaker::transition::{DELIVERED, WANTED};

type Callback = dyn Fn(&Transition) + Send + Sync;

#[derive(Clone)]
enum Target {
    All,
    Breaker(u64),
    /// The breakers of this name, and those named `name[…]`.
    Name(Box<str>),
}

/// Whether a transition of the breaker named `name` reaches a subscription
/// to `subscribed`: the same name, or a keyed family's member, `subscribed`
/// followed by a label in brackets (see [`subscribe`]).
fn named(subscribed: &str, name: &str) -> bool {
    match name.strip_prefix(subscribed) {
        Some("") => true,
        Some(label) => label.starts_with('[') && label.ends_with(']'),
        None => false,
    }
}

#[derive(Clone)]
struct Listener {
    id: u64,
    target: Target,
    callback: Arc<Callback>,
}

/// Number of listeners: the one relaxed read a transition pays when it is 0.
static LISTENERS: AtomicUsize = AtomicUsize::new(0);
static LIST: RwLock<Vec<Listener>> = RwLock::new(Vec::new());
/// Snapshot of `LIST` for delivery, replaced on every change.
static SNAPSHOT: RwLock<Option<Arc<[Listener]>>> = RwLock::new(None);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn listeners() -> Option<Arc<[Listener]>> {
    SNAPSHOT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn change(f: impl FnOnce(&mut Vec<Listener>)) {
    let mut list = LIST.write().unwrap_or_else(PoisonError::into_inner);
    f(&mut list);
    LISTENERS.store(list.len(), Ordering::Relaxed);
    let snapshot: Arc<[Listener]> = list.iter().cloned().collect();
    *SNAPSHOT.write().unwrap_or_else(PoisonError::into_inner) =
        (!snapshot.is_empty()).then_some(snapshot);
}

fn add(target: Target, callback: Arc<Callback>) -> Subscription {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    change(|list| {
        list.push(Listener {
            id,
            target,
            callback,
        });
    });
    Subscription {
        id,
        end: remove_listener,
    }
}

/// Listens to the transitions of the breakers `source` names until the
/// returned [`Subscription`] is dropped: every breaker's (`..`), those of
/// a name (a `&str` or `String`, breakers not built or not registered yet
/// included), or one breaker's (`&Breaker`, `&Arc<Breaker>`). See the
/// [module docs](self) for how events are delivered.
///
/// ```
/// let _listening = failfast_runtime::events::subscribe(.., |t| {
///     eprintln!("{} went {} → {} ({})", t.name, t.from, t.to, t.reason);
/// });
/// ```
///
/// By a keyed family's name, it listens to the family's members too, its
/// overflow breaker `name[*]` included: to every breaker whose name is
/// `name` followed by a label in brackets, `name[…]`, which is how a
/// member is named (a family's members carry no other mark). So
/// `subscribe("inventory")` gets `inventory[eu-1]`, not `inventory-v2`
/// nor `inv[x]`; and, names being free text, also a breaker built by hand
/// as `inventory[x]`, or the members of a family named `inventory[eu]`:
/// keep brackets out of the names of breakers and families. A member's
/// full name, `subscribe("inventory[eu-1]")`, listens to that key's
/// breakers only.
///
/// ```
/// # #[cfg(feature = "keyed")]
/// # fn main() -> Result<(), failfast_runtime::ConfigError> {
/// use failfast_runtime::{events, Breaker, Family};
/// use std::sync::{Arc, Mutex};
///
/// let hosts: Family<String> =
///     Family::builder(Breaker::builder().name("inventory").threshold(1)).build()?;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let family = String::from("inventory"); // any `&str` or `String`
/// let _listening = events::subscribe(&family, move |t| {
///     sink.lock().unwrap().push(t.name.to_string());
/// });
/// let _ = hosts.get("eu-1").call(|| Err::<(), _>("connection refused"));
/// assert_eq!(*seen.lock().unwrap(), ["inventory[eu-1]"]);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "keyed"))]
/// # fn main() {}
/// ```
///
/// Given a breaker (`&Breaker`, `&Arc<Breaker>`) instead of a name, it
/// listens to that breaker alone, whatever its name.
pub fn subscribe(
    source: impl Into<Source>,
    listener: impl Fn(&Transition) + Send + Sync + 'static,
) -> Subscription {
    add(source.into().0, Arc::new(listener))
}

/// Whose transitions [`subscribe`] listens to: every breaker's (from
/// `..`), the breakers and keyed families of a name (from `&str` or
/// `String`), or one breaker's (from `&Breaker` or `&Arc<Breaker>`).
#[derive(Clone)]
pub struct Source(Target);

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Target::Name(name) => f.debug_tuple("Source").field(name).finish(),
            Target::All => f.write_str("Source(..)"),
            Target::Breaker(_) => f.write_str("Source(breaker)"),
        }
    }
}

impl From<std::ops::RangeFull> for Source {
    /// Every breaker: `subscribe(.., listener)`.
    fn from(_: std::ops::RangeFull) -> Self {
        Source(Target::All)
    }
}

impl From<&str> for Source {
    fn from(name: &str) -> Self {
        Source(Target::Name(name.into()))
    }
}

impl From<&String> for Source {
    fn from(name: &String) -> Self {
        Source(Target::Name(name.as_str().into()))
    }
}

impl From<String> for Source {
    fn from(name: String) -> Self {
        Source(Target::Name(name.into()))
    }
}

impl From<&Breaker> for Source {
    fn from(breaker: &Breaker) -> Self {
        Source(Target::Breaker(breaker.listener_id()))
    }
}

impl From<&Arc<Breaker>> for Source {
    fn from(breaker: &Arc<Breaker>) -> Self {
        Source::from(&**breaker)
    }
}

/// A listener's registration ([`subscribe`], [`subscribe`], or
/// [`integration::watch`](crate::integration::watch)'s): dropping it removes
/// the listener (events being delivered at that moment may still reach it).
/// To listen for the rest of the program, `std::mem::forget` it.
#[derive(Debug)]
#[must_use = "dropping a subscription at once removes its listener; `std::mem::forget` it to listen for good"]
pub struct Subscription {
    id: u64,
    /// Removes the listener `id`.
    end: fn(u64),
}

impl Subscription {
    /// A registration that `end(id)` removes.
    pub(crate) fn new(id: u64, end: fn(u64)) -> Self {
        Subscription { id, end }
    }
}

/// Removes the transition listener `id`.
fn remove_listener(id: u64) {
    change(|list| list.retain(|l| l.id != id));
}

impl Drop for Subscription {
    fn drop(&mut self) {
        (self.end)(self.id);
    }
}

/// Hands `t` to the listeners that want it, each behind its own
/// `catch_unwind`: a listener's panic is its own, and the breaker, its
/// caller and the delivery carry on.
#[linkme::distributed_slice(DELIVERED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static NOTIFY: fn(&Breaker, &Transition) = notify;

/// Whether any listener wants transitions: the one relaxed read a
/// transition pays while there is none.
#[linkme::distributed_slice(WANTED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static LISTENING: fn() -> bool = || LISTENERS.load(Ordering::Relaxed) != 0;

fn notify(breaker: &Breaker, t: &Transition) {
    let Some(listeners) = listeners() else {
        return;
    };
    let id = breaker.listener_id();
    for l in listeners.iter() {
        let wanted = match &l.target {
            Target::All => true,
            Target::Breaker(b) => *b == id,
            Target::Name(n) => named(n, &t.name),
        };
        if wanted {
            let _ = catch_unwind(AssertUnwindSafe(|| (l.callback)(t)));
        }
    }
}
