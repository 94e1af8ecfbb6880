//! Breakers as metrics, through the [`metrics`](https://docs.rs/metrics)
//! facade (feature `metrics`): any exporter installed as the recorder
//! (Prometheus, OpenTelemetry, StatsD, …) sees them.
//!
//! | metric | kind | labels | value |
//! |---|---|---|---|
//! | `failfast_calls_total` | counter | `breaker`, `outcome` = `success`, `failure`, `neutral`, `slow`, `rejected`, `timeout`, `would_reject`, `shed` | calls by outcome, as in [`Snapshot`](crate::Snapshot) (`slow` calls are also counted as a success or failure, `timeout`s as failures, `shed` calls as rejected; `would_reject` counts the calls an observe-only breaker let through that it would have refused) |
//! | `failfast_call_duration_seconds` | histogram | `breaker`, `outcome` = `success`, `failure`, `neutral`, `timeout` | each call's duration on the breaker's clock, from admission (or the end of a bulkhead's wait) to its outcome, once a recorder is found (see [Call durations](#call-durations)); a `timeout` is not also a `failure` here |
//! | `failfast_state` | gauge | `breaker` | 0 closed, 1 open, 2 half-open |
//! | `failfast_shedding` | gauge | `breaker` | graded shedding's chance of refusing a call now, 0 to 0.9 (`shed` only) |
//! | `failfast_concurrency_limit` | gauge | `breaker` | the adaptive concurrency limit in force (`max_concurrent = MIN..=MAX` only) |
//! | `failfast_transitions_total` | counter | `breaker`, `from`, `to` (`closed`, `open`, `half_open`) | state transitions |
//! | `failfast_threshold` | gauge | `breaker` | consecutive failures that trip (consecutive rule) |
//! | `failfast_failure_rate_threshold` | gauge | `breaker` | failure rate that trips (rate rule) |
//! | `failfast_slow_rate_threshold` | gauge | `breaker` | slow-call rate that trips (slow-call rule) |
//! | `failfast_shed` | gauge | `breaker` | graded shedding's multiplier `k` (`shed` only) |
//! | `failfast_slow_call_duration_seconds` | gauge | `breaker` | above it a call is slow (slow-call rule) |
//! | `failfast_recovery_seconds` | gauge | `breaker` | open time before a trial |
//! | `failfast_trial_calls` | gauge | `breaker` | trial calls admitted at once |
//! | `failfast_success_threshold` | gauge | `breaker` | successful trials that close |
//! | `failfast_timeout_seconds` | gauge | `breaker` | the time limit of each call (`timeout` only) |
//!
//! Label values are bounded by the breakers a program declares: one series
//! per breaker name (and outcome or state pair).
//!
//! # Keyed families
//!
//! The members of a keyed family (`key = …`, `Family`) carry the key in
//! their name, `family[key]`, and are reported like any breaker without
//! being registered one by one: [`export`] reports every member of every
//! registered family (`registry::families()`), the overflow breaker
//! `family[*]` included, and a member's transitions report themselves. A
//! member has every series a registered breaker has: the call counters,
//! the state gauge, the transition counters (at zero from the first export
//! that finds it) and the settings gauges (`failfast_threshold`, …), with
//! the settings it runs with: its family's, as declared or changed since
//! (a configuration file's section for the family, [`FamilyRef::reconfigure`](crate::registry::FamilyRef::reconfigure)),
//! or its own once changed by its name `family[key]`.
//!
//! A family gives `breaker` at most `max_keys + 1` values at once (its
//! members and its overflow breaker), plus one for each key it evicted:
//! the `metrics` facade cannot remove a series, so an evicted member's
//! series stay with the recorder at their last values until the recorder
//! forgets them (an idle timeout, a restart), its state gauge included (a
//! member evicted while Open because its key went away still reads 1).
//! Keys that keep coming and going (a client's address) make new series
//! without end: key families by something bounded (a replica, a tenant).
//! An evicted member reports its calls since its last report as it is
//! evicted (no call runs through it then: its totals are final), so a
//! key's calls are all counted however often it is evicted and made
//! again, when its family is registered (attribute, tower and middleware
//! families are, from their first call) or it made a transition.
//!
//! # Counters count on under a name
//!
//! A call counter holds what the process counted under its labels, not one
//! breaker's total: the library remembers, for each value of `breaker` it
//! wrote, the call counts written, and adds to them what each breaker of
//! that name counted since its own last report. A key evicted and made
//! again (a new breaker, whose totals start at zero), a breaker built
//! anew under an old name, or two live breakers sharing one therefore
//! count on from the values written before, and a recorder that keeps the
//! largest value written sees every call (`absolute` means "at least":
//! `metrics-exporter-prometheus` keeps the largest). What is remembered is
//! small (seven counts, about 150 bytes, and the name's text, per value of
//! `breaker`) and kept for the life of the process, as the recorder keeps
//! its series.
//!
//! # Call durations
//!
//! `failfast_call_duration_seconds` is the one series written call by
//! call: each call's duration, in seconds, recorded as it ends with how it
//! ended (a call cut off at its time limit as `timeout`, a dropped or
//! cancelled one as `neutral`; refused calls and an observe-only breaker's
//! would-be refusals have none). Breakers time their calls only once a
//! registration or an [`export`] found a recorder in use (the no-op
//! recorder `metrics` falls back on does not count), from then on for the
//! life of the process; before that a call reads no clock. A breaker with
//! the slow-call rule or an adaptive limit times its calls anyway; any
//! other reads the clock twice per call more, and its successes leave the
//! fast path. In `benches/durations.rs`, run beside the work unprotected
//! (1 unit): 6 without a recorder, 74 recording into a recorder that only
//! counts, 114 into `metrics-exporter-prometheus`'s, whose own record
//! costs 42 without a breaker, as do the two clock readings: the clock is
//! the library's largest share, and calls are timed exactly all the same
//! (see `benches/README.md` for why neither the coarse clock nor timing
//! one call in N would do). Each duration is one recorder call
//! (`register_histogram`, then `record`); buckets or summaries are the
//! exporter's (`metrics-exporter-prometheus`: `set_buckets_for_metric`).
//!
//! # When values reach the recorder
//!
//! - On registration ([`registry::register`], and
//!   an attribute breaker's first call): every series of the breaker is set,
//!   the counters at their current totals (zero for a new breaker), so
//!   alerting rules see the series before anything happens.
//! - On every transition, by the thread that made it (not through the
//!   [`events`](crate::ops::events) queue, so a transition whose event was dropped
//!   is counted too): the transition counter, the state gauge and the
//!   breaker's call totals.
//! - On [`export`]: the call totals, state and settings of every registered
//!   breaker and of every member of a registered keyed family. Call it before each
//!   scrape (in the `/metrics` handler) for up-to-date call counts; and once
//!   after installing a recorder, if breakers were registered before it was.
//!
//! The descriptions of the series (unit and help text) go to each recorder
//! once, on the first registration or export that finds it in use. A
//! recorder is recognised by its address, and the last eight are
//! remembered: a recorder made where a dropped one was (a test's local
//! recorder, say) is not described again.
//!
//! Counters only go up: the call totals and state of the breakers of one
//! name are reported one report at a time (a lock per name, held while a
//! breaker's totals are read and the counts written), so the absolute values
//! written to a counter never decrease, even with [`export`] running on
//! several threads at once. A recorder that blocks holds up the other
//! reports of that name (its transitions, and `export`), as any recorder
//! call would. A recorder that panics is caught wherever the library calls
//! it (the panic hook reports it as usual): the call, transition,
//! registration or export at hand goes on, and so does the delivery of
//! [`events`](crate::ops::events#delivery).
//!
//! - On a change of settings ([`Breaker::reconfigure`](crate::Breaker::reconfigure),
//!   [`configure::apply`](crate::configure::apply), a family's
//!   reconfiguration): the settings gauges of a registered breaker, and of
//!   a family's member reported before.
//!
//! Calls are *not* reported to the recorder one by one: they are counted in
//! the breaker's per-thread totals (no shared write per call, see
//! [`Snapshot::calls`](crate::Snapshot::calls)) and reported as absolute
//! values at the moments above: nothing but its duration (above) is written
//! per call or per key looked up.
//!
//! ```
//! # use failfast_runtime::{registry, Breaker};
//! # use std::sync::Arc;
//! // In the handler of GET /metrics, before rendering the exporter's text:
//! failfast_runtime::metrics::export();
//! ```

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use ::metrics::{
    Key, KeyName, Label, Level, Metadata, Recorder, SharedString, Unit, gauge, with_recorder,
};

