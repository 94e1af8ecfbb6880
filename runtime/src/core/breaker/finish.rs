//! Recording a call's outcome: counted, held against the rules, and
//! the state moved when it decides a trip or a close.

use super::*;

impl Breaker {
    /// Records a call's outcome. The common case, a success in Closed under the
    /// consecutive rule alone with no failure count to clear, is decided here,
    /// inlined into the caller: one read of the state word, no shared write
    /// (the call is counted on this thread's own line, see `totals`).
    #[inline]
    pub(super) fn finish(&self, admitted: Admitted, started: Started, outcome: Outcome) {
        // Closed, and holding no place of an adaptive limit (`PLACED`, also
        // set on a call timed for graded shedding).
        if outcome == Outcome::Success && !self.config.timed && admitted.closed_unplaced() {
            self.totals.add(crate::core::totals::SUCCESS);
            // No slow-call rule, and nothing in the word's payload: no
            // failure count to clear (consecutive rule), no window to
            // consult (failure-rate rule, see the `consult` module).
            let w = self.load();
            if w.payload() == 0 && w.same_period(admitted.word()) {
                return;
            }
            return self.closed_success(admitted, w, started);
        }
        self.finish_slow(admitted, started, outcome);
    }

    /// A success in Closed without the slow-call rule, which the word
    /// alone could not settle: a failure count to clear, a window to
    /// consult, or a permit of an earlier period.
    #[inline(never)]
    fn closed_success(&self, admitted: Admitted, w: Word, started: Started) {
        if self.config.failure_rate != 0.0 {
            return self.closed_success_rate(admitted, w, started);
        }
        // A permit of an earlier period is ignored; a window's call positions
        // leave it out (failures within a window).
        if w.same_period(admitted.word()) {
            self.finish_counted(admitted, started, Outcome::Success, true);
        } else {
            self.not_recorded();
        }
    }

    /// A success in Closed under the failure-rate rule alone, the word
    /// `w` asking it to consult the window (see `consult`): what
    /// `finish_closed` does for it.
    #[cold]
    #[inline(never)]
    fn closed_success_rate(&self, admitted: Admitted, w: Word, started: Started) {
        // Recording a success of a permit that is stale by 2^36 generations
        // only records a real outcome; the trip below checks in full.
        if !w.same_period(admitted.word()) {
            return self.not_recorded();
        }
        let window = self.window();
        if window.record(false, false, self.rule()) {
            return self.trip(admitted.with_epoch(started.value()).word(), Why::Rate);
        }
        self.consulted(w, &window);
    }

    /// Counts and records every outcome but the common success.
    pub(super) fn finish_slow(&self, admitted: Admitted, started: Started, outcome: Outcome) {
        self.finish_timed(admitted, started, outcome, outcome != Outcome::Neutral);
    }

    /// Records `outcome`; when `timed`, a call that took longer than `slow`
    /// is also a slow call (a neutral one only when it was abandoned: see
    /// `Permit::abandoned`).
    pub(super) fn finish_timed(
        &self,
        admitted: Admitted,
        started: Started,
        outcome: Outcome,
        timed: bool,
    ) {
        self.finish_ended(admitted, started, outcome, timed, outcome.into());
    }

    /// [`finish_timed`](Self::finish_timed), the call's duration labelled
    /// `ended` (a timeout is a failure labelled apart).
    pub(super) fn finish_ended(
        &self,
        admitted: Admitted,
        started: Started,
        outcome: Outcome,
        timed: bool,
        ended: durations::Ended,
    ) {
        if admitted.is_passive() {
            return;
        }
        self.took(admitted, started, ended);
        self.give_timed_place(admitted, started.value(), outcome);
        self.totals.outcome(outcome);
        self.finish_counted(admitted, started, outcome, timed);
    }

