//! Feature `metrics`: every series of a breaker exists from its registration,
//! and calls, states and transitions reach the recorder; the series are
//! described once per recorder; counters never go down, even under
//! concurrent exports; a recorder that panics stops neither callers nor
//! events.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, ManualClock, Outcome, State, registry};
use metrics::{
    Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// The recorder's values at one moment. The debugging recorder sets every
/// value back to zero when it is read, so a counter read here shows what was
/// added (or set) since the last reading.
struct Reading(Vec<(String, Labels, DebugValue)>);

type Labels = Vec<(String, String)>;

fn read(snapshotter: &Snapshotter) -> Reading {
    Reading(
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let key = key.key();
                let labels = key
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                (key.name().to_owned(), labels, value)
            })
            .collect(),
    )
}

impl Reading {
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && l.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(.., value)| value)
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.value(name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{name}{labels:?}: {other:?}"),
        }
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        match self.value(name, labels) {
            Some(DebugValue::Gauge(g)) => g.into_inner(),
            other => panic!("{name}{labels:?}: {other:?}"),
        }
    }
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

/// Held by each test for its whole run: `export` reports every registered
/// breaker and family to the recorder of the thread calling it, so two
/// tests exporting at once would each write the other's series (and take
/// the other's first report of a new member).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A breaker with threshold 2 and 30 s of recovery, in the registry.
fn registered(name: &'static str) -> Arc<Breaker> {
    let b = Arc::new(
        Breaker::builder()
            .name(name)
            .threshold(2)
            .recovery(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    registry::register(&b);
    b
}

#[test]
fn every_series_exists_at_registration_and_follows_calls_and_transitions() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let name = "metrics-payments";
    let breaker = |outcome: &'static str| [("breaker", name), ("outcome", outcome)];
    metrics::with_local_recorder(&recorder, || {
        let b = registered(name);

        // Before any call: zero-valued series, thresholds as gauges.
        let r = read(&s);
        for outcome in OUTCOMES {
            assert_eq!(r.counter("failfast_calls_total", &breaker(outcome)), 0);
        }
        assert_eq!(r.gauge("failfast_state", &[("breaker", name)]), 0.0);
        for (from, to) in [
            ("closed", "open"),
            ("open", "half_open"),
            ("half_open", "closed"),
            ("half_open", "open"),
        ] {
            let labels = [("breaker", name), ("from", from), ("to", to)];
            assert_eq!(r.counter("failfast_transitions_total", &labels), 0);
        }
        assert_eq!(r.gauge("failfast_threshold", &[("breaker", name)]), 2.0);
        assert_eq!(
            r.gauge("failfast_recovery_seconds", &[("breaker", name)]),
            30.0
        );
        assert_eq!(r.gauge("failfast_trial_calls", &[("breaker", name)]), 1.0);
        assert_eq!(
            r.gauge("failfast_success_threshold", &[("breaker", name)]),
            1.0
        );

        // Calls are not reported one by one...
        for _ in 0..3 {
            b.acquire().unwrap().record(Outcome::Success);
        }
        b.acquire().unwrap().record(Outcome::Neutral);
        b.acquire().unwrap().record(Outcome::Failure);
        let r = read(&s);
        assert_eq!(
            r.counter("failfast_calls_total", &breaker("success")),
            0,
            "not per call"
        );
        // ...but at the transition they lead to, with it.
        b.acquire().unwrap().record(Outcome::Failure);
        let r = read(&s);
        let labels = [("breaker", name), ("from", "closed"), ("to", "open")];
        assert_eq!(r.counter("failfast_transitions_total", &labels), 1);
        assert_eq!(r.gauge("failfast_state", &[("breaker", name)]), 1.0);
        assert_eq!(r.counter("failfast_calls_total", &breaker("success")), 3);
        assert_eq!(r.counter("failfast_calls_total", &breaker("failure")), 2);
        assert_eq!(r.counter("failfast_calls_total", &breaker("neutral")), 1);

        // And on export.
        for _ in 0..4 {
            assert!(b.acquire().is_err());
        }
        failfast_runtime::metrics::export();
        let r = read(&s);
        assert_eq!(r.counter("failfast_calls_total", &breaker("rejected")), 4);
        assert_eq!(r.counter("failfast_calls_total", &breaker("success")), 3);
        assert_eq!(r.gauge("failfast_state", &[("breaker", name)]), 1.0);

        b.set_mode(Mode::Normal);
        let r = read(&s);
        let labels = [("breaker", name), ("from", "open"), ("to", "closed")];
        assert_eq!(r.counter("failfast_transitions_total", &labels), 1);
        assert_eq!(r.counter("failfast_calls_total", &breaker("rejected")), 4);

        // Forcing open a breaker forced open already is no transition.
        for _ in 0..3 {
            b.set_mode(Mode::ForcedOpen);
        }
        let r = read(&s);
        let opened = [("breaker", name), ("from", "closed"), ("to", "open")];
        assert_eq!(
            r.counter("failfast_transitions_total", &opened),
            1,
            "one more since the last read"
        );
        let again = [("breaker", name), ("from", "open"), ("to", "open")];
        assert!(
            r.value("failfast_transitions_total", &again).is_none(),
            "no open → open series"
        );
    });
}

#[test]
fn an_observe_only_breaker_reports_the_calls_it_would_have_rejected() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let name = "metrics-shadow";
    let breaker = |outcome: &'static str| [("breaker", name), ("outcome", outcome)];
    metrics::with_local_recorder(&recorder, || {
        let b = registered(name);
        b.set_mode(Mode::ObserveOnly);
        for _ in 0..2 {
            b.acquire().unwrap().record(Outcome::Failure);
        }
        for _ in 0..5 {
            drop(b.acquire().expect("observe-only: never refused"));
        }
        failfast_runtime::metrics::export();
        let r = read(&s);
        assert_eq!(r.gauge("failfast_state", &[("breaker", name)]), 1.0);
        assert_eq!(
            r.counter("failfast_calls_total", &breaker("would_reject")),
            5
        );
        assert_eq!(r.counter("failfast_calls_total", &breaker("rejected")), 0);
        assert_eq!(r.counter("failfast_calls_total", &breaker("failure")), 2);
    });
}