use crate::core::breaker::Breaker;
use crate::core::breaker::durations::{Ended, TOOK, record_durations};
use crate::core::breaker::shedding::SHEDDING;
use crate::core::breaker::transition::{Change, RECONFIGURED, TRANSITIONED};
use crate::core::error::State;
use crate::core::listed::REGISTERED;
use crate::core::name::Name;
use crate::ops::registry;

const CALLS: &str = "failfast_calls_total";
const STATE: &str = "failfast_state";
const SHEDDING_GAUGE: &str = "failfast_shedding";
const LIMIT_GAUGE: &str = "failfast_concurrency_limit";
const TRANSITIONS: &str = "failfast_transitions_total";
const DURATIONS: &str = "failfast_call_duration_seconds";
/// `failfast_call_duration_seconds`'s outcomes, in the order of `Ended`.
const ENDED: [&str; 4] = ["success", "failure", "neutral", "timeout"];

fn label(name: &Name) -> SharedString {
    match (name.as_static(), name.as_shared()) {
        (Some(s), _) => SharedString::from(s),
        (None, Some(s)) => SharedString::from(Arc::clone(s)),
        (None, None) => SharedString::from(name.to_string()),
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

/// The recorders described to so far, by address (0: none): the last eight,
/// and where the next one goes.
static DESCRIBED: Mutex<([usize; 8], usize)> = Mutex::new(([0; 8], 0));

/// Describes the series to the recorder in use, unless they were described
/// to it already (see the module docs).
fn describe() {
    with_recorder(|r| {
        // The no-op recorder is the one of no size: any other makes the
        // breakers time their calls (module docs, "Call durations").
        if size_of_val(r) != 0 {
            record_durations();
        }
        let id = std::ptr::from_ref(r).cast::<()>().addr();
        {
            let mut described = DESCRIBED.lock().unwrap_or_else(PoisonError::into_inner);
            let (ids, next) = &mut *described;
            if ids.contains(&id) {
                return;
            }
            ids[*next % ids.len()] = id;
            *next += 1;
        }
        describe_to(r);
    });
}

fn describe_to(r: &dyn Recorder) {
    let counter = |name: &'static str, text: &'static str| {
        r.describe_counter(
            KeyName::from_const_str(name),
            Some(Unit::Count),
            SharedString::const_str(text),
        );
    };
    let gauge = |name: &'static str, unit: Option<Unit>, text: &'static str| {
        r.describe_gauge(
            KeyName::from_const_str(name),
            unit,
            SharedString::const_str(text),
        );
    };
    counter(CALLS, "Calls through a circuit breaker, by outcome.");
    gauge(
        STATE,
        None,
        "Circuit breaker state: 0 closed, 1 open, 2 half-open.",
    );
    counter(TRANSITIONS, "Circuit breaker state transitions.");
    r.describe_histogram(
        KeyName::from_const_str(DURATIONS),
        Some(Unit::Seconds),
        SharedString::const_str("Duration of calls through a circuit breaker, by outcome."),
    );
    gauge(
        "failfast_threshold",
        Some(Unit::Count),
        "Consecutive counted failures that open the breaker.",
    );
    gauge(
        "failfast_failure_rate_threshold",
        None,
        "Share of failed calls in the window that opens the breaker.",
    );
    gauge(
        "failfast_slow_rate_threshold",
        None,
        "Share of slow calls in the window that opens the breaker.",
    );
    gauge(
        "failfast_slow_call_duration_seconds",
        Some(Unit::Seconds),
        "Calls slower than this are slow calls.",
    );
    gauge(
        "failfast_recovery_seconds",
        Some(Unit::Seconds),
        "Time a breaker stays open before a trial call.",
    );
    gauge(
        "failfast_trial_calls",
        Some(Unit::Count),
        "Trial calls admitted at once while half-open.",
    );
    gauge(
        "failfast_success_threshold",
        Some(Unit::Count),
        "Successful trial calls that close the breaker.",
    );
    gauge(
        "failfast_timeout_seconds",
        Some(Unit::Seconds),
        "Time limit of each call: a call still running then is cut off as a timeout.",
    );
    gauge(
        SHEDDING_GAUGE,
        None,
        "Graded shedding's chance of refusing a call now.",
    );
    gauge(
        LIMIT_GAUGE,
        Some(Unit::Count),
        "Adaptive concurrency limit in force: calls admitted at once.",
    );
    gauge(
        "failfast_shed",
        None,
        "Graded shedding's multiplier: calls admitted per call accepted.",
    );
}

/// Where the series below are said to come from.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The call counts written under one value of `breaker`, in the order of
/// `OUTCOMES`: what every breaker of that name counted, up to its last
/// report (module docs, "Counters count on under a name"). Its lock is held
/// while a breaker of the name is read and reported, so that a counter is
/// never set below a value written before.
type Written = Arc<Mutex<[u64; 8]>>;

/// The counts written, by value of `breaker`, for the life of the process.
static WRITTEN: Mutex<Option<HashMap<Name, Written>>> = Mutex::new(None);

/// The counts written under `name` so far (zeros for a name not seen yet).
fn written(name: &Name) -> Written {
    let mut names = WRITTEN.lock().unwrap_or_else(PoisonError::into_inner);
    let names = names.get_or_insert_with(HashMap::new);
    if let Some(written) = names.get(name.as_str()) {
        return Arc::clone(written);
    }
    let written = Written::default();
    names.insert(name.clone(), Arc::clone(&written));
    written
}

/// A breaker's series keys, built once (on its registration, first
/// transition or first export) so that reporting allocates nothing.
#[derive(Debug)]
pub(crate) struct Keys {
    /// `failfast_calls_total` by outcome, in the order of `OUTCOMES`.
    calls: [Key; 8],
    state: Key,
    /// `failfast_shedding`, written for breakers with graded shedding.
    shedding: Key,
    /// `failfast_concurrency_limit`, written for breakers with an adaptive
    /// limit.
    limit: Key,
    /// `failfast_transitions_total`, indexed by `pair(from, to)`.
    transitions: [Key; 9],
    /// `failfast_call_duration_seconds` by outcome, in the order of `ENDED`.
    durations: [Key; 4],
    /// The counts written under the breaker's name.
    written: Written,
    /// This breaker's totals added to `written` so far; read and written
    /// only under `written`'s lock.
    counted: Mutex<[u64; 8]>,
}

const OUTCOMES: [&str; 8] = [
    "success",
    "failure",
    "neutral",
    "slow",
    "rejected",
    "timeout",
    "would_reject",
    "shed",
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
            shedding: key(SHEDDING_GAUGE, &[]),
            limit: key(LIMIT_GAUGE, &[]),
            transitions: std::array::from_fn(|i| {
                let (from, to) = (STATES[i / 3], STATES[i % 3]);
                key(
                    TRANSITIONS,
                    &[("from", state_label(from)), ("to", state_label(to))],
                )
            }),
            durations: ENDED.map(|outcome| key(DURATIONS, &[("outcome", outcome)])),
            written: written(name),
            counted: Mutex::new([0; 8]),
        }
    }
}

