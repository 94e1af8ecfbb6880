//! Transition events: every change of a breaker's state, delivered to
//! listeners as it happens.
//!
//! ```
//! use failfast_runtime::events::{self, Reason};
//! use failfast_runtime::{Breaker, State};
//! use std::sync::{Arc, Mutex};
//!
//! let breaker = Breaker::builder().name("payments").threshold(2).build()?;
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = Arc::clone(&seen);
//! let _listening = breaker.subscribe(move |t: &events::Transition| {
//!     sink.lock().unwrap().push((t.from, t.to, t.reason));
//! });
//! for _ in 0..2 {
//!     let _ = breaker.call(|| Err::<(), _>("connection refused"));
//! }
//! assert_eq!(
//!     *seen.lock().unwrap(),
//!     [(State::Closed, State::Open, Reason::ThresholdReached)]
//! );
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! # Listeners
//!
//! [`subscribe`] listens to every breaker, [`subscribe_to`] to the breakers of
//! one name (registered or not, called yet or not: an attribute breaker can be
//! listened to before its first call) and, by a keyed family's name, to its
//! members, [`Breaker::subscribe`] to one breaker.
//! Each returns a [`Subscription`]: dropping it stops the listener, and
//! [`Subscription::keep`] keeps it for the rest of the program.
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
//!   breaker's state come back at once, `force_open` racing `reset` say, or
//!   that thread be kept off a processor that long). Only a call that made a
//!   transition can wait (and, rarely, one that started a 257th round of
//!   trials in one half-open period, which renumbers the period), never for
//!   a listener; any other call never does.
//! - **Panics** of a listener, of the `tracing` subscriber, of the `metrics`
//!   recorder or of the [`hook`](crate::integration::hook) are caught (`catch_unwind`), each
//!   on its own: the panic is reported by the panic hook as usual, the other
//!   listeners still get the event, delivery goes on, and the breaker and the
//!   calling thread carry on as if nothing happened.
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
//! transitions to a background task), see [`hook`](crate::integration::hook): one
//! process-wide function, called without a lock before the listeners.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use crate::core::breaker::{Breaker, Mode};
use crate::core::error::State;
use crate::core::name::Name;
use crate::core::word::{
    MODE_DISABLED, MODE_FORCED_CLOSED, MODE_FORCED_OPEN, TAG_CLOSED, TAG_HALF_OPEN, TAG_OPEN, Word,
};

/// Why a breaker changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Reason {
    /// Closed → Open: consecutive counted failures reached `threshold`.
    ThresholdReached,
    /// Closed → Open: the window's failure rate reached `failure_rate`.
    FailureRate,
    /// Closed → Open: the window's slow-call rate reached `slow_rate`.
    SlowCallRate,
    /// Open → HalfOpen: the open time has passed and a call came for a trial.
    RecoveryElapsed,
    /// HalfOpen → Open: a trial call failed (or, with the slow-call rule, was
    /// slow).
    TrialFailed,
    /// HalfOpen → Closed: `success_threshold` trials succeeded.
    TrialsSucceeded,
    /// [`reset`](Breaker::reset), [`force_open`](Breaker::force_open),
    /// [`force_closed`](Breaker::force_closed) or
    /// [`disable`](Breaker::disable). Produces an event even when the state
    /// stays the same: the mode, or the counters, changed.
    Manual,
    /// The breaker's configuration was changed while it ran. Reserved for live
    /// reconfiguration; no transition of this version has this reason.
    ConfigChange,
    /// Closed → Open, or Open → Open with another deadline: an open imposed
    /// from outside ([`Breaker::open_remote`], a fleet of instances sharing
    /// their opens), or its end moved ([`Breaker::release_remote`]). Not
    /// evidence this breaker saw.
    Remote,
}