#[test]
fn graded_shedding_reports_its_refusals_its_chance_and_its_multiplier() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let name = "metrics-shed";
    let breaker = |outcome: &'static str| [("breaker", name), ("outcome", outcome)];
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(Breaker::builder().name(name).shed(1.5).build().unwrap());
        registry::register(&b);
        let r = read(&s);
        assert_eq!(r.gauge("failfast_shed", &[("breaker", name)]), 1.5);
        assert_eq!(r.gauge("failfast_shedding", &[("breaker", name)]), 0.0);
        // Ten failures: shedding starts, and reports itself at once.
        for _ in 0..10 {
            b.acquire().unwrap().record(Outcome::Failure);
        }
        let chance = b.snapshot().shedding;
        assert!(chance > 0.8, "{chance}");
        let r = read(&s);
        assert_eq!(r.gauge("failfast_shedding", &[("breaker", name)]), chance);
        let shed = (0..200).filter(|_| b.acquire().is_err()).count() as u64;
        failfast_runtime::metrics::export();
        let r = read(&s);
        assert_eq!(r.counter("failfast_calls_total", &breaker("shed")), shed);
        assert_eq!(
            r.counter("failfast_calls_total", &breaker("rejected")),
            shed
        );
        assert!(
            r.value("failfast_concurrency_limit", &[("breaker", name)])
                .is_none()
        );
        for rule in ["failfast_threshold", "failfast_failure_rate_threshold"] {
            assert!(
                r.value(rule, &[("breaker", name)]).is_none(),
                "{rule}: no such rule"
            );
        }
    });
}

/// A recorder that counts descriptions and checks, per counter, that every
/// absolute value written is at least the one written before. Leaked, so
/// that no other recorder ever has its address (the library recognises
/// recorders by address).
#[derive(Default)]
struct Recording(Arc<Record>);

#[derive(Default)]
struct Record {
    described: AtomicU64,
    /// The last absolute value written, per counter.
    last: Mutex<HashMap<Key, u64>>,
    writes: AtomicU64,
    /// Values written below the one before, with their counter.
    decreases: Mutex<Vec<(Key, u64, u64)>>,
}

impl Recording {
    fn leaked() -> &'static Recording {
        Box::leak(Box::default())
    }
}