fn keys(b: &Breaker) -> &Keys {
    b.exported().get_or_init(|| Keys::new(&b.shared_name()))
}

/// Adds what `b` counted since its last report to the counts of its name,
/// and sets them and `b`'s state, as they are now.
fn export_breaker(b: &Breaker) {
    let keys = keys(b);
    // Read under the name's lock: a later write reports later totals (and
    // never less than the last one written, whatever the reading).
    let mut written = keys.written.lock().unwrap_or_else(PoisonError::into_inner);
    let mut counted = keys.counted.lock().unwrap_or_else(PoisonError::into_inner);
    let s = b.snapshot();
    let totals = [
        s.successes,
        s.failures,
        s.neutral,
        s.slow,
        s.rejected,
        s.timeouts,
        s.would_reject,
        s.shed,
    ];
    for ((sum, so_far), total) in written.iter_mut().zip(counted.iter_mut()).zip(totals) {
        // A total read lower than one counted before adds nothing.
        *sum += total.saturating_sub(*so_far);
        *so_far = total.max(*so_far);
    }
    drop(counted);
    with_recorder(|r| {
        for (key, sum) in keys.calls.iter().zip(written.iter()) {
            r.register_counter(key, &METADATA).absolute(*sum);
        }
        r.register_gauge(&keys.state, &METADATA)
            .set(state_code(s.state));
        if b.settings().sheds() {
            r.register_gauge(&keys.shedding, &METADATA).set(s.shedding);
        }
        if let Some(limit) = s.concurrency_limit {
            r.register_gauge(&keys.limit, &METADATA)
                .set(f64::from(limit));
        }
    });
}

