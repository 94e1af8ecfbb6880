//! The permit: proof that a breaker admitted a call, and how its outcome is recorded.

use super::*;

/// Proof that the breaker admitted a call. Resolve it with the call's
/// [`Outcome`]; if it is dropped unresolved, it resolves itself as
/// [`Outcome::Neutral`] (a cancelled call), or as [`Outcome::Failure`] when
/// dropped by a panic unwinding through the protected code.
///
/// In async code, a permit held by a future that is dropped while some *other*
/// code panics (a sibling in `join!`, the task being torn down) cannot tell
/// that panic from its own: [`Breaker::call_async`] and `#[circuit_breaker]`
/// watch the protected future's own polls instead, and count only a panic
/// raised inside them.
///
/// ```
/// use failfast_runtime::{Breaker, Outcome};
///
/// let breaker = Breaker::builder().build()?;
/// match breaker.acquire() {
///     Ok(permit) => {
///         let answer = 6 * 7; // call the dependency here
///         permit.record(if answer == 42 { Outcome::Success } else { Outcome::Failure });
///     }
///     Err(rejected) => eprintln!("{rejected}"),
/// }
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Debug)]
#[must_use = "a permit records its call's outcome; dropping it at once records a neutral call"]
pub struct Permit<'a> {
    pub(super) breaker: &'a Breaker,
    /// The state word the call was admitted under, with the permit's flags
    /// and epoch, or a sentinel (`core::word` has the layout). See
    /// `Breaker::permit`.
    pub(super) admitted: Admitted,
    /// When the call started, with the slow-call rule or an adaptive limit;
    /// the generation counter at admission without either.
    pub(super) started: Started,
}

impl<'a> Permit<'a> {
    /// Records how the call ended.
    #[inline]
    pub fn record(self, outcome: Outcome) {
        let this = ManuallyDrop::new(self);
        this.breaker.finish(this.admitted, this.started, outcome);
    }

    /// Records `Ok` as a success and `Err(e)` as a failure if `counts(e)`, neutral
    /// otherwise.
    ///
    /// A rule on the `Ok` values as well (the attribute's `counts_ok`: an
    /// HTTP client whose 503 is an `Ok(response)`) is an outcome to
    /// [`record`](Self::record):
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Outcome, State};
    ///
    /// struct Response { status: u16 }
    ///
    /// let breaker = Breaker::builder().threshold(2).build()?;
    /// let call = |status| {
    ///     let result: Result<Response, std::io::Error> = Ok(Response { status });
    ///     let permit = breaker.acquire().unwrap();
    ///     permit.record(match &result {
    ///         Ok(response) if response.status >= 500 => Outcome::Failure,
    ///         Ok(_) => Outcome::Success,
    ///         Err(_) => Outcome::Failure,
    ///     });
    /// };
    /// call(200);
    /// call(503);
    /// assert_eq!(breaker.state(), State::Closed, "one failure");
    /// call(503);
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    ///
    /// To judge a whole result as a tower layer does (a neutral outcome
    /// included), record what a classifier says:
    /// `permit.record(HttpClassifier.classify(&result))` (feature `http`).
    #[inline]
    pub fn resolve<T, E>(self, result: &Result<T, E>, counts: impl FnOnce(&E) -> bool) {
        let outcome = match result {
            Ok(_) => Outcome::Success,
            Err(e) if counts(e) => Outcome::Failure,
            Err(_) => Outcome::Neutral,
        };
        self.record(outcome);
    }

    /// Whether this call is a half-open trial: admitted after the open period,
    /// to probe whether the dependency has recovered.
    #[must_use]
    pub fn is_trial(&self) -> bool {
        self.admitted.trial()
    }

    /// From now on the protected body's polls are watched: a panic while this
    /// permit is dropped is not the body's, and a drop without an outcome is
    /// an abandoned call. (The sentinels are tracked already.)
    #[inline]
    pub(crate) fn track_body(&mut self) {
        self.admitted = self.admitted.tracking();
    }

    /// The protected body panicked or ran out of time: a failure, recorded now.
    /// Cut off at its time limit: a failure, also counted as a timeout.
    pub(crate) fn timed_out(&mut self) {
        if !self.admitted.is_passive() {
            self.breaker.totals.add(crate::core::totals::TIMEOUT);
        }
        let admitted = std::mem::replace(&mut self.admitted, Admitted::PASSIVE);
        self.breaker.finish_ended(
            admitted,
            self.started,
            Outcome::Failure,
            true,
            super::durations::Ended::Timeout,
        );
    }

    pub(crate) fn failed_now(&mut self) {
        let admitted = std::mem::replace(&mut self.admitted, Admitted::PASSIVE);
        self.breaker
            .finish_slow(admitted, self.started, Outcome::Failure);
    }

    /// Refused after the breaker admitted it (a full bulkhead): the
    /// admission is given back as a neutral outcome would give it back (a
    /// half-open trial returns its slot), and the call is counted as
    /// rejected, not as neutral.
    pub(crate) fn refused(&mut self) {
        let admitted = std::mem::replace(&mut self.admitted, Admitted::PASSIVE);
        if admitted.is_passive() {
            return;
        }
        self.breaker.totals.add(crate::core::totals::REJECTED);
        self.breaker.withdraw(admitted);
        self.breaker.give_place(admitted, Outcome::Neutral);
        self.breaker
            .finish_counted(admitted, self.started, Outcome::Neutral, false);
    }

    /// The call waits in a bulkhead's line for a place (`max_wait`): its
    /// time starts again when the returned guard is dropped, once the wait
    /// is over, so that the time spent in line is not counted as the
    /// dependency's (`slow`, graded shedding's patience); until then graded
    /// shedding does not count it as started.
    pub(crate) fn wait_for_place<'p>(&'p mut self) -> Waiting<'p, 'a> {
        if !self.admitted.is_passive() {
            self.breaker.withdraw(self.admitted);
        }
        Waiting(self)
    }

    /// The protected body was dropped before it finished: neutral, but a
    /// slow call when it ran longer than `slow` (a slow trial fails).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn abandoned(&mut self) {
        let admitted = std::mem::replace(&mut self.admitted, Admitted::PASSIVE);
        self.breaker
            .finish_timed(admitted, self.started, Outcome::Neutral, true);
    }
}