impl std::ops::Deref for Recording {
    type Target = Record;

    fn deref(&self) -> &Record {
        &self.0
    }
}

struct Written {
    key: Key,
    to: Arc<Record>,
}

impl CounterFn for Written {
    fn increment(&self, _: u64) {}

    fn absolute(&self, value: u64) {
        let to = &self.to;
        to.writes.fetch_add(1, Ordering::Relaxed);
        let mut last = to.last.lock().unwrap();
        let before = last.entry(self.key.clone()).or_insert(0);
        if value < *before {
            to.decreases
                .lock()
                .unwrap()
                .push((self.key.clone(), *before, value));
        }
        *before = value;
    }
}

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        self.0.described.fetch_add(1, Ordering::Relaxed);
    }

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        self.0.described.fetch_add(1, Ordering::Relaxed);
    }

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        self.0.described.fetch_add(1, Ordering::Relaxed);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Written {
            key: key.clone(),
            to: Arc::clone(&self.0),
        }))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Series the library describes: two counters, twelve gauges, a histogram.
const DESCRIPTIONS: u64 = 15;

#[test]
fn the_series_are_described_once_per_recorder() {
    let _alone = alone();
    let recording = Recording::leaked();
    metrics::with_local_recorder(recording, || {
        failfast_runtime::metrics::export();
        assert_eq!(recording.described.load(Ordering::Relaxed), DESCRIPTIONS);
        failfast_runtime::metrics::export();
        registered("metrics-described");
        failfast_runtime::metrics::export();
    });
    assert_eq!(
        recording.described.load(Ordering::Relaxed),
        DESCRIPTIONS,
        "described again"
    );
    // Two others are described in turn.
    let others = [Recording::leaked(), Recording::leaked()];
    for other in others {
        metrics::with_local_recorder(other, failfast_runtime::metrics::export);
        assert_eq!(other.described.load(Ordering::Relaxed), DESCRIPTIONS);
    }
    // The first two are still known (the last eight are): neither is
    // described again when it comes back. (Two newcomers, not one: the
    // other tests of this binary describe recorders before this one, how
    // many depends on their order, and a list that keeps the wrong slots
    // can lose the first recorder or not by that count with one newcomer,
    // but always loses one of the first two with two.)
    for (comes_back, which) in [(recording, "the first"), (others[0], "the second")] {
        metrics::with_local_recorder(comes_back, failfast_runtime::metrics::export);
        assert_eq!(
            comes_back.described.load(Ordering::Relaxed),
            DESCRIPTIONS,
            "{which} described again after others"
        );
    }
}

/// Three threads export in a loop while two others make calls (and
/// transitions, which report too) through a registered breaker: every
/// value written to a counter is at least the one written to it before.
#[test]
fn counters_never_go_down_under_concurrent_exports() {
    let _alone = alone();
    let recording = Recording::leaked();
    let clock = ManualClock::new();
    let b = Arc::new(
        Breaker::builder()
            .name("metrics-concurrent")
            .threshold(5)
            .recovery(Duration::from_micros(10))
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    metrics::with_local_recorder(recording, || registry::register(&b));
    let exporting = AtomicBool::new(true);
    std::thread::scope(|s| {
        let exporters: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    metrics::with_local_recorder(recording, || {
                        for _ in 0..2_000 {
                            failfast_runtime::metrics::export();
                        }
                    });
                })
            })
            .collect();
        for seed in 1..=2u64 {
            let (b, clock, exporting) = (&b, &clock, &exporting);
            s.spawn(move || {
                metrics::with_local_recorder(recording, || {
                    let mut x = seed;
                    while exporting.load(Ordering::Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        clock.advance(Duration::from_micros(1));
                        if let Ok(permit) = b.acquire() {
                            permit.record(if x % 4 == 0 {
                                Outcome::Failure
                            } else {
                                Outcome::Success
                            });
                        }
                    }
                });
            });
        }
        for e in exporters {
            e.join().unwrap();
        }
        exporting.store(false, Ordering::Relaxed);
    });
    let decreases = recording.decreases.lock().unwrap();
    let writes = recording.writes.load(Ordering::Relaxed);
    eprintln!(
        "{writes} counter values written, {} below the one before",
        decreases.len()
    );
    assert!(writes > 10_000, "only {writes} values written");
    assert!(b.snapshot().transitions > 0, "the calls made no transition");
    assert!(
        decreases.is_empty(),
        "{} of {writes} values went down, first: {:?}",
        decreases.len(),
        decreases.first()
    );
    assert_eq!(recording.described.load(Ordering::Relaxed), DESCRIPTIONS);
}