/// Reports the call totals, state and settings of every registered
/// breaker, and of every member of a registered keyed family, to the
/// installed recorder; see the [module docs](self) for when to call it.
pub fn export() {
    caught(describe);
    for b in registry::registered() {
        caught(|| {
            export_breaker(&b);
            settings(&b);
        });
    }
    #[cfg(feature = "keyed")]
    for family in registry::families() {
        // Held one at a time, each for its own report: a member held is
        // one the family may not evict.
        let members: Vec<_> = family.members().iter().map(Arc::downgrade).collect();
        for member in members.iter().filter_map(std::sync::Weak::upgrade) {
            caught(|| export_member(&member));
        }
    }
}

/// A family's member: its call totals, state and settings, and its
/// transition counters at zero the first time, as registration does for a
/// breaker.
#[cfg(feature = "keyed")]
fn export_member(b: &Breaker) {
    let first = !b.exported().is_set();
    export_breaker(b);
    if first {
        zero_transitions(keys(b));
    }
    settings(b);
}

/// A keyed family's member was evicted: what it counted since its last
/// report reaches the counters of its name now, or never would, when its
/// family is registered (`export` would have found it) or it was reported
/// before (a transition).
#[cfg(feature = "keyed")]
#[cfg(feature = "keyed")]
#[linkme::distributed_slice(crate::policy::keyed::OBSERVERS)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static EVICTED: fn(crate::policy::keyed::Seen<'_>) = |seen| {
    if let crate::policy::keyed::Seen::Evicted(breaker, registered) = seen {
        evicted(breaker, registered);
    }
};

