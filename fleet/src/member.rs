//! The local breaker as the fleet sees it.
//!
//! The fleet never reaches into a breaker's internals: a breaker takes part through
//! [`FleetMember`], and tells the fleet of its own transitions through the
//! [`Notifier`](crate::Notifier) it is handed when it joins.

use crate::Notifier;
use failfast_runtime::State;
use failfast_runtime::integration::Cause;
use std::time::Instant;

/// One local transition, as the breaker reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalTransition {
    /// State before.
    pub from: State,
    /// State after.
    pub to: State,
    /// What caused it: the breaker's own calls ([`Cause::Calls`]: failures
    /// tripped it, trials closed or reopened it; only these opens are
    /// voted, so the fleet never echoes what it applied), the fleet
    /// ([`Cause::Remote`]: it applied or released a remote open), or an
    /// operator ([`Cause::Manual`]).
    pub cause: Cause,
}

/// Outcomes of the local breaker's calls over roughly the last second, for the veto.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecentOutcomes {
    /// Successful calls.
    pub successes: u32,
    /// Counted failures.
    pub failures: u32,
}

/// A local breaker that shares its opens and recovery with the fleet.
///
/// Implementations must be wait-free or at least never block: the fleet's
/// background task calls them, and the breaker's callers must never wait for it.
pub trait FleetMember: Send + Sync + 'static {
    /// Stable name, the same on every instance (the store keys are derived from it).
    fn name(&self) -> &str;

    /// Fingerprint of the settings that make two breakers "the same" (trip rule,
    /// recovery, ...). Only votes with the same fingerprint count towards a quorum.
    fn fingerprint(&self) -> u64;

    /// Current local state.
    fn state(&self) -> State;

    /// Refuse calls until `until` (a local monotonic instant): open the breaker if it
    /// is closed, extend its open if it ends sooner. Never shortens an open, never
    /// interrupts a half-open trial already admitted.
    fn apply_remote_open(&self, until: Instant);

    /// An open imposed by [`apply_remote_open`](Self::apply_remote_open) ends no
    /// later than `at`: the fleet closed, or this instance won the probe lease after
    /// extending its open past the fleet deadline. An open caused by local evidence
    /// is left alone.
    fn release_remote_open(&self, at: Instant);

    /// Recent local outcomes. When at least
    /// [`veto_successes`](crate::FleetConfig::veto_successes) succeeded and none failed,
    /// a remote open is not applied: the dependency works from here. Defaults to none.
    fn recent_outcomes(&self) -> RecentOutcomes {
        RecentOutcomes::default()
    }

    /// Calls through the breaker that started at least `older_than` before
    /// `now` and are still running: a lower bound, 0 when the member cannot
    /// tell. Called by the fleet's task on every tick (every 25 ms) while
    /// [`hung_after`](crate::FleetConfig::hung_after) is set, with it as
    /// `older_than`; enough of them make a vote. Must not block. Defaults
    /// to 0.
    fn calls_hung(&self, now: Instant, older_than: std::time::Duration) -> u32 {
        let _ = (now, older_than);
        0
    }

    /// Called by the fleet's task about every 250 ms, e.g. to sample the outcomes
    /// [`recent_outcomes`](Self::recent_outcomes) reports. Must not block.
    /// Defaults to doing nothing.
    fn tick(&self, now: Instant) {
        let _ = now;
    }

    /// Called once when the breaker joins, with the notifier its transition hook
    /// must call. Defaults to doing nothing (the caller keeps the notifier).
    fn attached(&self, notifier: Notifier) {
        let _ = notifier;
    }
}