impl Reason {
    /// A short `snake_case` name, as used in logs and metrics labels.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::ThresholdReached => "threshold_reached",
            Reason::FailureRate => "failure_rate",
            Reason::SlowCallRate => "slow_call_rate",
            Reason::RecoveryElapsed => "recovery_elapsed",
            Reason::TrialFailed => "trial_failed",
            Reason::TrialsSucceeded => "trials_succeeded",
            Reason::Manual => "manual",
            Reason::ConfigChange => "config_change",
            Reason::Remote => "remote",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The counts that decided a transition, as they stood when it happened.
/// Fields that do not apply to its [`Reason`] are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Counts {
    /// Consecutive counted failures ([`Reason::ThresholdReached`]: the
    /// threshold; [`Reason::Manual`] from Closed: the count that was cleared).
    pub consecutive_failures: u32,
    /// Calls in the window ([`Reason::FailureRate`], [`Reason::SlowCallRate`]).
    pub window_calls: u64,
    /// Failed calls in the window.
    pub window_failures: u64,
    /// Slow calls in the window.
    pub window_slow: u64,
    /// Successful trials of the half-open round ([`Reason::TrialsSucceeded`]:
    /// `success_threshold`; [`Reason::TrialFailed`]: those before the failure).
    pub trial_successes: u32,
}

/// One state change of one breaker.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Transition {
    /// The breaker's name.
    pub name: Name,
    /// The state it left. A breaker whose open time had passed but that no
    /// call had tried yet left [`State::Open`].
    pub from: State,
    /// The state it entered.
    pub to: State,
    /// Manual control in force after the transition.
    pub mode: Mode,
    /// Why it changed.
    pub reason: Reason,
    /// The counts that decided it.
    pub counts: Counts,
    /// How long the breaker stays open, as chosen for this opening (growing
    /// open time and jitter included); `None` unless it opened on its own.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::core::serde::option_duration")
    )]
    pub open_for: Option<Duration>,
    /// This breaker's transitions so far, this one included: events of one
    /// breaker arrive with `seq` 1, 2, 3, … (gaps only where events were
    /// dropped, see [`dropped`](Self::dropped), or where a transition
    /// happened while nobody listened).
    pub seq: u64,
    /// Events of this breaker dropped just before this one, which no
    /// listener saw: at most 32 events of a breaker wait for delivery, and
    /// when listeners fall further behind the oldest waiting one is dropped
    /// (see [delivery](self#delivery)). `seq` skips as many numbers. Zero
    /// unless listeners fell that far behind.
    pub dropped: u64,
}

/// What made the state machine move; the reason is worked out from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The consecutive-failure rule tripped.
    Threshold,
    /// A window rule tripped: the failure or the slow-call rate.
    Rate,
    /// A trial failed.
    Trial,
    /// The open time passed.
    Recovery,
    /// Enough trials succeeded.
    Closed,
    /// Manual control.
    Manual,
    /// An open imposed from outside, or its end moved (`remote` module).
    Remote,
}

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
/// followed by a label in brackets (see [`subscribe_to`]).
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
    Subscription { id }
}

/// Listens to every breaker's transitions until the returned
/// [`Subscription`] is dropped. See the [module docs](self) for how events are
/// delivered.
///
/// ```
/// let _listening = failfast_runtime::events::subscribe(|t| {
///     eprintln!("{} went {} → {} ({})", t.name, t.from, t.to, t.reason);
/// });
/// ```
pub fn subscribe(listener: impl Fn(&Transition) + Send + Sync + 'static) -> Subscription {
    add(Target::All, Arc::new(listener))
}

/// Listens to the transitions of every breaker named `name`, including
/// breakers not built or not registered yet, until the returned
/// [`Subscription`] is dropped.
///
/// By a keyed family's name, it listens to the family's members too, its
/// overflow breaker `name[*]` included: to every breaker whose name is
/// `name` followed by a label in brackets, `name[…]`, which is how a
/// member is named (a family's members carry no other mark). So
/// `subscribe_to("inventory")` gets `inventory[eu-1]`, not `inventory-v2`
/// nor `inv[x]`; and, names being free text, also a breaker built by hand
/// as `inventory[x]`, or the members of a family named `inventory[eu]`:
/// keep brackets out of the names of breakers and families. A member's
/// full name, `subscribe_to("inventory[eu-1]")`, listens to that key's
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
/// let _listening = events::subscribe_to(&family, move |t| {
///     sink.lock().unwrap().push(t.name.to_string());
/// });
/// let _ = hosts.get("eu-1").call(|| Err::<(), _>("connection refused"));
/// assert_eq!(*seen.lock().unwrap(), ["inventory[eu-1]"]);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "keyed"))]
/// # fn main() {}
/// ```
pub fn subscribe_to(
    name: impl AsRef<str>,
    listener: impl Fn(&Transition) + Send + Sync + 'static,
) -> Subscription {
    add(Target::Name(name.as_ref().into()), Arc::new(listener))
}

