//! Whether a successful call must consult the rate window.
//!
//! Under the consecutive rule the Closed word's payload counts consecutive
//! failures, and a success whose word shows none has nothing to do. The
//! failure-rate rule keeps no count in the word, so it uses the payload to
//! say the same thing: 0 while no success can bring a verdict on the
//! window, 1 while one can. A success then reads the word and nothing else
//! in the common case, whichever rule is in force (`Breaker::finish`).
//!
//! - A **count window** is consulted from an event (a failed or slow call)
//!   that finds it unsettled, that is, holding fewer than `min_calls` calls
//!   since it was cleared: the success that brings it to `min_calls` may
//!   find the failures above the rate. The success that finds it settled
//!   sets the payload back to 0. Settling only ends with a clear, which
//!   comes with a new Closed word (payload 0) or a new window.
//! - A **time window** is always consulted: a success may be the first call
//!   of its bucket's period, which notes where the bucket starts, and calls
//!   leave the window as time passes. A new breaker's first word has
//!   payload 1; a transition to Closed writes a word with payload 0 and
//!   sets it to 1 once the window is cleared, and so does a reshape to a
//!   time window once it is published. Each writes its side, then reads
//!   the other's after a fence, so a close racing a reshape cannot leave a
//!   time window unconsulted (a loom model races the two). A success in
//!   the instant between is not counted in the window, as calls recorded
//!   while a window is cleared may be lost.
//!
//! The races this leaves are those the window already documents: a success
//! that did not yet see an event's payload skips a verdict the event's own
//! verdict stands in for, and a success that read an old settled window
//! while a reshape published a fresh count window may clear the payload
//! that the fresh window's first event set; successes then bring no verdict
//! until the next event sets it again.

use crate::core::breaker::Breaker;
use crate::core::config::Config;
use crate::core::window::Window;
use crate::core::word::{Tag, Word};
use crate::sync::Ordering;

impl Breaker {
    /// Makes the Closed word in force ask successes to consult a time
    /// window, under the failure-rate rule: after a transition to Closed
    /// and after a time window is published (`configure::reshape`). Each
    /// side writes first and reads the other after a fence, so when a new
    /// window races a close that read the old one, one of them sees both.
    pub(crate) fn consult_time_window(&self) {
        if !self.config.uses_failure_rate() {
            return;
        }
        crate::sync::fence(Ordering::SeqCst);
        if self.made_window().is_some_and(|window| window.is_time()) {
            self.consult(true);
        }
    }

    /// Sets whether the Closed word in force (of any period) asks successes
    /// to consult the window, under the failure-rate rule.
    pub(crate) fn consult(&self, on: bool) {
        if !self.config.uses_failure_rate() {
            return;
        }
        let mut w = self.load();
        while w.tag() == Tag::Closed && (w.payload() != 0) != on {
            match self.cas(w, w.with_payload(u32::from(on))) {
                Ok(()) => return,
                Err(actual) => w = actual,
            }
        }
    }

    /// After a success consulted `window` on the word `w`: a count window
    /// that has settled needs no success until it is cleared, and the word
    /// says so again.
    pub(crate) fn consulted(&self, w: Word, window: &Window) {
        if window.settled() {
            let _ = self.cas(w, w.with_payload(0));
        }
    }

    /// After an event recorded in `window` under the failure-rate rule: a
    /// count window that has not settled can still be brought to a verdict
    /// by a success (the one that reaches `min_calls`), so the word tells
    /// successes to consult it.
    pub(crate) fn consult_window(&self, admitted: Word, window: &Window) {
        if window.settled() {
            return;
        }
        let mut w = self.load();
        while w.payload() == 0 && self.still_current(admitted, w) {
            match self.cas(w, w.with_payload(1)) {
                Ok(()) => return,
                Err(actual) => w = actual,
            }
        }
    }
}

