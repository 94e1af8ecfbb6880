//! Breakers as metrics, through the [`metrics`](https://docs.rs/metrics)
//! facade (feature `metrics`): any exporter installed as the recorder
//! (Prometheus, OpenTelemetry, StatsD, …) sees them.
//!
//! | metric | kind | labels | value |
//! |---|---|---|---|
//! | `failfast_calls_total` | counter | `breaker`, `outcome` = `success`, `failure`, `neutral`, `slow`, `rejected`, `timeout`, `would_reject` | calls by outcome, as in [`Snapshot`](crate::Snapshot) (`slow` calls are also counted as a success or failure, `timeout`s as failures; `would_reject` counts the calls an observe-only breaker let through that it would have refused) |
//! | `failfast_state` | gauge | `breaker` | 0 closed, 1 open, 2 half-open |
//! | `failfast_transitions_total` | counter | `breaker`, `from`, `to` (`closed`, `open`, `half_open`) | state transitions |
//! | `failfast_threshold` | gauge | `breaker` | consecutive failures that trip (consecutive rule) |
//! | `failfast_failure_rate_threshold` | gauge | `breaker` | failure rate that trips (rate rule) |
//! | `failfast_slow_rate_threshold` | gauge | `breaker` | slow-call rate that trips (slow-call rule) |
//! | `failfast_slow_call_duration_seconds` | gauge | `breaker` | above it a call is slow (slow-call rule) |
//! | `failfast_recovery_seconds` | gauge | `breaker` | open time before a trial |
//! | `failfast_trial_calls` | gauge | `breaker` | trial calls admitted at once |
//! | `failfast_success_threshold` | gauge | `breaker` | successful trials that close |
//!
//! Label values are bounded by the breakers a program declares: one series
//! per breaker name (and outcome or state pair).
//!
//! The members of a keyed family (`key = …`, `Family`) carry the key in
//! their name, `family[key]`: they are reported on their transitions (not
//! on registration or [`export`], where the family is one entry), so a
//! family adds at most `max_keys` values of `breaker` that are live at
//! once, its cardinality cap; an evicted key's series stay with the
//! recorder until it forgets them.
//!
//! # When values reach the recorder
//!
//! - On registration ([`registry::register`], and
//!   an attribute breaker's first call): every series of the breaker is set,
//!   the counters at their current totals (zero for a new breaker), so
//!   alerting rules see the series before anything happens.
//! - On every transition: the transition counter, the state gauge and the
//!   breaker's call totals.
//! - On [`export`]: the call totals and state of every registered breaker.
//!   Call it before each scrape (in the `/metrics` handler) for up-to-date
//!   call counts; and once after installing a recorder, if breakers were
//!   registered before it was.
//!
//! Calls are *not* reported to the recorder one by one: they are counted in
//! the breaker's per-thread totals (no shared write per call, see
//! [`Snapshot::calls`](crate::Snapshot::calls)) and reported as absolute
//! values at the moments above. With the feature on and a recorder installed,
//! a call costs exactly what it costs without.
//!
//! ```
//! # use failfast_runtime::{registry, Breaker};
//! # use std::sync::Arc;
//! // In the handler of GET /metrics, before rendering the exporter's text:
//! failfast_runtime::metrics::export();
//! ```

use ::metrics::{
    describe_counter, describe_gauge, gauge, with_recorder, Key, Label, Level, Metadata,
    SharedString, Unit,
};

use crate::breaker::Breaker;
use crate::error::State;
use crate::events::Transition;
use crate::name::Name;
use crate::registry;

const CALLS: &str = "failfast_calls_total";
const STATE: &str = "failfast_state";
const TRANSITIONS: &str = "failfast_transitions_total";

fn label(name: &Name) -> SharedString {
    match name.as_static() {
        Some(s) => SharedString::from(s),
        None => SharedString::from(name.to_string()),
    }
}

const fn state_label(state: State) -> &'static str {
    match state {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "half_open",
    }
}

const fn state_code(state: State) -> f64 {
    match state {
        State::Closed => 0.0,
        State::Open => 1.0,
        State::HalfOpen => 2.0,
    }
}

fn describe() {
    describe_counter!(
        CALLS,
        Unit::Count,
        "Calls through a circuit breaker, by outcome."
    );
    describe_gauge!(
        STATE,
        "Circuit breaker state: 0 closed, 1 open, 2 half-open."
    );
    describe_counter!(
        TRANSITIONS,
        Unit::Count,
        "Circuit breaker state transitions."
    );
    describe_gauge!(
        "failfast_threshold",
        Unit::Count,
        "Consecutive counted failures that open the breaker."
    );
    describe_gauge!(
        "failfast_failure_rate_threshold",
        "Share of failed calls in the window that opens the breaker."
    );
    describe_gauge!(
        "failfast_slow_rate_threshold",
        "Share of slow calls in the window that opens the breaker."
    );
    describe_gauge!(
        "failfast_slow_call_duration_seconds",
        Unit::Seconds,
        "Calls slower than this are slow calls."
    );
    describe_gauge!(
        "failfast_recovery_seconds",
        Unit::Seconds,
        "Time a breaker stays open before a trial call."
    );
    describe_gauge!(
        "failfast_trial_calls",
        Unit::Count,
        "Trial calls admitted at once while half-open."
    );
    describe_gauge!(
        "failfast_success_threshold",
        Unit::Count,
        "Successful trial calls that close the breaker."
    );
}