impl Breaker {
    /// Listens to this breaker's transitions until the returned
    /// [`Subscription`] is dropped; see [`events`](crate::ops::events). Also
    /// reachable from a [`BreakerRef`](crate::ops::registry::BreakerRef).
    pub fn subscribe(
        &self,
        listener: impl Fn(&Transition) + Send + Sync + 'static,
    ) -> Subscription {
        add(Target::Breaker(self.hook.id()), Arc::new(listener))
    }
}

/// A listener's registration: dropping it removes the listener (events being
/// delivered at that moment may still reach it).
#[derive(Debug)]
#[must_use = "dropping a subscription at once removes its listener; call `keep()` to listen for good"]
pub struct Subscription {
    id: u64,
}

impl Subscription {
    /// Keeps the listener for the rest of the program.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let id = self.id;
        change(|list| list.retain(|l| l.id != id));
    }
}

/// A breaker's side of events and of its per-transition totals. Off the hot
/// cache line; touched only on transitions.
#[derive(Debug)]
pub(crate) struct Hook {
    /// Identity for per-breaker listeners, given on first use (0: none yet).
    id: AtomicU64,
    /// Transitions so far.
    pub(crate) transitions: AtomicU64,
    /// When the breaker last opened on its own, on its clock (0: never).
    pub(crate) opened_at: AtomicU64,
    /// The period (see `period`) the last delivered transition entered.
    published: AtomicU64,
    queue: Mutex<Queue>,
    /// The breaker's metric keys, built once.
    #[cfg(feature = "metrics")]
    pub(crate) metric_keys: std::sync::OnceLock<crate::ops::metrics::Keys>,
}

/// A breaker's events on their way to the listeners.
#[derive(Debug)]
struct Queue {
    /// Events waiting for delivery, oldest first; at most [`BACKLOG`].
    pending: VecDeque<Transition>,
    /// Whether a thread is delivering this breaker's events.
    delivering: bool,
    /// Events dropped from `pending` since one was last taken for delivery.
    dropped: u64,
}

/// Events a thread delivers at most per transition it makes, its own
/// included (module docs, "Bounded work per call").
const BUDGET: usize = 4;

/// Events of one breaker waiting for delivery at most (module docs,
/// "Bounded backlog").
const BACKLOG: usize = 32;

/// A word's period: what a transition changes and a call's bookkeeping
/// (failure counts, trials in flight) does not.
fn period(w: Word) -> u64 {
    if w.tag() == TAG_OPEN {
        w.0
    } else {
        w.with_payload(0).0
    }
}

fn state(w: Word) -> State {
    match (w.mode(), w.tag()) {
        (MODE_FORCED_OPEN, _) | (_, TAG_OPEN) => State::Open,
        (_, TAG_CLOSED) => State::Closed,
        _ => State::HalfOpen,
    }
}

fn mode(w: Word) -> Mode {
    match w.mode() {
        MODE_FORCED_OPEN => Mode::ForcedOpen,
        MODE_FORCED_CLOSED => Mode::ForcedClosed,
        MODE_DISABLED => Mode::Disabled,
        _ => Mode::Normal,
    }
}

/// The longest a transition waits for the one before it to be queued.
const MAX_TURN_WAIT: Duration = Duration::from_millis(100);

/// Whether any listener (or, with that feature, `tracing`) wants
/// transitions.
#[inline]
fn wanted() -> bool {
    cfg!(feature = "tracing") || LISTENERS.load(Ordering::Relaxed) != 0
}

thread_local! {
    /// This thread's transitions, those of them that waited for their turn,
    /// and those that gave up waiting: see [`thread_turns`].
    static TURNS: Cell<[u64; 3]> = const { Cell::new([0; 3]) };
}

/// Counts one more in `TURNS[i]`.
fn count_turn(i: usize) {
    TURNS.with(|turns| {
        let mut now = turns.get();
        now[i] += 1;
        turns.set(now);
    });
}

/// For tests, not part of the API: the transitions this thread made so far,
/// how many of them waited for the transition before theirs to be queued
/// (the ordering wait of the [module docs](self#delivery)), and how many of
/// those gave up waiting after 100 ms.
#[doc(hidden)]
#[must_use]
pub fn thread_turns() -> (u64, u64, u64) {
    let [made, waited, gave_up] = TURNS.with(Cell::get);
    (made, waited, gave_up)
}

