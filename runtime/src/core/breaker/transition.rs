//! A breaker's transitions as the layers above the state machine see them.
//!
//! A transition is announced at two points, each a list of functions the
//! linker gathers (`linkme`), so the state machine names none of the
//! modules that watch it:
//!
//! - [`TRANSITIONED`]: on the transitioning thread, right after the
//!   compare-and-swap, with no lock taken and nothing waited for (the
//!   process-wide hook, metrics);
//! - [`DELIVERED`]: each breaker's events in the order its transitions
//!   happened, through a bounded queue (listeners, `tracing`); built only
//!   while one of [`WANTED`] says so.
//!
//! [`RECONFIGURED`] is told when a breaker's settings change at run time.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{Breaker, Mode};
use crate::core::error::State;
use crate::core::name::Name;
use crate::core::word::{Tag, Word};

/// What an exporter keeps for a breaker (the `metrics` module's keys),
/// made once, of a type the state machine does not name.
pub(crate) struct Exported(
    std::sync::OnceLock<
        Box<dyn std::any::Any + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>,
    >,
);

impl Exported {
    const fn new() -> Self {
        Self(std::sync::OnceLock::new())
    }

    /// What was kept, made by `make` the first time. One type per
    /// breaker: asking for another one panics.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn get_or_init<T>(&self, make: impl FnOnce() -> T) -> &T
    where
        T: std::any::Any + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe,
    {
        let kept: &(dyn std::any::Any + Send + Sync) = &**self.0.get_or_init(|| Box::new(make()));
        kept.downcast_ref()
            .expect("one module keeps one type for a breaker")
    }

    /// Whether anything was kept.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn is_set(&self) -> bool {
        self.0.get().is_some()
    }
}

impl fmt::Debug for Exported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_set() {
            "Exported(..)"
        } else {
            "Exported"
        })
    }
}

/// Told of every transition on the transitioning thread: must not block.
#[linkme::distributed_slice]
pub(crate) static TRANSITIONED: [fn(&Change<'_>)];

/// Handed each breaker's transition events in order.
#[linkme::distributed_slice]
pub(crate) static DELIVERED: [fn(&Breaker, &Transition)];

/// Whether events are wanted now (a listener, `tracing`): while none says
/// so, a transition builds no event.
#[linkme::distributed_slice]
pub(crate) static WANTED: [fn() -> bool];

/// Told when a breaker's settings changed at run time.
#[linkme::distributed_slice]
pub(crate) static RECONFIGURED: [fn(&Breaker)];

/// What made a breaker change state, as the transition hook sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// The breaker's own calls: a trip rule, a trial's result, or a call
    /// finding the open time passed.
    Calls,
    /// Manual control:
    /// [`set_mode`](crate::Breaker::set_mode).
    Manual,
    /// An open imposed from outside or its end moved
    /// ([`integration::open_remote`](crate::integration::open_remote),
    /// [`integration::release_remote`](crate::integration::release_remote)).
    Remote,
}

/// One transition, as handed to the transition hook.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Change<'a> {
    /// The breaker that changed state. Its address identifies it for as long
    /// as it lives.
    pub breaker: &'a Breaker,
    /// The state it left.
    pub from: State,
    /// The state it entered.
    pub to: State,
    /// Manual control in force after the transition.
    pub mode: Mode,
    /// What made it change.
    pub cause: Cause,
}