/// A call waiting in a bulkhead's line (`Permit::wait_for_place`): the
/// wait is over when this is dropped.
pub(crate) struct Waiting<'p, 'a>(&'p mut Permit<'a>);

impl Drop for Waiting<'_, '_> {
    fn drop(&mut self) {
        let permit = &mut *self.0;
        if permit.admitted.is_passive() {
            return;
        }
        let breaker = permit.breaker;
        breaker.readmit(permit.admitted);
        // `started` holds the time with the slow-call rule or an adaptive
        // limit, for a call timed for graded shedding (see
        // `Breaker::permit`, `TIMED`) and for the duration histogram
        // (`CLOCKED`); else the generation counter.
        let timed = permit.started.timed();
        if breaker.config.timed || permit.started.clocked() {
            let now = breaker.clock.now();
            let now = if breaker.config.timed {
                Started::new(now)
            } else {
                Started::clocked_from(now)
            };
            permit.started = if timed { now.timing() } else { now };
        } else if timed {
            permit.started = Started::timed_from(breaker.clock.coarse_now());
        }
    }
}

/// A permit's record without the borrow of its breaker, for a permit held by
/// a type that owns its breaker handle (tower's `OwnedPermit`, the reqwest
/// middleware's `Verdict`). Moving the two words out and back costs nothing
/// on the call path.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[derive(Debug)]
pub(crate) struct Detached {
    admitted: Admitted,
    started: Started,
}

impl<'b> Permit<'b> {
    /// The breaker that admitted the call.
    pub(crate) fn breaker(&self) -> &'b Breaker {
        self.breaker
    }
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
impl Permit<'_> {
    /// The permit's record, leaving the breaker to be named again by
    /// [`Detached::attach`]; nothing is recorded now.
    pub(crate) fn detach(self) -> Detached {
        let this = ManuallyDrop::new(self);
        Detached {
            admitted: this.admitted,
            started: this.started,
        }
    }
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
impl Detached {
    /// The permit again. `breaker` must be the one that admitted it.
    pub(crate) fn attach(self, breaker: &Breaker) -> Permit<'_> {
        Permit {
            breaker,
            admitted: self.admitted,
            started: self.started,
        }
    }
}

impl Drop for Permit<'_> {
    /// Dropped without an outcome. A permit whose body is watched
    /// (`track_body`) was abandoned: neutral, or slow past `slow`, whatever
    /// else is panicking (its body's own panic was recorded when it was
    /// raised). Any other permit is a failure while the thread panics
    /// (the protected code unwound through it), neutral otherwise.
    fn drop(&mut self) {
        let tracked = self.admitted.tracked();
        let outcome = if !tracked && std::thread::panicking() {
            Outcome::Failure
        } else {
            Outcome::Neutral
        };
        self.breaker.finish_timed(
            self.admitted,
            self.started,
            outcome,
            tracked || outcome == Outcome::Failure,
        );
    }
}