/// For tests, not part of the API: how many events of `breaker` wait for
/// delivery now (at most 32, see the [module docs](self#delivery)).
#[doc(hidden)]
#[must_use]
pub fn backlog(breaker: &Breaker) -> usize {
    breaker.hook.queue().pending.len()
}

/// Ends a thread's turn at delivering should a panic unwind through it, so
/// that the breaker's next transition delivers again. (Every callback is
/// behind `catch_unwind`: this is for the library's own code.)
struct Turn<'a>(&'a Hook);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.queue().delivering = false;
    }
}

impl Hook {
    pub(crate) const fn new() -> Self {
        Self {
            id: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            opened_at: AtomicU64::new(0),
            published: AtomicU64::new(0),
            queue: Mutex::new(Queue {
                pending: VecDeque::new(),
                delivering: false,
                dropped: 0,
            }),
            #[cfg(feature = "metrics")]
            metric_keys: std::sync::OnceLock::new(),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn id(&self) -> u64 {
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 {
            return id;
        }
        let fresh = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        match self
            .id
            .compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => fresh,
            Err(taken) => taken,
        }
    }

    /// Waits until the transition that entered `from`'s period has been
    /// queued, so that events queue in the order the transitions happened. The
    /// wait is for the thread that made that transition to get from its
    /// compare-and-swap to this point: nanoseconds, or as long as the
    /// scheduler keeps it off a processor. Bounded by [`MAX_TURN_WAIT`]:
    /// should the same period come back at once (an open deadline repeated on
    /// a manual clock, `force_open` twice), a transition could otherwise wait
    /// for one that was queued already.
    ///
    /// Only `transitioned` calls it, and `renumbered` (a half-open period
    /// renumbered past its 256th round of trials): a call that does neither
    /// never waits here.
    fn wait_turn(&self, from: Word) {
        let from = period(from);
        if self.published.load(Ordering::Acquire) == from {
            return;
        }
        count_turn(1);
        let mut since = None;
        for spin in 1u32.. {
            if self.published.load(Ordering::Acquire) == from {
                return;
            }
            if spin < 64 {
                std::hint::spin_loop();
                continue;
            }
            std::thread::yield_now();
            if spin % 64 == 0 {
                let began = *since.get_or_insert_with(std::time::Instant::now);
                if began.elapsed() > MAX_TURN_WAIT {
                    count_turn(2);
                    return;
                }
            }
        }
    }

    /// Numbers `transition`, queues it (dropping the oldest waiting event if
    /// [`BACKLOG`] wait already) and marks `to`'s period as entered, in one
    /// step (so numbers, queue and turns agree). Returns this thread's turn
    /// at delivering, unless another thread is delivering already.
    fn enqueue(&self, mut transition: Transition, to: Word) -> Option<Turn<'_>> {
        let mut queue = self.queue();
        transition.seq = self.transitions.fetch_add(1, Ordering::Relaxed) + 1;
        if queue.pending.len() >= BACKLOG {
            queue.pending.pop_front();
            queue.dropped += 1;
        }
        queue.pending.push_back(transition);
        self.published.store(period(to), Ordering::Release);
        if queue.delivering {
            return None;
        }
        queue.delivering = true;
        Some(Turn(self))
    }

    /// Delivers at most [`BUDGET`] events from the front of the queue, then
    /// hands delivery on: what is left waits for the breaker's next
    /// transition.
    fn deliver(&self, breaker: &Breaker, turn: Turn<'_>) {
        let mut left = BUDGET;
        loop {
            let mut queue = self.queue();
            // Checked and given up under one lock: an event queued after
            // this finds nobody delivering, and delivers itself.
            let next = if left == 0 {
                None
            } else {
                queue.pending.pop_front()
            };
            let Some(mut next) = next else {
                queue.delivering = false;
                drop(queue);
                std::mem::forget(turn);
                return;
            };
            next.dropped = std::mem::take(&mut queue.dropped);
            drop(queue);
            left -= 1;
            notify(breaker, &next);
        }
    }
}