/// Panics at everything.
struct Panicking;

impl Recorder for Panicking {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        panic!("a recorder's bug");
    }

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        panic!("a recorder's bug");
    }

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        panic!("a recorder's bug");
    }

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        panic!("a recorder's bug");
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        panic!("a recorder's bug");
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        panic!("a recorder's bug");
    }
}

/// The recorder panics at every report: every call still returns to its
/// caller as usual, the listener gets every transition, in order, and
/// registering and exporting go on too.
#[test]
fn a_panicking_recorder_stops_neither_the_caller_nor_the_listeners() {
    let _alone = alone();
    let clock = ManualClock::new();
    let recovery = Duration::from_secs(30);
    let b = Arc::new(
        Breaker::builder()
            .name("metrics-panics")
            .threshold(1)
            .recovery(recovery)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _s = failfast_runtime::events::subscribe(&b, move |t| {
        sink.lock().unwrap().push((t.from, t.to, t.seq))
    });
    metrics::with_local_recorder(&Panicking, || {
        for round in 0..10 {
            let tripped = b.call(|| Err::<(), _>("down"));
            assert!(
                tripped.is_err_and(|e| matches!(e, failfast_runtime::Error::Failed(_))),
                "round {round}"
            );
            assert_eq!(b.state(), State::Open);
            clock.advance(recovery);
            assert_eq!(b.call(|| Ok::<_, &str>(round)).ok(), Some(round));
            assert_eq!(b.state(), State::Closed);
        }
        registry::register(&b);
        failfast_runtime::metrics::export();
    });
    let seen = seen.lock().unwrap().clone();
    let cycle = [
        (State::Closed, State::Open),
        (State::Open, State::HalfOpen),
        (State::HalfOpen, State::Closed),
    ];
    assert_eq!(seen.len(), 30, "{seen:?}");
    for (i, &(from, to, seq)) in seen.iter().enumerate() {
        assert_eq!((from, to), cycle[i % 3], "event {i}");
        assert_eq!(seq, i as u64 + 1);
    }
}

/// Keeps each counter as `metrics-exporter-prometheus` does, and is read
/// without resetting: an increment adds, an absolute value is kept only
/// when it is larger (`absolute` means "at least").
#[derive(Clone, Default)]
struct Scraped(Arc<Mutex<HashMap<Key, u64>>>);

struct ScrapedCounter {
    key: Key,
    to: Scraped,
}

impl CounterFn for ScrapedCounter {
    fn increment(&self, value: u64) {
        *self
            .to
            .0
            .lock()
            .unwrap()
            .entry(self.key.clone())
            .or_insert(0) += value;
    }

    fn absolute(&self, value: u64) {
        let mut counters = self.to.0.lock().unwrap();
        let kept = counters.entry(self.key.clone()).or_insert(0);
        *kept = value.max(*kept);
    }
}

impl Recorder for Scraped {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(ScrapedCounter {
            key: key.clone(),
            to: self.clone(),
        }))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

impl Scraped {
    /// `failfast_calls_total{breaker, outcome}`, if it was ever written.
    fn calls(&self, breaker: &str, outcome: &str) -> Option<u64> {
        let counters = self.0.lock().unwrap();
        counters
            .iter()
            .find(|(key, _)| {
                key.name() == "failfast_calls_total"
                    && key
                        .labels()
                        .any(|l| l.key() == "breaker" && l.value() == breaker)
                    && key
                        .labels()
                        .any(|l| l.key() == "outcome" && l.value() == outcome)
            })
            .map(|(_, value)| *value)
    }
}

/// Every member of a registered family is exported with its current
/// counts, the overflow breaker too, its transition counters at zero from
/// the first export; and calls between two exports write nothing.
#[cfg(feature = "keyed")]
#[test]
fn export_reports_every_member_of_a_family_with_its_current_counts() {
    let _alone = alone();
    use failfast_runtime::Family;
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let calls =
        |breaker: &'static str, outcome: &'static str| [("breaker", breaker), ("outcome", outcome)];
    let family: Family<String> = Family::builder(
        Breaker::builder()
            .name("metrics-keyed")
            .threshold(2)
            .max_keys(2),
    )
    .build()
    .unwrap();
    registry::register(&family);
    metrics::with_local_recorder(&recorder, || {
        for _ in 0..5 {
            family.get("a").acquire().unwrap().record(Outcome::Success);
            family.get("b").acquire().unwrap().record(Outcome::Success);
        }
        for _ in 0..2 {
            family.get("b").acquire().unwrap().record(Outcome::Failure);
        }
        // The family is full of breakers it may not evict (`b` is open, `a`
        // leased by a call in flight): `c` runs through the overflow breaker.
        let a = family.lease("a");
        for _ in 0..3 {
            family.get("c").acquire().unwrap().record(Outcome::Success);
        }
        assert_eq!(family.get("c").name(), "metrics-keyed[*]");
        drop(a);

        failfast_runtime::metrics::export();
        let r = read(&s);
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[a]", "success")
            ),
            5
        );
        assert_eq!(
            r.gauge("failfast_state", &[("breaker", "metrics-keyed[a]")]),
            0.0
        );
        let a_opened = [
            ("breaker", "metrics-keyed[a]"),
            ("from", "closed"),
            ("to", "open"),
        ];
        assert_eq!(r.counter("failfast_transitions_total", &a_opened), 0);
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[b]", "success")
            ),
            5
        );
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[b]", "failure")
            ),
            2
        );
        assert_eq!(
            r.gauge("failfast_state", &[("breaker", "metrics-keyed[b]")]),
            1.0
        );
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[*]", "success")
            ),
            3
        );

        // Calls write nothing...
        for _ in 0..4 {
            family.get("a").acquire().unwrap().record(Outcome::Success);
        }
        let r = read(&s);
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[a]", "success")
            ),
            0,
            "not per call"
        );
        // ...and the next export brings the counts up to date.
        failfast_runtime::metrics::export();
        let r = read(&s);
        assert_eq!(
            r.counter(
                "failfast_calls_total",
                &calls("metrics-keyed[a]", "success")
            ),
            9
        );
    });
}

