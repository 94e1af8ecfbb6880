//! Manual control: back to normal, forced states, observe only.

use super::*;

impl Breaker {
    fn control(&self, tag: u64, mode: u64) {
        let mut w = self.load();
        let new = loop {
            let new = if tag == TAG_OPEN {
                Word::open(mode, 0)
            } else {
                Word::closed(mode, self.next_generation(), 0)
            };
            match self.cas(w, new) {
                Ok(()) => break new,
                Err(actual) => w = actual,
            }
        };
        self.clear_window();
        if new.tag() == TAG_CLOSED {
            self.consult_time_window();
        }
        self.last_transition
            .store(self.clock.now(), Ordering::Relaxed);
        self.transitioned(w, new, Why::Manual, 0);
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
    /// when the state changes); calls in flight are not counted.
    pub fn set_mode(&self, mode: Mode) {
        match mode {
            Mode::Normal => {
                self.control(TAG_CLOSED, MODE_NORMAL);
                self.level.store(0, Ordering::Relaxed);
                self.restore_limit();
            }
            Mode::ObserveOnly => self.control(TAG_CLOSED, MODE_DISABLED),
            Mode::ForcedOpen => self.control(TAG_OPEN, MODE_FORCED_OPEN),
            Mode::ForcedClosed => self.control(TAG_CLOSED, MODE_FORCED_CLOSED),
        }
    }
}
