//! Manual control: reset, forced states, observe only.

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

    /// Back to normal operation: closed, counters cleared, growing open time back
    /// at its start. Calls in flight are not counted.
    pub fn reset(&self) {
        self.control(TAG_CLOSED, MODE_NORMAL);
        self.level.store(0, Ordering::Relaxed);
    }

    /// Rejects every call until [`reset`](Self::reset) (or another manual mode).
    pub fn force_open(&self) {
        self.control(TAG_OPEN, MODE_FORCED_OPEN);
    }

    /// Lets every call through, recording nothing, until [`reset`](Self::reset).
    pub fn force_closed(&self) {
        self.control(TAG_CLOSED, MODE_FORCED_CLOSED);
    }

    /// Lets every call through until [`reset`](Self::reset), while still recording
    /// outcomes from a fresh closed state: the trip rules keep running, so
    /// [`snapshot`](Self::snapshot) and [`state`](Self::state) show what the breaker
    /// would have done ("observe only").
    pub fn observe_only(&self) {
        self.control(TAG_CLOSED, MODE_DISABLED);
    }

    /// Puts the breaker in `mode`, as the method of that mode does.
    pub(crate) fn set_mode(&self, mode: Mode) {
        match mode {
            Mode::Normal => self.reset(),
            Mode::ObserveOnly => self.observe_only(),
            Mode::ForcedOpen => self.force_open(),
            Mode::ForcedClosed => self.force_closed(),
        }
    }
}
