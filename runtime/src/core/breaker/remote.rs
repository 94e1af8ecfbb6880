//! Opens imposed from outside the breaker (see [`integration`](crate::integration)):
//! one compare-and-swap on the state word, like every other transition.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::transition::Why;
use super::{Breaker, Mode};
use crate::core::clock::duration_nanos;
use crate::core::word::{MAX_DEADLINE, Tag, Word};

/// An open imposed by [`open_remote`](crate::integration::open_remote): what
/// [`release_remote`](crate::integration::release_remote) needs to end it, and the next
/// `open_remote` to extend it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteOpen {
    /// The deadline written, on the breaker's clock.
    deadline: u64,
    /// The deadline of the open caused by local evidence that this one
    /// extended (0: the breaker was not open on its own).
    floor: u64,
}

impl Breaker {
    /// Refuses calls for `remaining` from now, on a verdict reached elsewhere:
    /// opens a closed breaker, or moves an open breaker's deadline later.
    ///
    /// `previous` is the open this breaker last imposed, if any: extending it
    /// keeps track of the local open underneath, which
    /// [`release_remote`](crate::integration::release_remote) will not cut short.
    ///
    /// Returns `None`, changing nothing, when the breaker is already open
    /// until then or later, is running a half-open trial, or is under manual
    /// control ([`Mode`](crate::Mode) other than normal). The transition is
    /// delivered to listeners with
    /// [`TransitionReason::Remote`](crate::ops::events::TransitionReason::Remote).
    pub(crate) fn open_remote(
        &self,
        remaining: Duration,
        previous: Option<RemoteOpen>,
    ) -> Option<RemoteOpen> {
        let now = self.clock.now();
        let deadline = now
            .saturating_add(duration_nanos(remaining))
            .min(MAX_DEADLINE);
        let mut w = self.load();
        // An open from Closed is counted in a family's ejection budget (not
        // held back by it: the verdict was reached elsewhere).
        let mut held = None;
        loop {
            if w.mode() != Mode::Normal {
                return None;
            }
            let floor = match w.tag() {
                Tag::Open if w.deadline() >= deadline => return None,
                Tag::Open => match previous {
                    Some(p) if p.deadline == w.deadline() => p.floor,
                    _ => w.deadline(),
                },
                Tag::HalfOpen if w.in_flight() > 0 => return None,
                _ => 0,
            };
            let new = Word::open(Mode::Normal, deadline);
            match self.cas_counted(w, new, &mut held) {
                Ok(()) => {
                    drop(held);
                    if w.tag() != Tag::Open {
                        self.clear_window();
                        self.last_transition.store(now, Ordering::Relaxed);
                    }
                    self.transitioned(w, new, Why::Remote, 0);
                    return Some(RemoteOpen { deadline, floor });
                }
                Err(actual) => w = actual,
            }
        }
    }

