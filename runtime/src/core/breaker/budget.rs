//! A share of breakers that may be open at once: a keyed family's ejection
//! budget, as its members see it (the family itself is `policy::keyed`).
//!
//! The budget counts the members it holds (the family's stored ones) and
//! those of them that are ejected: Open or HalfOpen, forced open included.
//! The count is changed only under the budget's lock, together with the
//! change of state it follows: every compare-and-swap that makes a member
//! of a budget ejected, or no longer ejected (`cas_counted`), is made
//! holding the lock, and a trip from Closed reads the count, trips and
//! counts itself in one hold of it. So two members failing at the same
//! moment cannot both find the one place left, whatever the interleaving,
//! and the count is exact on every path: a trip, a close (a trial's
//! success, `set_mode`), a forced or remote open, a member joining the
//! count (stored) or leaving it (evicted) in whatever state it is then.
//!
//! Only those transitions take the lock: never a call that changes no
//! state, and neither Open → HalfOpen nor a failed trial's reopening (the
//! member stays ejected). A breaker outside any family has no budget and
//! takes no lock.

use std::sync::Arc;

use super::Breaker;
use crate::core::word::{Tag, Word};
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};

/// A family's ejection budget: at most `percent` % of its counted members
/// (and at least one) ejected after a trip from Closed; at 100 %, no bound
/// (the members are counted all the same, so that a lower percentage set
/// at run time holds from its first trip).
#[derive(Debug)]
pub(crate) struct Budget {
    /// Changed under the lock only, so that a trip reads the percentage and
    /// the counts of one moment; read without it by the family's listing.
    percent: AtomicUsize,
    counts: Mutex<Counts>,
    /// Trips from Closed held back.
    spared: AtomicU64,
}

/// What the budget's lock guards.
#[derive(Debug)]
struct Counts {
    /// Members counted (`COUNTED`).
    members: usize,
    /// Those of them ejected.
    ejected: usize,
}

impl Budget {
    /// A budget of `percent` % (1 to 100; 100 bounds nothing), counting
    /// no member yet.
    pub(crate) fn new(percent: u8) -> Arc<Self> {
        Arc::new(Self {
            percent: AtomicUsize::new(usize::from(percent)),
            counts: Mutex::new(Counts {
                members: 0,
                ejected: 0,
            }),
            spared: AtomicU64::new(0),
        })
    }

    /// The trips from Closed held back so far.
    pub(crate) fn spared(&self) -> u64 {
        self.spared.load(Ordering::Relaxed)
    }

    /// The percentage in force.
    pub(crate) fn percent(&self) -> u8 {
        u8::try_from(self.percent.load(Ordering::Relaxed)).unwrap_or(u8::MAX)
    }

    /// Makes the budget `percent` % from the next trip on. Members ejected
    /// now stay so whatever the new share: a lower one holds back trips
    /// until enough of them have closed, a higher one lets more trip.
    pub(crate) fn set_percent(&self, percent: u8) {
        let counts = self.lock();
        self.percent.store(usize::from(percent), Ordering::Relaxed);
        drop(counts);
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Nothing under the lock panics: the counts are whole.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Counts {
    /// Whether one more member may be ejected: at most `percent` % of the
    /// members (rounded down, and at least one) would be after it; always
    /// at 100 %.
    fn has_room(&self, percent: usize) -> bool {
        percent >= 100 || self.ejected < (self.members * percent / 100).max(1)
    }
}

/// A breaker asks its budget before a trip from Closed, and is not counted.
const ASKS: u32 = 0;
/// A breaker asks, and is counted.
const COUNTED: u32 = 1;
/// A breaker left its budget (evicted): neither asks nor is counted.
const LEFT: u32 = 2;

/// A breaker's place in its budget.
#[derive(Debug)]
pub(crate) struct Ejection {
    budget: Arc<Budget>,
    /// `ASKS`, `COUNTED` or `LEFT`; changed under the budget's lock only.
    place: AtomicU32,
}

/// The budget's lock, held across a compare-and-swap that may make the
/// breaker ejected or no longer ejected (and, for a trip, across the
/// question before it).
pub(crate) struct Held<'a> {
    ejection: &'a Ejection,
    counts: MutexGuard<'a, Counts>,
}

impl Held<'_> {
    /// A change from `from` to `to`, just made while holding the lock.
    fn moved(&mut self, from: Word, to: Word) {
        if self.ejection.place.load(Ordering::Relaxed) != COUNTED {
            return;
        }
        match (ejected(from), ejected(to)) {
            (false, true) => self.counts.ejected += 1,
            (true, false) => self.counts.ejected -= 1,
            _ => {}
        }
    }
}