/// Why a breaker changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum TransitionReason {
    /// Closed → Open: counted failures reached `threshold`: consecutive
    /// ones, or, with a `window`, those within it.
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
    /// [`set_mode`](Breaker::set_mode). Produces an event even when the state
    /// stays the same: the mode, or the counters, changed.
    Manual,
    /// Graded shedding (`shed`) started refusing calls, with the chance
    /// [`Transition::shedding`]. Not a change of state: `from` and `to`
    /// are the state the breaker is in (Closed, unless the failure that
    /// started it also tripped the breaker), and
    /// [`Snapshot::transitions`](crate::Snapshot::transitions) does not
    /// count it. [`Counts::window_calls`] holds the requests in the
    /// shedding window (the calls sent and those refused),
    /// [`Counts::window_failures`] the calls sent that were not accepted
    /// (failed, or still running past the patience).
    ///
    /// These four events take their place among the transitions in
    /// [`Transition::seq`]. Each says what is true when it is queued:
    /// `SheddingStarted` and `SheddingStopped` alternate, as do
    /// `LimitLowered` and `LimitRestored`, and the last one delivered is
    /// what holds until the next. A start that a transition on another
    /// thread overtakes before it is queued (the two a few instructions
    /// apart) is told by the guard's next change, if it still holds then.
    SheddingStarted,
    /// Graded shedding stopped refusing calls (the window's successes
    /// caught up, or its last failure left it and a probe goes through, or
    /// the breaker closed, was reset or got a new window). Not a change of
    /// state, as
    /// [`SheddingStarted`](Self::SheddingStarted).
    SheddingStopped,
    /// A counted failure of a closed call, or a window of calls slower
    /// than the latency's baseline, lowered the adaptive concurrency
    /// limit (`max_concurrent = MIN..=MAX`) below its most places, to
    /// [`Counts::concurrency_limit`]. Told once per episode: the limit's
    /// further moves are in snapshots and metrics. Not a change of state.
    LimitLowered,
    /// The adaptive concurrency limit is back at its most places
    /// ([`Counts::concurrency_limit`]): calls at their latency's baseline
    /// raised it, or `set_mode(Mode::Normal)` did. Not a change of state.
    LimitRestored,
    /// Closed → Open, or Open → Open with another deadline: an open imposed
    /// from outside ([`integration::open_remote`](crate::integration::open_remote), a fleet of instances sharing
    /// their opens), or its end moved ([`integration::release_remote`](crate::integration::release_remote)). Not
    /// evidence this breaker saw.
    Remote,
}

impl TransitionReason {
    /// A short `snake_case` name, as used in logs and metrics labels.
    #[must_use]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            TransitionReason::ThresholdReached => "threshold_reached",
            TransitionReason::FailureRate => "failure_rate",
            TransitionReason::SlowCallRate => "slow_call_rate",
            TransitionReason::RecoveryElapsed => "recovery_elapsed",
            TransitionReason::TrialFailed => "trial_failed",
            TransitionReason::TrialsSucceeded => "trials_succeeded",
            TransitionReason::Manual => "manual",
            TransitionReason::Remote => "remote",
            TransitionReason::SheddingStarted => "shedding_started",
            TransitionReason::SheddingStopped => "shedding_stopped",
            TransitionReason::LimitLowered => "limit_lowered",
            TransitionReason::LimitRestored => "limit_restored",
        }
    }
}

impl fmt::Display for TransitionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The counts that decided a transition, as they stood when it happened.
/// Fields that do not apply to its [`TransitionReason`] are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Counts {
    /// Consecutive counted failures ([`TransitionReason::ThresholdReached`]: the
    /// threshold; [`TransitionReason::Manual`] from Closed: the count that was cleared).
    pub consecutive_failures: u32,
    /// Calls in the window ([`TransitionReason::FailureRate`], [`TransitionReason::SlowCallRate`]).
    pub window_calls: u64,
    /// Failed calls in the window.
    pub window_failures: u64,
    /// Slow calls in the window.
    pub window_slow: u64,
    /// Successful trials of the half-open round ([`TransitionReason::TrialsSucceeded`]:
    /// `success_threshold`; [`TransitionReason::TrialFailed`]: those before the failure).
    pub trial_successes: u32,
    /// The adaptive concurrency limit in force after the event, on every
    /// event of a breaker that has one (0 otherwise).
    pub concurrency_limit: u32,
}

/// One event of one breaker: a change of state, or graded shedding or the
/// adaptive concurrency limit starting or stopping to refuse calls (then
/// `from` and `to` are both the state the breaker is in, see
/// [`TransitionReason::SheddingStarted`]).
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
    pub reason: TransitionReason,
    /// The counts that decided it.
    pub counts: Counts,
    /// How long the breaker stays open, as chosen for this opening (growing
    /// open time and jitter included); `None` unless it opened on its own.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::core::serde::option_duration")
    )]
    pub open_for: Option<Duration>,
    /// This breaker's events so far, this one included: events of one
    /// breaker arrive with `seq` 1, 2, 3, … (gaps only where events were
    /// dropped, see [`dropped`](Self::dropped), or where one happened while
    /// nobody listened).
    pub seq: u64,
    /// Events of this breaker dropped just before this one, which no
    /// listener saw: at most 32 events of a breaker wait for delivery, and
    /// when listeners fall further behind the oldest waiting one is dropped
    /// (see [delivery](crate::ops::events#delivery)). `seq` skips as many numbers. Zero
    /// unless listeners fell that far behind.
    pub dropped: u64,
    /// The chance that graded shedding refuses a call, after the event: 0
    /// unless the breaker sheds (see
    /// [`TransitionReason::SheddingStarted`]).
    pub shedding: f64,
}

