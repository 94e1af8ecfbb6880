//! Manual control: back to normal, forced states, observe only.

use super::transition::Counts as TransitionCounts;
use super::*;

impl Breaker {
    /// Puts the word in `mode`, Open when forced open and Closed otherwise,
    /// a transition; or nothing at all when the breaker already is in
    /// `mode` (a forced mode, observe only, or normal and closed, where
    /// only the counters start again).
    fn control(&self, mode: Mode) {
        let mut w = self.load();
        let mut held = None;
        let new = loop {
            if w.mode() == mode {
                if mode != Mode::Normal {
                    return;
                }
                if w.tag() == Tag::Closed {
                    return self.restart_counts(w);
                }
            }
            let new = if mode == Mode::ForcedOpen {
                Word::open(mode, 0)
            } else {
                Word::closed(mode, self.next_generation(), 0)
            };
            match self.cas_counted(w, new, &mut held) {
                Ok(()) => break new,
                Err(actual) => w = actual,
            }
        };
        drop(held);
        self.clear_window();
        if new.tag() == Tag::Closed {
            self.consult_time_window();
        }
        self.last_transition
            .store(self.clock.now(), Ordering::Relaxed);
        self.transitioned(w, new, Why::Manual, 0);
    }

    /// A closed, normal breaker's counters start again, in the same state
    /// period: no transition (calls in flight still count).
    fn restart_counts(&self, mut w: Word) {
        while let Err(actual) = self.cas(w, w.with_payload(0)) {
            if actual.tag() != Tag::Closed || actual.mode() != Mode::Normal {
                // Moved meanwhile (tripped, or another mode): a reset after all.
                return self.control(Mode::Normal);
            }
            w = actual;
        }
        self.clear_window();
        self.consult_time_window();
        if self.clear_shedding() {
            self.shedding_changed(0, TransitionCounts::default());
        }
    }

    /// Puts the breaker in `mode`, whatever its state:
    ///
    /// - [`Mode::Normal`]: back to normal operation (a reset): closed,
    ///   counters cleared, growing open time back at its start, an adaptive
    ///   concurrency limit back at its most places.
    /// - [`Mode::ForcedOpen`]: rejects every call, until another mode.
    /// - [`Mode::ForcedClosed`]: lets every call through and records nothing.
    /// - [`Mode::ObserveOnly`]: lets every call through while still recording
    ///   outcomes from a fresh closed state: the trip rules keep running, so
    ///   [`snapshot`](Self::snapshot) and [`state`](Self::state) show what the
    ///   breaker would have done.
    ///
    /// A change of mode is a transition ([`TransitionReason::Manual`](crate::events::TransitionReason::Manual)
    /// when the state changes); calls in flight are not counted. Setting
    /// the mode a breaker already has changes nothing and reports nothing:
    /// no event, no transition counted. [`Mode::Normal`] on a breaker that
    /// is normal and closed is not a transition either: its counters start
    /// again (consecutive failures, the window, shedding), its growing open
    /// time and adaptive limit go back to their start, and calls in flight
    /// still count.
    pub fn set_mode(&self, mode: Mode) {
        match mode {
            Mode::Normal => {
                self.control(Mode::Normal);
                self.level.store(0, Ordering::Relaxed);
                self.restore_limit();
            }
            Mode::ObserveOnly | Mode::ForcedOpen | Mode::ForcedClosed => self.control(mode),
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    use super::*;
    use crate::{ManualClock, Outcome};

    /// A reset of a closed breaker racing the failure that trips it, on
    /// two threads started together, round after round: the breaker ends
    /// closed, or open until its own deadline, never open with a deadline
    /// the reset's clearing of the counts wrote over. (The loom model
    /// `a_reset_racing_a_trip_leaves_it_closed_or_open_until_its_deadline`
    /// explores every interleaving of one round.)
    #[test]
    fn a_reset_racing_a_trip_leaves_the_deadline_alone() {
        const ROUNDS: u32 = 20_000;
        let recovery = Duration::from_secs(1);
        let b = Breaker::builder()
            .threshold(1)
            .recovery(recovery)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let (go, done) = (AtomicU32::new(0), AtomicU32::new(0));
        let mut overwritten = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 1..=ROUNDS {
                    while go.load(Ordering::Acquire) != round {
                        std::hint::spin_loop();
                    }
                    b.set_mode(Mode::Normal);
                    done.store(round, Ordering::Release);
                }
            });
            for round in 1..=ROUNDS {
                let permit = b.acquire().expect("closed at the start of a round");
                go.store(round, Ordering::Release);
                permit.record(Outcome::Failure);
                while done.load(Ordering::Acquire) != round {
                    std::hint::spin_loop();
                }
                let s = b.snapshot();
                if s.state == State::Open && s.retry_after != Some(recovery) {
                    overwritten.push((round, s.retry_after));
                }
                b.set_mode(Mode::Normal);
            }
        });
        assert!(
            overwritten.is_empty(),
            "{} rounds: {overwritten:?}",
            overwritten.len()
        );
    }
}