/// Whether a breaker whose word is `w` is ejected: its state is not Closed
/// (Open or HalfOpen, forced open included). The tag says it whatever the
/// mode: a forced open is an Open word, a forced close a Closed one, and
/// neither leaves its tag until the mode changes. Open and HalfOpen both
/// are ejected, so which of the two the clock makes of an Open word does
/// not matter.
pub(crate) fn ejected(w: Word) -> bool {
    w.tag() != Tag::Closed
}

impl Breaker {
    #[inline]
    fn ejection(&self) -> Option<&Ejection> {
        #[cfg(any(feature = "keyed", loom))]
        return self.ejection.get();
        #[cfg(not(any(feature = "keyed", loom)))]
        None
    }

    /// Makes the breaker ask `budget` before each trip from Closed (once; a
    /// second budget is ignored). Not counted until it
    /// [joins](Self::join_budget).
    #[cfg(any(feature = "keyed", loom))]
    pub(crate) fn ask_before_opening(&self, budget: Arc<Budget>) {
        let _ = self.ejection.set(Ejection {
            budget,
            place: AtomicU32::new(ASKS),
        });
    }

    /// Counts the breaker in its budget, ejected or not as it is now.
    pub(crate) fn join_budget(&self) {
        self.place_in_budget(COUNTED);
    }

    /// Takes the breaker out of its budget for good, ejected or not as it
    /// is now: the budget neither counts it nor holds it back any more.
    pub(crate) fn leave_budget(&self) {
        self.place_in_budget(LEFT);
    }

    fn place_in_budget(&self, to: u32) {
        let Some(ejection) = self.ejection() else {
            return;
        };
        let mut counts = ejection.budget.lock();
        let from = ejection.place.load(Ordering::Relaxed);
        if from == LEFT || from == to {
            return;
        }
        ejection.place.store(to, Ordering::Relaxed);
        // Every change of the word that would make the breaker ejected or no
        // longer ejected holds the lock: the word read here stays as it is.
        let ejected = usize::from(ejected(self.load()));
        if to == COUNTED {
            counts.members += 1;
            counts.ejected += ejected;
        } else if from == COUNTED {
            counts.members -= 1;
            counts.ejected -= ejected;
        }
    }

    /// Asked before a trip from Closed: `Ok` with the budget's lock to trip
    /// holding (`None` without a budget), or `Err` when the budget has no
    /// room (counted as spared): the breaker stays Closed with its counts
    /// as they are, so the next failure asks again.
    pub(super) fn ask_budget(&self) -> Result<Option<Held<'_>>, ()> {
        let Some(held) = self.hold_budget() else {
            return Ok(None);
        };
        let budget = &held.ejection.budget;
        if held.ejection.place.load(Ordering::Relaxed) == LEFT
            || held.counts.has_room(budget.percent.load(Ordering::Relaxed))
        {
            return Ok(Some(held));
        }
        budget.spared.fetch_add(1, Ordering::Relaxed);
        Err(())
    }

    fn hold_budget(&self) -> Option<Held<'_>> {
        let ejection = self.ejection()?;
        Some(Held {
            ejection,
            counts: ejection.budget.lock(),
        })
    }

    /// [`cas`](Self::cas), for a change that may make the breaker ejected or
    /// no longer ejected: takes the budget's lock first when it does (and
    /// keeps it in `held`, for the caller's next tries and until its change
    /// is made), and counts the change once made. The caller lets go of
    /// `held` before announcing the transition.
    pub(super) fn cas_counted<'a>(
        &'a self,
        w: Word,
        new: Word,
        held: &mut Option<Held<'a>>,
    ) -> Result<(), Word> {
        if held.is_none() && ejected(w) != ejected(new) {
            *held = self.hold_budget();
        }
        self.cas(w, new)?;
        if let Some(held) = held {
            held.moved(w, new);
        }
        Ok(())
    }
}