/// Where the series below are said to come from.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A breaker's series keys, built once (on its registration or first
/// transition) so that reporting allocates nothing.
#[derive(Debug)]
pub(crate) struct Keys {
    /// `failfast_calls_total` by outcome, in the order of `OUTCOMES`.
    calls: [Key; 7],
    state: Key,
    /// `failfast_transitions_total`, indexed by `pair(from, to)`.
    transitions: [Key; 9],
}

const OUTCOMES: [&str; 7] = [
    "success",
    "failure",
    "neutral",
    "slow",
    "rejected",
    "timeout",
    "would_reject",
];
const STATES: [State; 3] = [State::Closed, State::Open, State::HalfOpen];

const fn pair(from: State, to: State) -> usize {
    state_code(from) as usize * 3 + state_code(to) as usize
}

impl Keys {
    fn new(name: &Name) -> Self {
        let breaker = Label::new("breaker", label(name));
        let key = |metric: &'static str, more: &[(&'static str, &'static str)]| {
            let mut labels = vec![breaker.clone()];
            labels.extend(more.iter().map(|&(k, v)| Label::new(k, v)));
            Key::from_parts(metric, labels)
        };
        Keys {
            calls: OUTCOMES.map(|outcome| key(CALLS, &[("outcome", outcome)])),
            state: key(STATE, &[]),
            transitions: std::array::from_fn(|i| {
                let (from, to) = (STATES[i / 3], STATES[i % 3]);
                key(
                    TRANSITIONS,
                    &[("from", state_label(from)), ("to", state_label(to))],
                )
            }),
        }
    }
}

fn keys(b: &Breaker) -> &Keys {
    b.hook.metric_keys.get_or_init(|| Keys::new(&b.config.name))
}

/// Sets the call totals and the state of `b`.
fn export_breaker(b: &Breaker) {
    let s = b.snapshot();
    let keys = keys(b);
    with_recorder(|r| {
        for (key, value) in keys.calls.iter().zip([
            s.successes,
            s.failures,
            s.neutral,
            s.slow,
            s.rejected,
            s.timeouts,
            s.would_reject,
        ]) {
            r.register_counter(key, &METADATA).absolute(value);
        }
        r.register_gauge(&keys.state, &METADATA)
            .set(state_code(s.state));
    });
}

/// Reports the call totals and state of every registered breaker to the
/// installed recorder; see the [module docs](self) for when to call it.
pub fn export() {
    describe();
    for b in registry::all() {
        export_breaker(&b);
    }
}

/// A breaker was registered: every one of its series, at its current values.
pub(crate) fn registered(b: &Breaker) {
    describe();
    export_breaker(b);
    let keys = keys(b);
    with_recorder(|r| {
        for (from, to) in [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed),
            (State::HalfOpen, State::Open),
        ] {
            r.register_counter(&keys.transitions[pair(from, to)], &METADATA)
                .increment(0);
        }
    });
    let name = label(&b.shared_name());
    let c = b.settings();
    #[allow(clippy::cast_precision_loss)] // nanoseconds below 2^53 (104 days) are exact
    let seconds = |nanos: u64| nanos as f64 / 1e9;
    let set = |metric: &'static str, value: f64| {
        gauge!(metric, "breaker" => name.clone()).set(value);
    };
    if c.uses_consecutive() {
        set("failfast_threshold", f64::from(c.threshold));
    } else {
        set("failfast_failure_rate_threshold", c.failure_rate);
    }
    if c.slow != 0 {
        set("failfast_slow_rate_threshold", c.slow_rate);
        set("failfast_slow_call_duration_seconds", seconds(c.slow));
    }
    set("failfast_recovery_seconds", seconds(c.recovery));
    set("failfast_trial_calls", f64::from(c.trial_calls));
    set("failfast_success_threshold", f64::from(c.success_threshold));
}

/// A transition: its counter, the new state, and the breaker's call totals.
pub(crate) fn transition(b: &Breaker, t: &Transition) {
    let keys = keys(b);
    with_recorder(|r| {
        r.register_counter(&keys.transitions[pair(t.from, t.to)], &METADATA)
            .increment(1);
    });
    export_breaker(b);
    with_recorder(|r| {
        r.register_gauge(&keys.state, &METADATA)
            .set(state_code(t.to))
    });
}