/// A family with room for one key, registered when `register`.
#[cfg(feature = "keyed")]
fn one_key_family(name: &'static str, register: bool) -> failfast_runtime::Family<String> {
    let family = failfast_runtime::Family::builder(Breaker::builder().name(name).max_keys(1))
        .build()
        .unwrap();
    if register {
        registry::register(&family);
    }
    family
}

/// One call through `key`'s breaker, with `outcome`.
#[cfg(feature = "keyed")]
fn record(family: &failfast_runtime::Family<String>, key: &str, outcome: Outcome) {
    family.get(key).acquire().unwrap().record(outcome);
}

/// A key evicted and made again gets a new breaker, whose totals start at
/// zero: its counters count on from the values written before, so a
/// recorder that keeps the largest value sees the calls of both.
#[cfg(feature = "keyed")]
#[test]
fn a_key_evicted_and_made_again_counts_on_from_its_last_values() {
    let _alone = alone();
    let scraped = Scraped::default();
    let family = one_key_family("metrics-rekeyed", true);
    let call = |key: &str, outcome: Outcome| record(&family, key, outcome);
    metrics::with_local_recorder(&scraped, || {
        for _ in 0..3 {
            call("a", Outcome::Success);
        }
        call("a", Outcome::Failure);
        failfast_runtime::metrics::export();
        assert_eq!(scraped.calls("metrics-rekeyed[a]", "success"), Some(3));

        for round in 1..=2 {
            // `b` takes `a`'s place, then `a` takes `b`'s: a new breaker.
            call("b", Outcome::Success);
            failfast_runtime::metrics::export();
            for _ in 0..2 {
                call("a", Outcome::Success);
            }
            call("a", Outcome::Failure);
            assert_eq!(family.stats().evicted, 2 * round, "round {round}");
            assert_eq!(family.get("a").snapshot().successes, 2);
            failfast_runtime::metrics::export();
            assert_eq!(
                scraped.calls("metrics-rekeyed[a]", "success"),
                Some(3 + 2 * round),
                "round {round}"
            );
            assert_eq!(
                scraped.calls("metrics-rekeyed[a]", "failure"),
                Some(1 + round),
                "round {round}"
            );
            assert_eq!(scraped.calls("metrics-rekeyed[b]", "success"), Some(round));
        }
    });
}