/// Under the model checker: `breakers` share one budget of `percent` %,
/// each counted (what a family does with its stored members).
#[cfg(loom)]
impl Breaker {
    #[doc(hidden)]
    #[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
    pub fn share_ejection_budget(breakers: &[&Breaker], percent: u8) {
        let budget = Budget::new(percent);
        for breaker in breakers {
            breaker.ask_before_opening(Arc::clone(&budget));
            breaker.join_budget();
        }
    }
}

#[cfg(test)]
#[cfg(all(feature = "keyed", not(loom)))]
mod tests {
    use super::*;
    use crate::{ManualClock, Mode, State};
    use std::time::Duration;

    const RECOVERY: Duration = Duration::from_secs(1);

    /// `n` breakers on `clock`, counted in one budget of `percent` %.
    fn family(clock: &ManualClock, n: usize, percent: u8) -> (Arc<Budget>, Vec<Breaker>) {
        let budget = Budget::new(percent);
        let members = (0..n)
            .map(|_| {
                let b = Breaker::builder()
                    .threshold(1)
                    .recovery(RECOVERY)
                    .clock(clock.clone())
                    .build()
                    .unwrap();
                b.ask_before_opening(Arc::clone(&budget));
                b.join_budget();
                b
            })
            .collect();
        (budget, members)
    }

    fn fail(b: &Breaker) -> State {
        let _ = b.call(|| Err::<(), _>("down"));
        b.state()
    }

    /// Members counted, and those of them ejected.
    fn counts(budget: &Budget) -> (usize, usize) {
        let counts = budget.lock();
        (counts.members, counts.ejected)
    }

    /// A breaker's word is ejected exactly when its state is not Closed, in
    /// every mode and state: closed, open, half-open, forced open, forced
    /// closed over an open breaker, observe-only open.
    #[test]
    fn a_word_is_ejected_when_its_state_is_not_closed() {
        let clock = ManualClock::new();
        let (_, members) = family(&clock, 1, 50);
        let b = &members[0];
        let agrees = |what: &str| {
            assert_eq!(ejected(b.load()), b.state() != State::Closed, "{what}");
        };
        agrees("closed");
        fail(b);
        agrees("open");
        clock.advance(RECOVERY);
        agrees("open past its open time");
        let trial = b.acquire().unwrap();
        agrees("half-open");
        drop(trial);
        b.set_mode(Mode::ForcedClosed);
        agrees("forced closed");
        b.set_mode(Mode::ForcedOpen);
        agrees("forced open");
        b.set_mode(Mode::ObserveOnly);
        agrees("observe-only, closed");
        fail(b);
        agrees("observe-only, open");
        b.set_mode(Mode::ForcedClosed);
        agrees("forced closed over an open breaker");
    }

    /// At most `percent` % of the members open after a trip, rounded down:
    /// of three at 50 %, one (not two); of four, two; and at least one.
    #[test]
    fn the_share_is_of_the_members_after_the_trip_rounded_down() {
        let clock = ManualClock::new();
        for (n, percent, room) in [(3, 50, 1), (4, 50, 2), (4, 25, 1), (4, 1, 1), (5, 40, 2)] {
            let (budget, members) = family(&clock, n, percent);
            let open = members.iter().filter(|b| fail(b) == State::Open).count();
            assert_eq!(open, room, "{n} at {percent} %");
            assert_eq!(budget.spared(), (n - room) as u64, "{n} at {percent} %");
            assert_eq!(counts(&budget), (n, room));
        }
    }