    /// Ends an open imposed by [`open_remote`](crate::integration::open_remote) no later
    /// than `within` from now (a trial is then admitted as after any open).
    /// Returns the open as it now stands, for a later `open_remote` or
    /// `release_remote`.
    ///
    /// Returns `None`, changing nothing, when the breaker no longer holds
    /// that open (it moved on, or opened again on its own), or when it would
    /// end no sooner. An open caused by local evidence that `open` extended
    /// still runs to its own deadline.
    pub(crate) fn release_remote(&self, open: RemoteOpen, within: Duration) -> Option<RemoteOpen> {
        let w = self.load();
        if w.mode() != Mode::Normal || w.tag() != Tag::Open || w.deadline() != open.deadline {
            return None;
        }
        let at = self.clock.now().saturating_add(duration_nanos(within));
        let deadline = at.max(open.floor);
        if deadline >= open.deadline {
            return None;
        }
        let new = Word::open(Mode::Normal, deadline);
        self.cas(w, new).ok()?;
        self.transitioned(w, new, Why::Remote, 0);
        Some(RemoteOpen { deadline, ..open })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integration::fingerprint;
    use crate::ops::events::TransitionReason as Reason;
    use crate::{ManualClock, State};
    use std::sync::{Arc, Mutex};

    const PINNED: u64 = 14_004_745_945_460_312_066;

    fn breaker(clock: &ManualClock) -> Breaker {
        Breaker::builder()
            .name("remote-tests")
            .threshold(1)
            .recovery(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    #[test]
    fn a_remote_open_rejects_calls_until_its_deadline_then_admits_a_trial() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let open = b.open_remote(Duration::from_secs(3), None);
        assert!(open.is_some());
        let rejected = b.acquire().expect_err("open");
        assert_eq!(rejected.retry_after(), Some(Duration::from_secs(3)));
        clock.advance(Duration::from_secs(3));
        let trial = b.acquire().expect("a trial");
        assert!(trial.is_trial());
        trial.record(crate::Outcome::Success);
        assert_eq!(b.state(), State::Closed);
    }

    #[test]
    fn a_remote_open_extends_but_never_shortens_and_spares_trials_and_manual_modes() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        b.acquire().unwrap().record(crate::Outcome::Failure); // open on its own for 10 s
        assert_eq!(b.open_remote(Duration::from_secs(5), None), None);
        let longer = b
            .open_remote(Duration::from_secs(20), None)
            .expect("extended");
        assert_eq!(b.snapshot().retry_after, Some(Duration::from_secs(20)));
        // Released: the local open still runs to its own 10 s.
        assert!(b.release_remote(longer, Duration::ZERO).is_some());
        assert_eq!(b.snapshot().retry_after, Some(Duration::from_secs(10)));
        clock.advance(Duration::from_secs(10));
        let trial = b.acquire().expect("the local trial");
        assert_eq!(b.open_remote(Duration::from_secs(20), None), None);
        trial.record(crate::Outcome::Neutral);
        assert!(b.open_remote(Duration::from_secs(20), None).is_some());
        b.set_mode(crate::Mode::ForcedClosed);
        assert_eq!(b.open_remote(Duration::from_secs(20), None), None);
        assert!(b.acquire().is_ok());
    }

    #[test]
    fn release_only_ends_the_open_it_imposed() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let first = b.open_remote(Duration::from_secs(5), None).unwrap();
        let second = b.open_remote(Duration::from_secs(8), Some(first)).unwrap();
        assert_eq!(
            b.release_remote(first, Duration::ZERO),
            None,
            "no longer held"
        );
        let shorter = b.release_remote(second, Duration::from_secs(2)).unwrap();
        assert_eq!(b.snapshot().retry_after, Some(Duration::from_secs(2)));
        // The released open can be released further, never lengthened.
        assert_eq!(b.release_remote(shorter, Duration::from_secs(3)), None);
        let shortest = b.release_remote(shorter, Duration::from_secs(1)).unwrap();
        assert_eq!(b.snapshot().retry_after, Some(Duration::from_secs(1)));
        clock.advance(Duration::from_secs(1));
        b.acquire().unwrap().record(crate::Outcome::Failure); // reopened on its own evidence
        assert_eq!(b.release_remote(shortest, Duration::ZERO), None);
        assert_eq!(b.state(), State::Open);
    }