/// What made the state machine move; the reason is worked out from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
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

/// A breaker's side of its transition events and of its per-transition totals. Off the hot
/// cache line; touched only on transitions.
#[derive(Debug)]
pub(crate) struct Events {
    /// Identity for per-breaker listeners, given on first use (0: none yet).
    id: AtomicU64,
    /// Transitions so far.
    pub(crate) transitions: AtomicU64,
    /// Events so far: transitions, and shedding or the adaptive limit
    /// starting or stopping.
    seq: AtomicU64,
    /// When the breaker last opened on its own, on its clock (0: never).
    pub(crate) opened_at: AtomicU64,
    /// The period (see `period`) the last delivered transition entered.
    published: AtomicU64,
    queue: Mutex<Queue>,
    /// What an exporter keeps for this breaker, made once (the `metrics`
    /// module's keys).
    pub(crate) exported: Exported,
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
    /// What the events told last of each guard: whether shedding refuses
    /// calls, whether the adaptive limit is below its most places (see
    /// [`Breaker::guard_changed`]).
    told: [bool; 2],
}

/// A guard whose refusing starts and stops are events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    /// Graded shedding: refusing calls, or not.
    Shedding = 0,
    /// The adaptive concurrency limit: below its most places, or not.
    Limit = 1,
}

impl Guard {
    /// The event telling that the guard now refuses (`true`) or not.
    fn reason(self, refusing: bool) -> TransitionReason {
        match (self, refusing) {
            (Guard::Shedding, true) => TransitionReason::SheddingStarted,
            (Guard::Shedding, false) => TransitionReason::SheddingStopped,
            (Guard::Limit, true) => TransitionReason::LimitLowered,
            (Guard::Limit, false) => TransitionReason::LimitRestored,
        }
    }
}

/// Events a thread delivers at most per transition it makes, its own
/// included (module docs, "Bounded work per call").
const BUDGET: usize = 4;

/// Events of one breaker waiting for delivery at most (module docs,
/// "Bounded backlog").
const BACKLOG: usize = 32;

fn state(w: Word) -> State {
    match (w.mode(), w.tag()) {
        (Mode::ForcedOpen, _) | (_, Tag::Open) => State::Open,
        (_, Tag::Closed) => State::Closed,
        _ => State::HalfOpen,
    }
}

/// The longest a transition waits for the one before it to be queued.
const MAX_TURN_WAIT: Duration = Duration::from_millis(100);

/// Whether any listener (or, with that feature, `tracing`) wants
/// transitions.
#[inline]
fn wanted() -> bool {
    WANTED.iter().any(|wants| wants())
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
#[must_use]
pub(crate) fn thread_turns() -> (u64, u64, u64) {
    let [made, waited, gave_up] = TURNS.with(Cell::get);
    (made, waited, gave_up)
}

/// For tests, not part of the API: how many events of `breaker` wait for
/// delivery now (at most 32, see the [module docs](self#delivery)).
#[must_use]
pub(crate) fn backlog(breaker: &Breaker) -> usize {
    breaker.events.queue().pending.len()
}

/// Ends a thread's turn at delivering should a panic unwind through it, so
/// that the breaker's next transition delivers again. (Every callback is
/// behind `catch_unwind`: this is for the library's own code.)
struct Turn<'a>(&'a Events);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.queue().delivering = false;
    }
}