/// The payload of a new breaker's first word, for settings `config`: 1 for
/// a time window under the failure-rate rule. (A later Closed word starts
/// at 0, and `consult_time_window` sets it right after.)
pub(crate) const fn fresh_payload(config: &Config) -> u32 {
    (config.uses_failure_rate() && matches!(config.window, crate::core::config::Window::Time(_)))
        as u32
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether the word asks successes to consult the window.
    fn consults(b: &Breaker) -> bool {
        b.load().payload() != 0
    }

    /// Under the failure-rate rule a count window is consulted by successes
    /// only from an event that finds it unsettled until it settles; a time
    /// window always; the consecutive rule's count is not touched.
    #[test]
    fn successes_consult_a_count_window_only_until_it_settles() {
        let b = Breaker::builder()
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(4)
            .build()
            .unwrap();
        b.acquire().unwrap().record(crate::Outcome::Success);
        assert!(!consults(&b), "no event");
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert!(consults(&b), "an event, 2 calls of 4");
        assert_eq!(b.snapshot().consecutive_failures, 0, "not a failure count");
        b.acquire().unwrap().record(crate::Outcome::Success);
        assert!(consults(&b), "3 calls of 4");
        b.acquire().unwrap().record(crate::Outcome::Success);
        assert!(!consults(&b), "settled at 4 calls");
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert!(!consults(&b), "an event in a settled window");
        b.set_mode(crate::Mode::Normal);
        b.acquire().unwrap().record(crate::Outcome::Failure);
        assert!(consults(&b), "a clear unsettles the window");
    }

    #[test]
    fn successes_always_consult_a_time_window() {
        let b = Breaker::builder()
            .failure_rate(0.5)
            .window_time(Duration::from_secs(10))
            .build()
            .unwrap();
        assert!(consults(&b), "from the start");
        b.acquire().unwrap().record(crate::Outcome::Success);
        b.set_mode(crate::Mode::Normal);
        assert!(consults(&b), "after a manual close");
        for mode in [crate::Mode::ObserveOnly, crate::Mode::ForcedOpen] {
            b.set_mode(mode);
            b.set_mode(crate::Mode::Normal);
            assert!(consults(&b), "back to normal from {mode:?}");
        }
        b.reconfigure(&crate::Breaker::builder().window_calls(10))
            .unwrap();
        assert!(!consults(&b), "a fresh count window, empty");
        b.reconfigure(&crate::Breaker::builder().window_time(Duration::from_secs(5)))
            .unwrap();
        assert!(consults(&b), "a fresh time window");
    }

    /// Back to normal from a forced open, a failure rate over a time window
    /// counts the successes again: 5 failures in 15 calls stay under a
    /// rate of one half.
    #[test]
    fn a_time_window_counts_successes_after_a_forced_open() {
        let b = Breaker::builder()
            .failure_rate(0.5)
            .min_calls(4)
            .window_time(Duration::from_secs(10))
            .build()
            .unwrap();
        b.set_mode(crate::Mode::ForcedOpen);
        b.set_mode(crate::Mode::Normal);
        for outcome in [crate::Outcome::Success; 10]
            .into_iter()
            .chain([crate::Outcome::Failure; 5])
        {
            b.acquire().unwrap().record(outcome);
        }
        assert_eq!(b.state(), crate::State::Closed, "{:?}", b.snapshot());
    }

    /// Only a Closed word says whether to consult: a reshape while the
    /// breaker is open or half-open leaves its deadline and trials as they
    /// were.
    #[test]
    fn a_reshape_leaves_open_and_half_open_words_alone() {
        let clock = crate::ManualClock::new();
        let b = Breaker::builder()
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(1)
            .recovery(Duration::from_secs(30))
            .clock(clock.clone())
            .build()
            .unwrap();
        b.acquire().unwrap().record(crate::Outcome::Failure);
        let open = b.load();
        assert_eq!(open.tag(), crate::core::word::Tag::Open);
        b.reconfigure(&crate::Breaker::builder().window_time(Duration::from_secs(5)))
            .unwrap();
        b.reconfigure(&crate::Breaker::builder().window_calls(20))
            .unwrap();
        assert_eq!(b.load(), open, "the deadline is the word's low bits");
        clock.advance(Duration::from_secs(30));
        let trial = b.acquire().unwrap();
        let half_open = b.load();
        assert_eq!(half_open.in_flight(), 1);
        b.reconfigure(&crate::Breaker::builder().window_time(Duration::from_secs(5)))
            .unwrap();
        b.reconfigure(&crate::Breaker::builder().window_calls(10))
            .unwrap();
        assert_eq!(b.load(), half_open, "the trials are the word's low bits");
        trial.record(crate::Outcome::Success);
        assert!(!consults(&b), "closed over a count window");
    }

    /// An event whose breaker moved on before it asked successes to
    /// consult the window writes nothing: not into an Open word whose
    /// deadline has zero low bits (where a payload would be), not into a
    /// newer Closed one.
    #[test]
    fn an_event_of_an_earlier_period_leaves_the_word_alone() {
        let clock = crate::ManualClock::new();
        let b = Breaker::builder()
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(4)
            .recovery(Duration::from_nanos(1 << 24))
            .clock(clock.clone())
            .build()
            .unwrap();
        b.acquire().unwrap().record(crate::Outcome::Success);
        let admitted = b.load();
        let window = b.window();
        b.set_mode(crate::Mode::ForcedOpen);
        b.set_mode(crate::Mode::Normal);
        for _ in 0..4 {
            b.acquire().unwrap().record(crate::Outcome::Failure);
        }
        let open = b.load();
        assert_eq!(
            (open.tag(), open.payload()),
            (crate::core::word::Tag::Open, 0)
        );
        b.consult_window(admitted, &window);
        assert_eq!(b.load(), open);
        b.set_mode(crate::Mode::Normal);
        let closed = b.load();
        b.consult_window(admitted, &window);
        assert_eq!(b.load(), closed);
    }
}