    /// Every way to and from ejected moves the count once: a trip,
    /// a trial that fails (no move) and one that succeeds, a forced open
    /// over an open breaker (no move), a forced close, a forced open from
    /// Closed (not held back), a remote open, a member leaving the count
    /// while open and one joining it while open.
    #[test]
    fn the_count_follows_every_way_in_and_out() {
        let clock = ManualClock::new();
        let (budget, members) = family(&clock, 4, 25);
        assert_eq!(fail(&members[0]), State::Open);
        assert_eq!(counts(&budget), (4, 1));
        clock.advance(RECOVERY);
        assert_eq!(fail(&members[0]), State::Open, "a failed trial");
        assert_eq!(counts(&budget), (4, 1));
        clock.advance(RECOVERY * 2);
        assert!(members[0].call(|| Ok::<_, ()>(())).is_ok());
        assert_eq!(members[0].state(), State::Closed, "a trial that succeeds");
        assert_eq!(counts(&budget), (4, 0));
        assert_eq!(fail(&members[0]), State::Open);
        members[0].set_mode(Mode::ForcedOpen);
        assert_eq!(counts(&budget), (4, 1));
        members[0].set_mode(Mode::ForcedClosed);
        assert_eq!(counts(&budget), (4, 0));
        members[0].set_mode(Mode::Normal);
        assert_eq!(counts(&budget), (4, 0));
        members[1].set_mode(Mode::ForcedOpen);
        assert!(members[2].open_remote(RECOVERY, None).is_some());
        assert_eq!(counts(&budget), (4, 2), "neither held back");
        assert_eq!(fail(&members[3]), State::Closed, "over budget");
        members[1].leave_budget();
        assert_eq!(counts(&budget), (3, 1));
        members[1].leave_budget();
        members[1].set_mode(Mode::Normal);
        assert_eq!(counts(&budget), (3, 1), "no longer counted");
        members[2].set_mode(Mode::Normal);
        assert_eq!(counts(&budget), (3, 0));
        members[1].set_mode(Mode::ForcedOpen);
        members[1].join_budget();
        assert_eq!(counts(&budget), (3, 0), "a member that left stays out");
        assert_eq!(fail(&members[3]), State::Open);
        assert_eq!(counts(&budget), (3, 1));
        let late = Breaker::builder().threshold(1).build().unwrap();
        late.ask_before_opening(Arc::clone(&budget));
        late.set_mode(Mode::ForcedOpen);
        assert_eq!(counts(&budget), (3, 1), "asking, not counted");
        late.join_budget();
        late.join_budget();
        assert_eq!(counts(&budget), (4, 2), "counted as it is, once");
    }

    /// At 100 % nothing is held back, not even a breaker not counted when
    /// every counted one is open; the members are counted all the same, so
    /// a lower share set later holds from the next trip, and a higher one
    /// makes room at once.
    #[test]
    fn the_share_changes_from_the_next_trip() {
        let clock = ManualClock::new();
        let (budget, members) = family(&clock, 4, 100);
        for b in &members[..3] {
            assert_eq!(fail(b), State::Open);
        }
        let asking = Breaker::builder().threshold(1).build().unwrap();
        asking.ask_before_opening(Arc::clone(&budget));
        assert_eq!(fail(&asking), State::Open, "100 %: no bound");
        assert_eq!(counts(&budget), (4, 3));
        budget.set_percent(50);
        assert_eq!(budget.percent(), 50);
        assert_eq!(fail(&members[3]), State::Closed, "three open, room for two");
        assert!(members[..3].iter().all(|b| b.state() == State::Open));
        budget.set_percent(100);
        assert_eq!(fail(&members[3]), State::Open);
        assert_eq!(budget.spared(), 1);
    }

    /// A breaker that asks but is not counted (a family's overflow breaker)
    /// is held back when the budget is spent, and opens without counting
    /// when it is not; one that left (evicted) is never held back.
    #[test]
    fn a_member_not_counted_asks_and_one_that_left_does_not() {
        let clock = ManualClock::new();
        let (budget, members) = family(&clock, 2, 50);
        let asking = Breaker::builder().threshold(1).build().unwrap();
        asking.ask_before_opening(Arc::clone(&budget));
        assert_eq!(fail(&asking), State::Open);
        assert_eq!(counts(&budget), (2, 0));
        asking.set_mode(Mode::Normal);
        assert_eq!(fail(&members[0]), State::Open);
        assert_eq!(fail(&asking), State::Closed, "the budget is spent");
        assert_eq!(budget.spared(), 1);
        members[1].leave_budget();
        assert_eq!(fail(&members[1]), State::Open, "left: not held back");
        assert_eq!(counts(&budget), (1, 1));
    }
}