/// Hands `t` to `tracing` and to the listeners that want it, each behind its
/// own `catch_unwind`: a subscriber's or a listener's panic is its own, and
/// the breaker, its caller and the delivery carry on.
fn notify(breaker: &Breaker, t: &Transition) {
    #[cfg(feature = "tracing")]
    let _ = catch_unwind(AssertUnwindSafe(|| crate::ops::tracing::transition(t)));
    let Some(listeners) = listeners() else {
        return;
    };
    let id = breaker.hook.id.load(Ordering::Relaxed);
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

impl Breaker {
    /// Bookkeeping and events of a transition from `from` to `to`, made by the
    /// caller's winning compare-and-swap; `open_for` is the open time chosen
    /// (nanoseconds), if it opened on its own.
    #[cold]
    #[inline(never)]
    pub(crate) fn transitioned(&self, from: Word, to: Word, cause: Cause, open_for: u64) {
        let hook = &self.hook;
        let now = self.clock.now();
        if to.tag() == TAG_OPEN && open_for != 0 {
            hook.opened_at.store(now.max(1), Ordering::Relaxed);
        }
        // Before anything that may wait: the hook never does.
        crate::integration::hook::call(
            self,
            state(from),
            state(to),
            mode(to),
            match cause {
                Cause::Manual => crate::integration::hook::Cause::Manual,
                Cause::Remote => crate::integration::hook::Cause::Remote,
                _ => crate::integration::hook::Cause::Calls,
            },
        );
        count_turn(0);
        // The breaker's next transition waits (`wait_turn`) until this one
        // is queued: before that, only what its event needs.
        let turn = if wanted() {
            let transition = Transition {
                name: self.shared_name(),
                from: state(from),
                to: state(to),
                mode: mode(to),
                reason: self.reason(cause, now),
                counts: self.counts(from, cause, now),
                open_for: (open_for != 0).then(|| Duration::from_nanos(open_for)),
                seq: 0,
                dropped: 0,
            };
            hook.wait_turn(from);
            hook.enqueue(transition, to)
        } else {
            hook.transitions.fetch_add(1, Ordering::Relaxed);
            hook.published.store(period(to), Ordering::Release);
            None
        };
        // Not through the queue: metrics see every transition, dropped
        // events included, in whatever order (the series are counts, and
        // the state is read afresh). A recorder's panic is caught there.
        #[cfg(feature = "metrics")]
        crate::ops::metrics::transition(self, state(from), state(to));
        if let Some(turn) = turn {
            hook.deliver(self, turn);
        }
    }

    fn reason(&self, cause: Cause, now: u64) -> Reason {
        match cause {
            Cause::Threshold => Reason::ThresholdReached,
            Cause::Rate => {
                let tally = self.window_tally(now);
                #[allow(clippy::cast_precision_loss)] // exact below 2^53 calls
                let failures = tally.failures as f64 / tally.calls.max(1) as f64;
                let rate = self.settings().failure_rate;
                if rate > 0.0 && failures >= rate {
                    Reason::FailureRate
                } else {
                    Reason::SlowCallRate
                }
            }
            Cause::Trial => Reason::TrialFailed,
            Cause::Recovery => Reason::RecoveryElapsed,
            Cause::Closed => Reason::TrialsSucceeded,
            Cause::Manual => Reason::Manual,
            Cause::Remote => Reason::Remote,
        }
    }

    fn counts(&self, from: Word, cause: Cause, now: u64) -> Counts {
        let mut counts = Counts::default();
        match (cause, from.tag()) {
            (Cause::Threshold, _) => counts.consecutive_failures = from.payload() + 1,
            (Cause::Rate, _) => {
                let tally = self.window_tally(now);
                counts.window_calls = tally.calls;
                counts.window_failures = tally.failures;
                counts.window_slow = tally.slow;
            }
            (Cause::Closed, _) => counts.trial_successes = from.successes() + 1,
            (_, TAG_HALF_OPEN) => counts.trial_successes = from.successes(),
            (Cause::Manual, TAG_CLOSED) => {
                counts.consecutive_failures = self.consecutive_failures(from)
            }
            _ => {}
        }
        counts
    }
}

impl Breaker {
    /// The half-open period moved from `from` to `to` (a fresh generation
    /// for a new round of trials) without a transition: the next transition
    /// comes from `to`, so `to` is the period it waits for.
    #[cold]
    pub(crate) fn renumbered(&self, from: Word, to: Word) {
        if wanted() {
            self.hook.wait_turn(from);
        }
        self.hook.published.store(period(to), Ordering::Release);
    }
}