/// The calls a member took since its last report reach its counters as it
/// is evicted: nothing a key counted is lost between two exports.
#[cfg(feature = "keyed")]
#[test]
fn an_evicted_key_reports_its_calls_since_the_last_export() {
    let _alone = alone();
    let scraped = Scraped::default();
    let family = one_key_family("metrics-unexported", true);
    let call = |key: &str, outcome: Outcome| record(&family, key, outcome);
    metrics::with_local_recorder(&scraped, || {
        call("a", Outcome::Success);
        failfast_runtime::metrics::export();
        for _ in 0..4 {
            call("a", Outcome::Success);
        }
        call("a", Outcome::Failure);
        // `b` takes `a`'s place before any export.
        call("b", Outcome::Success);
        assert_eq!(family.stats().evicted, 1);
        assert_eq!(scraped.calls("metrics-unexported[a]", "success"), Some(5));
        assert_eq!(scraped.calls("metrics-unexported[a]", "failure"), Some(1));
        // Made again, and evicted again without an export in between.
        for _ in 0..2 {
            call("a", Outcome::Success);
        }
        call("b", Outcome::Success);
        assert_eq!(family.stats().evicted, 3);
        assert_eq!(scraped.calls("metrics-unexported[a]", "success"), Some(7));
    });
}

/// A member of a family nobody registered, that was never reported, is not
/// reported at eviction either: its name was never a series.
#[cfg(feature = "keyed")]
#[test]
fn an_unreported_member_of_an_unregistered_family_stays_unreported() {
    let _alone = alone();
    let scraped = Scraped::default();
    let family = one_key_family("metrics-unlisted", false);
    let call = |key: &str| record(&family, key, Outcome::Success);
    metrics::with_local_recorder(&scraped, || {
        call("a");
        call("b");
        assert_eq!(family.stats().evicted, 1);
        assert_eq!(scraped.calls("metrics-unlisted[a]", "success"), None);
    });
}

/// A member has the settings gauges a registered breaker has, with the
/// settings it runs with: its family's as changed at run time (a
/// configuration file's section for the family), then its own once
/// changed by its name, written at once for a member reported before.
#[cfg(feature = "keyed")]
#[test]
fn a_members_settings_gauges_show_the_settings_in_force() {
    let _alone = alone();
    use failfast_runtime::{Family, configure};
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let family: Family<String> = Family::builder(
        Breaker::builder()
            .name("metrics-settings")
            .threshold(5)
            .recovery(Duration::from_secs(30)),
    )
    .build()
    .unwrap();
    registry::register(&family);
    configure::apply(
        "metrics-settings",
        Breaker::builder()
            .threshold(2)
            .recovery(Duration::from_secs(3)),
    )
    .unwrap();
    metrics::with_local_recorder(&recorder, || {
        let _ = family.get("a").call(|| Ok::<_, ()>(()));
        failfast_runtime::metrics::export();
        let r = read(&s);
        let a = [("breaker", "metrics-settings[a]")];
        assert_eq!(r.gauge("failfast_threshold", &a), 2.0);
        assert_eq!(r.gauge("failfast_recovery_seconds", &a), 3.0);
        assert_eq!(r.gauge("failfast_trial_calls", &a), 1.0);
        assert_eq!(r.gauge("failfast_success_threshold", &a), 1.0);

        // Changed by its name: the gauge follows without an export.
        configure::apply("metrics-settings[a]", Breaker::builder().threshold(9)).unwrap();
        assert_eq!(read(&s).gauge("failfast_threshold", &a), 9.0);
        // And the family's: every member reported before.
        family
            .reconfigure(&Breaker::builder().recovery(Duration::from_secs(8)))
            .unwrap();
        assert_eq!(read(&s).gauge("failfast_recovery_seconds", &a), 8.0);
    });
}

