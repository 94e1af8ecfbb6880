//! How a breaker's transitions reach the fleet's task without the breaker ever
//! waiting for it.
//!
//! Each joined breaker has a [`Lane`]: a ring of [`LANE`] slots written by the
//! transitioning thread with one `fetch_add` (its number) and one store (the
//! slot), then one store to its fleet's [`Inbox`] flag. Nothing else: no lock,
//! no allocation, no wake-up of the task, no retry loop — a producer never
//! waits for the task or for another producer, so a stalled, slow or stopped
//! task cannot hold up a breaker's caller.
//!
//! - **Bounded, drop and count.** When the task falls more than [`LANE`]
//!   transitions behind on one breaker, the oldest ones are overwritten; the
//!   task counts them ([`FleetStats::transitions_dropped`](crate::FleetStats))
//!   and catches up from the breaker's current state
//!   ([`Machine::on_overflow`](crate::machine::Machine::on_overflow)).
//! - **In order per breaker.** The task reads a lane in the order its
//!   transitions were numbered. Two threads that change one breaker's state at
//!   the same instant may number their transitions in the other order than
//!   their compare-and-swaps took effect; the task sees it (one transition does
//!   not start where the previous one ended) and catches up from the
//!   breaker's state, as after a drop.
//! - **Polled, not woken.** The task looks at its inbox flag every
//!   [`DRAIN`], and before it handles any store reply, event or tick (so a
//!   reply never meets a machine that has not seen the transitions made
//!   before it arrived). Waking a Tokio task from a thread outside its runtime
//!   (`Waker::wake`, which `futures`' `AtomicWaker` and `tokio::sync::mpsc`
//!   call) pushes it onto the runtime's injection queue under a mutex and
//!   unparks a worker: a lock and a system call on the breaker's thread. A
//!   5 ms poll costs the task 200 idle wake-ups a second and delays a vote by
//!   2.5 ms on average, against store round trips of a millisecond and vote
//!   windows of seconds.
//!
//! failfast breakers write their lane from the runtime's process-wide
//! transition hook ([`failfast_runtime::integration`]), which finds the lane from the
//! breaker's address in a lock-free map (scc's `HashIndex`, read without a
//! lock; its epoch guard allocates once per thread, on the thread's first
//! transition).

use crate::member::LocalTransition;
use failfast_runtime::integration::{Cause, Change};
use failfast_runtime::{Breaker, Mode, State};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

/// Transitions a lane holds for one breaker before the oldest is overwritten.
pub(crate) const LANE: u64 = 32;
/// How often the task reads its lanes.
pub(crate) const DRAIN: Duration = Duration::from_millis(5);

/// One fleet's side of its lanes: whether any was written since the task last
/// read them.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    dirty: AtomicBool,
}

impl Inbox {
    /// Whether a lane was written since the last call.
    pub(crate) fn take(&self) -> bool {
        self.dirty.swap(false, Ordering::Acquire)
    }
}

/// One breaker's transitions on their way to the task.
#[derive(Debug)]
pub(crate) struct Lane {
    /// Transitions numbered so far.
    next: AtomicU64,
    /// Transition `n` is in slot `n % LANE`, as `n << 8 | code`.
    slots: [AtomicU64; LANE as usize],
    inbox: Arc<Inbox>,
}

fn code(state: State) -> u64 {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

fn state(code: u64) -> State {
    match code & 3 {
        0 => State::Closed,
        1 => State::Open,
        _ => State::HalfOpen,
    }
}

fn encode(t: LocalTransition) -> u64 {
    let cause = match t.cause {
        Cause::Calls => 0,
        Cause::Remote => 1,
        // Manual (`Cause` is non-exhaustive).
        _ => 2,
    };
    code(t.from) | code(t.to) << 2 | cause << 4
}

fn decode(entry: u64) -> LocalTransition {
    LocalTransition {
        from: state(entry),
        to: state(entry >> 2),
        cause: match (entry >> 4) & 3 {
            0 => Cause::Calls,
            1 => Cause::Remote,
            _ => Cause::Manual,
        },
    }
}

impl Lane {
    pub(crate) fn new(inbox: Arc<Inbox>) -> Self {
        Lane {
            next: AtomicU64::new(0),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            inbox,
        }
    }

    /// Hands `transition` to the task: a `fetch_add` and two stores.
    pub(crate) fn push(&self, transition: LocalTransition) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.slots[(n % LANE) as usize].store(n << 8 | encode(transition), Ordering::Release);
        self.inbox.dirty.store(true, Ordering::Release);
    }

    /// Hands `out` the transitions numbered after `*read`, in order, each with
    /// whether some were lost right before it, and moves `*read` past them.
    /// Returns how many were lost: overwritten before they were read, or
    /// numbered but still unwritten by a thread that fell a whole lane behind.
    pub(crate) fn drain(&self, read: &mut u64, mut out: impl FnMut(LocalTransition, bool)) -> u64 {
        let (mut lost, mut gap) = (0, false);
        loop {
            let want = *read + 1;
            let entry = self.slots[(want % LANE) as usize].load(Ordering::Acquire);
            let n = entry >> 8;
            if n == want {
                out(decode(entry), std::mem::take(&mut gap));
                *read = want;
            } else if n > want {
                // Overwritten: go on from the oldest transition a lane holds.
                // `n >= want + LANE` was numbered, so this moves forward.
                let newest = self.next.load(Ordering::Acquire);
                let oldest = (newest + 1).saturating_sub(LANE).max(want + 1);
                lost += oldest - want;
                gap = true;
                *read = oldest - 1;
            } else if self.next.load(Ordering::Acquire) >= want + LANE {
                lost += 1;
                gap = true;
                *read = want;
            } else {
                return lost;
            }
        }
    }
}