#[cfg(feature = "keyed")]
fn evicted(b: &Breaker, registered: bool) {
    if registered || b.exported().is_set() {
        caught(|| export_member(b));
    }
}

/// Sets the counters of the transitions a breaker makes on its own at
/// zero, if they have no value yet.
fn zero_transitions(keys: &Keys) {
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
}

/// Runs `f`, a report to the recorder, catching the recorder's panic: it is
/// the recorder's own (the panic hook reports it as usual), and the breaker
/// and its caller carry on.
fn caught(f: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(f));
}

/// A breaker was registered: every one of its series, at its current values.
#[linkme::distributed_slice(REGISTERED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static REGISTER: fn(&Breaker) = registered;

fn registered(b: &Breaker) {
    caught(|| {
        describe();
        series(b);
    });
}

fn series(b: &Breaker) {
    export_breaker(b);
    zero_transitions(keys(b));
    settings(b);
}

/// The settings gauges of `b`, with the settings in force.
fn settings(b: &Breaker) {
    let name = label(&b.shared_name());
    let c = b.settings();
    #[allow(clippy::cast_precision_loss)] // nanoseconds below 2^53 (104 days) are exact
    let seconds = |nanos: u64| nanos as f64 / 1e9;
    let set = |metric: &'static str, value: f64| {
        gauge!(metric, "breaker" => name.clone()).set(value);
    };
    if c.uses_threshold() {
        set("failfast_threshold", f64::from(c.threshold));
    } else if c.uses_failure_rate() {
        set("failfast_failure_rate_threshold", c.failure_rate);
    }
    if c.sheds() {
        set("failfast_shed", c.shed());
    }
    if c.slow != 0 {
        set("failfast_slow_rate_threshold", c.slow_rate);
        set("failfast_slow_call_duration_seconds", seconds(c.slow));
    }
    set("failfast_recovery_seconds", seconds(c.recovery));
    set("failfast_trial_calls", f64::from(c.trial_calls));
    set("failfast_success_threshold", f64::from(c.success_threshold));
    if c.timeout != 0 {
        set("failfast_timeout_seconds", seconds(c.timeout));
    }
}