    #[test]
    fn remote_transitions_reach_listeners_as_remote() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let _s = crate::events::subscribe(&b, move |t| {
            sink.lock().unwrap().push((t.from, t.to, t.reason))
        });
        let open = b.open_remote(Duration::from_secs(5), None).unwrap();
        assert!(b.release_remote(open, Duration::ZERO).is_some());
        clock.advance(Duration::from_secs(1));
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (State::Closed, State::Open, Reason::Remote),
                (State::Open, State::Open, Reason::Remote),
                (State::Open, State::HalfOpen, Reason::RecoveryElapsed),
                (State::HalfOpen, State::Open, Reason::TrialFailed),
            ]
        );
    }

    /// Threads racing to impose opens of different lengths, one tripping the
    /// breaker on its own meanwhile: whatever the interleaving, the breaker
    /// ends up open until the latest deadline asked for.
    #[test]
    fn racing_remote_opens_leave_the_latest_deadline() {
        for round in 0..50u64 {
            let clock = ManualClock::new();
            let b = Arc::new(breaker(&clock));
            let threads: Vec<_> = (1..=4u64)
                .map(|t| {
                    let b = b.clone();
                    std::thread::spawn(move || {
                        for i in 0..50 {
                            let secs = (t * 7 + i * 13 + round) % 40 + 1;
                            let _ = b.open_remote(Duration::from_secs(secs), None);
                        }
                    })
                })
                .collect();
            let tripper = {
                let b = b.clone();
                std::thread::spawn(move || {
                    if let Ok(permit) = b.acquire() {
                        permit.record(crate::Outcome::Failure); // 10 s on its own, if still closed
                    }
                })
            };
            for t in threads {
                t.join().unwrap();
            }
            tripper.join().unwrap();
            let longest = (1..=4u64)
                .flat_map(|t| (0..50).map(move |i| (t * 7 + i * 13 + round) % 40 + 1))
                .max()
                .unwrap();
            assert_eq!(
                b.snapshot().retry_after,
                Some(Duration::from_secs(longest.max(10))),
                "round {round}"
            );
        }
    }

    #[test]
    fn the_fingerprint_follows_the_trip_rule_not_the_name() {
        let a = Breaker::builder().name("a").threshold(5).build().unwrap();
        let b = Breaker::builder().name("b").threshold(5).build().unwrap();
        let c = Breaker::builder().name("a").threshold(6).build().unwrap();
        let d = Breaker::builder()
            .name("a")
            .threshold(5)
            .recovery(Duration::from_secs(1))
            .build()
            .unwrap();
        let f = |x: &Breaker| fingerprint(x);
        assert_eq!(f(&a), f(&b));
        assert_ne!(f(&a), f(&c));
        assert_ne!(f(&a), f(&d));
    }

    /// Two breakers that differ only by their time limit, or by having
    /// one, are told apart; a change at run time leaves the fingerprint
    /// as declared.
    #[test]
    fn the_fingerprint_covers_the_time_limit() {
        let timed = |limit: Option<Duration>| {
            let b = Breaker::builder().name("t").threshold(5);
            match limit {
                Some(d) => b.timeout(d),
                None => b,
            }
            .build()
            .unwrap()
        };
        let none = timed(None);
        let one = timed(Some(Duration::from_secs(1)));
        let two = timed(Some(Duration::from_secs(2)));
        assert_ne!(fingerprint(&none), fingerprint(&one));
        assert_ne!(fingerprint(&one), fingerprint(&two));
        assert_eq!(
            fingerprint(&one),
            fingerprint(&timed(Some(Duration::from_secs(1))))
        );
        assert_eq!(fingerprint(&none), PINNED, "no time limit hashes as before");
        one.reconfigure(&Breaker::builder().timeout(Duration::from_secs(2)))
            .unwrap();
        assert_ne!(fingerprint(&one), fingerprint(&two), "as declared");
    }

    #[test]
    fn over_a_breaker_that_reopened_on_its_own_the_local_deadline_is_the_floor() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let first = b.open_remote(Duration::from_secs(5), None).unwrap();
        clock.advance(Duration::from_secs(5));
        b.acquire()
            .expect("the trial")
            .record(crate::Outcome::Failure); // open on its own until 15 s
        let again = b
            .open_remote(Duration::from_secs(20), Some(first))
            .expect("extended");
        // Released at once: the breaker's own open still runs to 15 s.
        assert!(b.release_remote(again, Duration::ZERO).is_some());
        assert_eq!(b.snapshot().retry_after, Some(Duration::from_secs(10)));
    }

    #[test]
    fn a_remote_open_of_a_closed_breaker_is_a_transition_now() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        clock.advance(Duration::from_secs(7));
        assert_eq!(b.snapshot().since_transition, Duration::from_secs(7));
        b.open_remote(Duration::from_secs(3), None).unwrap();
        assert_eq!(b.snapshot().since_transition, Duration::ZERO);
    }

    #[test]
    fn release_leaves_a_breaker_forced_open_alone() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let open = b.open_remote(Duration::from_secs(5), None).unwrap();
        b.set_mode(crate::Mode::ForcedOpen);
        assert_eq!(b.release_remote(open, Duration::ZERO), None);
        assert_eq!(b.mode(), crate::Mode::ForcedOpen);
        clock.advance(Duration::from_secs(60));
        assert!(b.acquire().is_err(), "still forced open");
    }

    /// Instances of different builds compare fingerprints, so the value of
    /// a given configuration must never change (FNV-1a over the settings).
    #[test]
    fn the_fingerprint_of_a_configuration_is_stable() {
        let b = Breaker::builder().name("any").threshold(5).build().unwrap();
        assert_eq!(fingerprint(&b), PINNED);
    }
}