impl Events {
    pub(crate) const fn new() -> Self {
        Self {
            id: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            opened_at: AtomicU64::new(0),
            published: AtomicU64::new(0),
            queue: Mutex::new(Queue {
                pending: VecDeque::new(),
                delivering: false,
                dropped: 0,
                told: [false; 2],
            }),
            exported: Exported::new(),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn id(&self) -> u64 {
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 {
            return id;
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
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
    /// Only `transitioned` calls it, `renumbered` (a half-open period
    /// renumbered past its 256th round of trials) and `guard_changed`: a
    /// call that does none of these never waits here.
    ///
    /// A guard's event (`guard_changed`) waits only while `current` is still
    /// in `from`'s period: once the breaker has left it, the event is stale
    /// and `false` is returned.
    fn wait_turn(&self, from: Word, current: impl Fn() -> Option<Word>) -> bool {
        let from = from.period();
        let left = || current().is_some_and(|w| w.period() != from);
        if self.published.load(Ordering::Acquire) == from {
            return true;
        }
        count_turn(1);
        let mut since = None;
        for spin in 1u32.. {
            if self.published.load(Ordering::Acquire) == from {
                return true;
            }
            if left() {
                return false;
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
                    return true;
                }
            }
        }
        unreachable!("the spin count outlasts the wait")
    }

    /// Numbers `transition`, queues it (dropping the oldest waiting event if
    /// [`BACKLOG`] wait already) and marks `to`'s period as entered, in one
    /// step (so numbers, queue and turns agree). Returns this thread's turn
    /// at delivering, unless another thread is delivering already.
    fn enqueue(&self, mut transition: Transition, to: Word) -> Option<Turn<'_>> {
        let queue = self.queue();
        self.transitions.fetch_add(1, Ordering::Relaxed);
        transition.seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.push(queue, transition, to)
    }

    /// Tells whether `guard` refuses now (`refusing`, read under the
    /// queue's lock) if the events last told otherwise: numbered and, when
    /// `event` makes one (a listener wants it), queued. With `ordered`, the
    /// breaker's state when the change was seen, not while the breaker is
    /// out of its period (`current`, read under the lock too, so that a
    /// transition made after the check queues after the event): the next
    /// change of the guard tells it then. Returns this thread's turn at
    /// delivering, as [`enqueue`](Self::enqueue) does.
    fn enqueue_guard(
        &self,
        guard: Guard,
        refusing: impl Fn() -> bool,
        ordered: Option<Word>,
        current: impl Fn() -> Word,
        event: impl FnOnce(TransitionReason) -> Option<Transition>,
    ) -> Option<Turn<'_>> {
        let mut queue = self.queue();
        if let Some(at) = ordered {
            let now = at.period();
            if current().period() != now || self.published.load(Ordering::Acquire) != now {
                return None;
            }
        }
        let refusing = refusing();
        if queue.told[guard as usize] == refusing {
            return None;
        }
        queue.told[guard as usize] = refusing;
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let mut event = event(guard.reason(refusing))?;
        event.seq = seq;
        self.push(queue, event, ordered?)
    }

    fn push(
        &self,
        mut queue: MutexGuard<'_, Queue>,
        transition: Transition,
        to: Word,
    ) -> Option<Turn<'_>> {
        if queue.pending.len() >= BACKLOG {
            queue.pending.pop_front();
            queue.dropped += 1;
        }
        queue.pending.push_back(transition);
        self.published.store(to.period(), Ordering::Release);
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
            for deliver in DELIVERED {
                // A listener's panic is its own: the delivery carries on.
                let _ = catch_unwind(AssertUnwindSafe(|| deliver(breaker, &next)));
            }
        }
    }
}

impl Breaker {
    /// The breaker's identity for listeners of its own transitions.
    pub(crate) fn listener_id(&self) -> u64 {
        self.events.id()
    }