/// A breaker with a time limit shows it as `failfast_timeout_seconds`,
/// written again when it changes at run time; one without has no such
/// series. A family's members show theirs, the family's as changed.
#[test]
fn the_time_limit_is_a_settings_gauge_that_follows_changes() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let (timed, untimed) = ("metrics-timeout", "metrics-timeout-none");
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(
            Breaker::builder()
                .name(timed)
                .timeout(Duration::from_millis(1500))
                .build()
                .unwrap(),
        );
        registry::register(&b);
        let _none = registered(untimed);
        let r = read(&s);
        assert_eq!(
            r.gauge("failfast_timeout_seconds", &[("breaker", timed)]),
            1.5
        );
        assert!(
            r.value("failfast_timeout_seconds", &[("breaker", untimed)])
                .is_none()
        );
        b.reconfigure(&Breaker::builder().timeout(Duration::from_millis(250)))
            .unwrap();
        let r = read(&s);
        assert_eq!(
            r.gauge("failfast_timeout_seconds", &[("breaker", timed)]),
            0.25
        );
    });
    #[cfg(feature = "keyed")]
    {
        let family: failfast_runtime::Family<String> = failfast_runtime::Family::builder(
            Breaker::builder()
                .name("metrics-timeout-family")
                .timeout(Duration::from_secs(2)),
        )
        .build()
        .unwrap();
        registry::register(&family);
        metrics::with_local_recorder(&recorder, || {
            let _ = family.get("a").call(|| Ok::<_, ()>(()));
            failfast_runtime::metrics::export();
            let a = [("breaker", "metrics-timeout-family[a]")];
            assert_eq!(read(&s).gauge("failfast_timeout_seconds", &a), 2.0);
            family
                .reconfigure(&Breaker::builder().timeout(Duration::from_secs(7)))
                .unwrap();
            assert_eq!(read(&s).gauge("failfast_timeout_seconds", &a), 7.0);
        });
    }
}

/// A registered breaker reconfigured under a recorder that came after its
/// registration (an exporter installed late) gets every series there, as
/// at a registration: its state, its calls, its transitions and its new
/// settings.
#[test]
fn a_reconfigured_breaker_gets_every_series_from_a_recorder_that_came_later() {
    let _alone = alone();
    let name = "metrics-late-recorder";
    let b = registered(name);
    b.acquire().unwrap().record(Outcome::Failure);
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        b.reconfigure(&Breaker::builder().threshold(5)).unwrap();
    });
    let r = read(&s);
    assert_eq!(r.gauge("failfast_threshold", &[("breaker", name)]), 5.0);
    assert_eq!(r.gauge("failfast_state", &[("breaker", name)]), 0.0);
    let calls = |outcome| {
        r.counter(
            "failfast_calls_total",
            &[("breaker", name), ("outcome", outcome)],
        )
    };
    assert_eq!((calls("failure"), calls("success")), (1, 0));
    let opened = [("breaker", name), ("from", "closed"), ("to", "open")];
    assert_eq!(r.counter("failfast_transitions_total", &opened), 0);
}

/// A breaker with a slow-call rule shows it as two gauges, the duration
/// past which a call is slow and the share of slow calls that trips it;
/// one without such a rule has neither series.
#[test]
fn a_slow_call_rule_is_two_settings_gauges_and_no_rule_is_none() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let (ruled, unruled) = ("metrics-slow", "metrics-slow-none");
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(
            Breaker::builder()
                .name(ruled)
                .slow(Duration::from_millis(2500))
                .slow_rate(0.25)
                .build()
                .unwrap(),
        );
        registry::register(&b);
        let _none = registered(unruled);
        let r = read(&s);
        let (at, none) = ([("breaker", ruled)], [("breaker", unruled)]);
        assert_eq!(r.gauge("failfast_slow_call_duration_seconds", &at), 2.5);
        assert_eq!(r.gauge("failfast_slow_rate_threshold", &at), 0.25);
        for gauge in [
            "failfast_slow_call_duration_seconds",
            "failfast_slow_rate_threshold",
        ] {
            assert!(r.value(gauge, &none).is_none(), "{gauge}");
        }
    });
}