    pub(super) fn finish_counted(
        &self,
        admitted: Admitted,
        started: Started,
        outcome: Outcome,
        timed: bool,
    ) {
        if admitted.is_observed() {
            // Counted by its outcome (above) and as `would_reject` (at
            // admission); the state machine did not admit it, and the
            // window's call positions leave it out.
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            return;
        }
        let slow = self.config.slow != 0
            && timed
            && self.clock.now().saturating_sub(started.value()) > self.config.slow;
        if slow {
            self.totals.add(crate::core::totals::SLOW);
        }
        // Without the slow-call rule or an adaptive limit, and not timed
        // for graded shedding or the duration histogram, `started` is the
        // generation counter at admission, and the epoch is stamped now.
        let admitted = if !self.config.timed && !started.timed() && !started.clocked() {
            admitted.with_epoch(started.value()).word()
        } else {
            admitted.word()
        };
        if admitted.tag() == Tag::Closed {
            if started.timed() && outcome == Outcome::Success {
                self.timed_for_shedding(started);
            }
            self.finish_closed(admitted, outcome, slow);
        } else {
            // Trials are not the window's: a closing one's count is in the
            // base the fresh window starts from.
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            // A slow trial is a failed trial when the slow-call rule is on.
            let outcome = if slow { Outcome::Failure } else { outcome };
            self.finish_trial(admitted, outcome);
        }
    }

    fn finish_closed(&self, admitted: Word, outcome: Outcome, slow: bool) {
        let mut w = self.load();
        if !self.still_current(admitted, w) {
            if outcome != Outcome::Neutral {
                self.not_recorded();
            }
            return;
        }
        if outcome == Outcome::Failure && self.config.sheds() {
            self.shed_failure();
        }
        if self.config.uses_window() && (outcome != Outcome::Neutral || slow) {
            let window = self.window();
            if outcome == Outcome::Neutral {
                window.extra();
            }
            let failed = outcome == Outcome::Failure;
            if window.record(failed, slow, self.rule()) {
                self.trip(admitted, Why::Rate);
                return;
            }
            if (failed || slow) && self.config.uses_failure_rate() {
                self.consult_window(admitted, &window);
            }
        }
        if !self.config.uses_consecutive() {
            return;
        }
        loop {
            let failures = match outcome {
                Outcome::Neutral => return,
                Outcome::Success if w.payload() == 0 => return,
                Outcome::Success => 0,
                // The settings are read only where they can decide a trip.
                Outcome::Failure if w.payload() + 1 >= self.settings().threshold => {
                    self.trip(admitted, Why::Threshold);
                    return;
                }
                Outcome::Failure => w.payload() + 1,
            };
            match self.cas(w, w.with_payload(failures)) {
                Ok(()) => return,
                Err(actual) => w = actual,
            }
            if !self.still_current(admitted, w) {
                return;
            }
        }
    }

    fn finish_trial(&self, admitted: Word, outcome: Outcome) {
        let mut w = self.load();
        // A close is made holding the family's ejection budget, if any.
        let mut held = None;
        loop {
            if !self.still_current(admitted, w) {
                return;
            }
            if outcome == Outcome::Failure {
                // Whatever the round: a trial that failed is evidence.
                self.trip(admitted, Why::Trial);
                return;
            }
            if w.round() != admitted.round() {
                // Presumed lost; its slot was given to a new round.
                return;
            }
            let in_flight = w.in_flight().saturating_sub(1);
            let next = if outcome == Outcome::Neutral {
                w.with_trials(w.round(), in_flight, w.successes())
            } else if w.successes() + 1 >= self.settings().success_threshold {
                Word::closed(w.mode(), self.next_generation(), 0)
            } else {
                w.with_trials(w.round(), in_flight, w.successes() + 1)
            };
            match self.cas_counted(w, next, &mut held) {
                Ok(()) if next.tag() == Tag::Closed => {
                    drop(held);
                    self.clear_window();
                    self.consult_time_window();
                    self.last_transition
                        .store(self.clock.now(), Ordering::Relaxed);
                    self.transitioned(w, next, Why::Closed, 0);
                    return;
                }
                Ok(()) => return,
                Err(actual) => w = actual,
            }
        }
    }
}