    /// What an exporter keeps for this breaker (see [`Events::exported`]).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn exported(&self) -> &Exported {
        &self.events.exported
    }

    /// Bookkeeping and events of a transition from `from` to `to`, made by the
    /// caller's winning compare-and-swap; `open_for` is the open time chosen
    /// (nanoseconds), if it opened on its own.
    #[cold]
    #[inline(never)]
    pub(crate) fn transitioned(&self, from: Word, to: Word, cause: Why, open_for: u64) {
        let hook = &self.events;
        let now = self.clock.now();
        let was_shedding = to.tag() == Tag::Closed && self.clear_shedding();
        if to.tag() == Tag::Open && open_for != 0 {
            hook.opened_at.store(now.max(1), Ordering::Relaxed);
        }
        // Before anything that may wait: the hook never does, nor do the
        // other observers of this point (metrics).
        let change = Change {
            breaker: self,
            from: state(from),
            to: state(to),
            mode: to.mode(),
            cause: match cause {
                Why::Manual => Cause::Manual,
                Why::Remote => Cause::Remote,
                _ => Cause::Calls,
            },
        };
        for observe in TRANSITIONED {
            // An observer's panic is its own: the breaker carries on.
            let _ = catch_unwind(AssertUnwindSafe(|| observe(&change)));
        }
        count_turn(0);
        // The breaker's next transition waits (`wait_turn`) until this one
        // is queued: before that, only what its event needs.
        let turn = if wanted() {
            let transition = Transition {
                name: self.shared_name(),
                from: state(from),
                to: state(to),
                mode: to.mode(),
                reason: self.reason(cause, now),
                counts: self.counts(from, cause, now),
                open_for: (open_for != 0).then(|| Duration::from_nanos(open_for)),
                seq: 0,
                dropped: 0,
                shedding: self.shedding(),
            };
            hook.wait_turn(from, || None);
            hook.enqueue(transition, to)
        } else {
            hook.transitions.fetch_add(1, Ordering::Relaxed);
            hook.seq.fetch_add(1, Ordering::Relaxed);
            hook.published.store(to.period(), Ordering::Release);
            None
        };
        if let Some(turn) = turn {
            hook.deliver(self, turn);
        }
        if was_shedding {
            self.shedding_changed(0, Counts::default());
        }
    }

    /// The adaptive limit left its most places, or came back to them
    /// (`limit` module).
    pub(crate) fn limit_changed(&self) {
        self.guard_changed(Guard::Limit, Counts::default());
    }

    /// Graded shedding or the adaptive limit (`guard`) started or stopped
    /// refusing calls, `counts` saying why (shedding's window, when it
    /// started): an event from and to the state the breaker is in,
    /// numbered and delivered as a transition's, though not one. What it
    /// tells is read when it is queued, and told only if the events last
    /// told otherwise: two threads changing a guard at once give one event
    /// each way at most, in the order of the queue, the last one true.
    #[cold]
    #[inline(never)]
    pub(crate) fn guard_changed(&self, guard: Guard, mut counts: Counts) {
        let hook = &self.events;
        let wanted = wanted();
        let at = self.load();
        if wanted && !hook.wait_turn(at, || Some(self.load())) {
            return;
        }
        let refusing = || match guard {
            Guard::Shedding => self.hot.shed.load(Ordering::Relaxed) != 0,
            Guard::Limit => self.limit_lowered(),
        };
        let event = |reason| {
            if !wanted {
                return None;
            }
            if reason != TransitionReason::SheddingStarted {
                counts = Counts::default();
            }
            counts.concurrency_limit = self.limit_in_force();
            Some(Transition {
                name: self.shared_name(),
                from: state(at),
                to: state(at),
                mode: at.mode(),
                reason,
                counts,
                open_for: None,
                seq: 0,
                dropped: 0,
                shedding: self.shedding(),
            })
        };
        // Nobody listening: nothing to order, only what was told to keep.
        let ordered = wanted.then_some(at);
        if let Some(turn) = hook.enqueue_guard(guard, refusing, ordered, || self.load(), event) {
            hook.deliver(self, turn);
        }
    }

    fn reason(&self, cause: Why, now: u64) -> TransitionReason {
        match cause {
            Why::Threshold => TransitionReason::ThresholdReached,
            Why::Rate => {
                let tally = self.window_tally(now);
                #[allow(clippy::cast_precision_loss)] // exact below 2^53 calls
                let failures = tally.failures as f64 / tally.calls.max(1) as f64;
                let settings = self.settings();
                let rate = settings.failure_rate;
                if settings.within && tally.failures >= u64::from(settings.threshold) {
                    TransitionReason::ThresholdReached
                } else if rate > 0.0 && failures >= rate {
                    TransitionReason::FailureRate
                } else {
                    TransitionReason::SlowCallRate
                }
            }
            Why::Trial => TransitionReason::TrialFailed,
            Why::Recovery => TransitionReason::RecoveryElapsed,
            Why::Closed => TransitionReason::TrialsSucceeded,
            Why::Manual => TransitionReason::Manual,
            Why::Remote => TransitionReason::Remote,
        }
    }

    fn counts(&self, from: Word, cause: Why, now: u64) -> Counts {
        let mut counts = Counts::default();
        match (cause, from.tag()) {
            (Why::Threshold, _) => counts.consecutive_failures = from.payload() + 1,
            (Why::Rate, _) => {
                let tally = self.window_tally(now);
                counts.window_calls = tally.calls;
                counts.window_failures = tally.failures;
                counts.window_slow = tally.slow;
            }
            (Why::Closed, _) => counts.trial_successes = from.successes() + 1,
            (_, Tag::HalfOpen) => counts.trial_successes = from.successes(),
            (Why::Manual, Tag::Closed) => {
                counts.consecutive_failures = self.consecutive_failures(from)
            }
            _ => {}
        }
        counts.concurrency_limit = self.limit_in_force();
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
            self.events.wait_turn(from, || None);
        }
        self.events.published.store(to.period(), Ordering::Release);
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::Exported;

    #[test]
    fn exported_debugs_as_whether_anything_is_kept() {
        let exported = Exported::new();
        assert_eq!(format!("{exported:?}"), "Exported");
        exported.get_or_init(|| 7_u32);
        assert_eq!(format!("{exported:?}"), "Exported(..)");
    }
}