/// A transition from `from` to `to`: its counter, then the breaker's state
/// and call totals as they are now (later transitions may have come first).
#[linkme::distributed_slice(TRANSITIONED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static TRANSITION: fn(&Change<'_>) = |c| transition(c.breaker, c.from, c.to);

/// Graded shedding started or stopped: the breaker's shedding gauge and
/// call totals as they are now.
#[linkme::distributed_slice(SHEDDING)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static SHEDDING_CHANGED: fn(&Breaker, f64) = |b, _| caught(|| export_breaker(b));

/// The settings' gauges of a registered breaker, or of a family's member
/// reported before, show its new settings.
#[linkme::distributed_slice(RECONFIGURED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static RECONFIGURE: fn(&Breaker) = |b| {
    if b.is_registered() {
        registered(b);
    } else if b.exported().is_set() {
        caught(|| settings(b));
    }
};

fn transition(b: &Breaker, from: State, to: State) {
    caught(|| {
        let keys = keys(b);
        with_recorder(|r| {
            r.register_counter(&keys.transitions[pair(from, to)], &METADATA)
                .increment(1);
        });
        export_breaker(b);
    });
}

/// A timed call ended: its duration, under the breaker's keys when its
/// series were written already, else under a key made for it (a breaker
/// that was never registered, reported or transitioned stays so).
#[linkme::distributed_slice(TOOK)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static TOOK_DURATION: fn(&Breaker, Ended, u64) = |b, ended, nanos| caught(|| took(b, ended, nanos));

fn took(b: &Breaker, ended: Ended, nanos: u64) {
    #[allow(clippy::cast_precision_loss)] // nanoseconds below 2^53 (104 days) are exact
    let seconds = nanos as f64 / 1e9;
    with_recorder(|r| {
        if b.exported().is_set() {
            let key = &keys(b).durations[ended as usize];
            r.register_histogram(key, &METADATA).record(seconds);
        } else {
            let labels = vec![
                Label::new("breaker", label(&b.shared_name())),
                Label::new("outcome", ENDED[ended as usize]),
            ];
            let key = Key::from_parts(DURATIONS, labels);
            r.register_histogram(&key, &METADATA).record(seconds);
        }
    });
}