/// A failfast transition as the fleet sees it.
pub(crate) fn transition(
    from: State,
    to: State,
    mode: Mode,
    remote: bool,
    manual: bool,
) -> LocalTransition {
    let cause = if remote {
        Cause::Remote
    } else if mode != Mode::Normal || manual {
        Cause::Manual
    } else {
        Cause::Calls
    };
    LocalTransition { from, to, cause }
}

/// The lanes of the process's joined failfast breakers, by breaker address
/// (an attached breaker is kept alive by its member, so its address is its
/// own until it leaves).
static ROUTES: LazyLock<scc::HashIndex<usize, Arc<Lane>>> = LazyLock::new(scc::HashIndex::new);

fn address(breaker: &Breaker) -> usize {
    std::ptr::from_ref(breaker) as usize
}

/// The runtime's transition hook: the breaker's lane, if it has one.
fn hook(change: &Change<'_>) {
    ROUTES.peek_with(&address(change.breaker), |_, lane| {
        lane.push(transition(
            change.from,
            change.to,
            change.mode,
            change.cause == Cause::Remote,
            change.cause == Cause::Manual,
        ));
    });
}

/// Whether this crate's hook is the runtime's (installed on first use; `false`
/// when another one was installed first).
fn hooked() -> bool {
    static OURS: OnceLock<bool> = OnceLock::new();
    *OURS.get_or_init(|| failfast_runtime::integration::install_hook(&hook))
}

/// Routes `breaker`'s transitions to `lane`. `false` when the hook is not ours
/// or the breaker already has a lane (it joined another fleet of this
/// process): the caller then listens to its events instead.
pub(crate) fn route(breaker: &Breaker, lane: &Arc<Lane>) -> bool {
    hooked() && ROUTES.insert_sync(address(breaker), lane.clone()).is_ok()
}

/// Stops routing `breaker`'s transitions to `lane`.
pub(crate) fn unroute(breaker: &Breaker, lane: &Arc<Lane>) {
    ROUTES.remove_if_sync(&address(breaker), |l| Arc::ptr_eq(l, lane));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u64) -> LocalTransition {
        // Distinct codes to tell transitions apart: from/to cycle, cause too.
        let states = [State::Closed, State::Open, State::HalfOpen];
        let causes = [Cause::Calls, Cause::Remote, Cause::Manual];
        LocalTransition {
            from: states[(n % 3) as usize],
            to: states[((n / 3) % 3) as usize],
            cause: causes[((n / 9) % 3) as usize],
        }
    }

    #[test]
    fn encoding_round_trips() {
        for n in 0..27 {
            assert_eq!(decode(encode(t(n))), t(n));
        }
    }

    #[test]
    fn a_lane_hands_over_in_order_and_counts_what_it_overwrote() {
        let lane = Lane::new(Arc::default());
        let mut read = 0;
        assert!(!lane.inbox.take());
        for n in 0..5 {
            lane.push(t(n));
        }
        assert!(lane.inbox.take());
        let mut seen = Vec::new();
        assert_eq!(lane.drain(&mut read, |x, gap| seen.push((x, gap))), 0);
        let expected = |ns: std::ops::Range<u64>| ns.map(|n| (t(n), false)).collect::<Vec<_>>();
        assert_eq!(seen, expected(0..5));
        // Far behind: only the newest LANE are left, the rest are counted.
        for n in 0..100 {
            lane.push(t(n));
        }
        seen.clear();
        let lost = lane.drain(&mut read, |x, gap| seen.push((x, gap)));
        assert_eq!(lost + seen.len() as u64, 100);
        assert_eq!(seen.len() as u64, LANE);
        // The first one left comes after a gap; the rest follow in order.
        let mut newest = expected(100 - LANE..100);
        newest[0].1 = true;
        assert_eq!(seen, newest);
        assert_eq!(lane.drain(&mut read, |_, _| panic!("nothing new")), 0);
    }
}
