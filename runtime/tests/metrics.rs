//! Feature `metrics`: every series of a breaker exists from its registration,
//! and calls, states and transitions reach the recorder.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use failfast_runtime::{registry, Breaker, Outcome};
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

const OUTCOMES: [&str; 7] = [
    "success",
    "failure",
    "neutral",
    "slow",
    "rejected",
    "timeout",
    "would_reject",
];

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

        b.reset();
        let r = read(&s);
        let labels = [("breaker", name), ("from", "open"), ("to", "closed")];
        assert_eq!(r.counter("failfast_transitions_total", &labels), 1);
        assert_eq!(r.counter("failfast_calls_total", &breaker("rejected")), 4);
    });
}

#[test]
fn an_observe_only_breaker_reports_the_calls_it_would_have_rejected() {
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let name = "metrics-shadow";
    let breaker = |outcome: &'static str| [("breaker", name), ("outcome", outcome)];
    metrics::with_local_recorder(&recorder, || {
        let b = registered(name);
        b.disable();
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