/// The durations `failfast_call_duration_seconds` holds for `breaker` and
/// `outcome` since the last reading, in seconds.
fn durations(r: &Reading, breaker: &str, outcome: &str) -> Vec<f64> {
    let labels = [("breaker", breaker), ("outcome", outcome)];
    match r.value("failfast_call_duration_seconds", &labels) {
        Some(DebugValue::Histogram(values)) => values.iter().map(|v| v.into_inner()).collect(),
        None => Vec::new(),
        other => panic!("{labels:?}: {other:?}"),
    }
}

/// Each call's duration, on the breaker's clock, lands under the outcome
/// it ended with; refused calls have none.
#[test]
fn call_durations_land_under_their_outcome() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let clock = ManualClock::new();
    let name = "metrics-durations";
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(
            Breaker::builder()
                .name(name)
                .threshold(2)
                .recovery(Duration::from_secs(30))
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        // Finds the recorder: from now on calls are timed.
        registry::register(&b);
        let call = |took: Duration, outcome: Option<Outcome>| {
            let permit = b.acquire().unwrap();
            clock.advance(took);
            match outcome {
                Some(outcome) => permit.record(outcome),
                None => drop(permit),
            }
        };
        call(Duration::from_millis(250), Some(Outcome::Success));
        call(Duration::from_millis(1500), Some(Outcome::Failure));
        call(Duration::from_millis(40), Some(Outcome::Neutral));
        call(Duration::from_millis(8), None);
        let r = read(&s);
        assert_eq!(durations(&r, name, "success"), [0.25]);
        assert_eq!(durations(&r, name, "failure"), [1.5]);
        assert_eq!(durations(&r, name, "neutral"), [0.04, 0.008]);
        assert_eq!(durations(&r, name, "timeout"), [] as [f64; 0]);

        // A second failure opens the breaker; the refusal takes no time.
        call(Duration::from_secs(2), Some(Outcome::Failure));
        assert!(b.acquire().is_err());
        let r = read(&s);
        assert_eq!(durations(&r, name, "failure"), [2.0]);
        assert_eq!(durations(&r, name, "success"), [] as [f64; 0]);
    });
}

/// Under graded shedding, which times a call of each period for itself
/// (the one that finds the period new), every call's duration still lands in the histogram and every
/// outcome in the totals, that call's included.
#[test]
fn with_graded_shedding_every_call_has_its_duration() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let clock = ManualClock::new();
    let name = "metrics-durations-shed";
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(
            Breaker::builder()
                .name(name)
                .shed(2.0)
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        registry::register(&b);
        // One call in 16 on a thread looks for a new period: 32 calls,
        // each in a period of its own, have shedding time two.
        for _ in 0..32 {
            let permit = b.acquire().unwrap();
            clock.advance(Duration::from_millis(250));
            permit.record(Outcome::Success);
            // The next call is in a period of its own.
            clock.advance(Duration::from_secs(1));
        }
        let r = read(&s);
        assert_eq!(durations(&r, name, "success"), [0.25; 32]);
        assert_eq!(b.snapshot().successes, 32);
    });
}

/// A breaker that times its calls anyway (the slow-call rule) reports the
/// same durations; a call cut off at its time limit is a `timeout`.
#[cfg(feature = "tokio")]
#[test]
fn a_timed_out_call_lands_under_timeout() {
    let _alone = alone();
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let clock = ManualClock::new();
    let name = "metrics-durations-timeout";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        let b = Arc::new(
            Breaker::builder()
                .name(name)
                .threshold(10)
                .slow(Duration::from_secs(60))
                .timeout(Duration::from_secs(120))
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        registry::register(&b);
        let hang = async {
            clock.advance(Duration::from_secs(3));
            std::future::pending::<Result<(), u16>>().await
        };
        let result = runtime.block_on(b.call_async(hang));
        assert!(matches!(result, Err(failfast_runtime::Error::Timeout(_))));
        let answer = async {
            clock.advance(Duration::from_millis(125));
            Ok::<(), u16>(())
        };
        runtime.block_on(b.call_async(answer)).unwrap();
        let r = read(&s);
        assert_eq!(durations(&r, name, "timeout"), [3.0]);
        assert_eq!(durations(&r, name, "failure"), [] as [f64; 0]);
        assert_eq!(durations(&r, name, "success"), [0.125]);
    });
}
