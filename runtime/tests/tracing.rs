//! Feature `tracing`: one event per transition, target `failfast`, at WARN
//! into Open, DEBUG into HalfOpen, INFO back to Closed, with the transition's
//! fields; nothing per call; one WARN when a family becomes full of
//! breakers it may not evict. A subscriber that panics stops neither the
//! caller nor the delivery of events.
#![cfg(feature = "tracing")]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, ManualClock, Outcome, State};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One captured event: level, target, fields as text.
type Captured = (Level, String, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Whether `event` is about one of this file's breakers or families (all named
/// `tracing-…`): the tests of other files share the process and may have
/// their transitions delivered on a thread of this file's.
fn ours(event: &Event<'_>) -> Option<BTreeMap<String, String>> {
    let mut fields = Fields(BTreeMap::new());
    event.record(&mut fields);
    let name = fields.0.get("breaker").or_else(|| fields.0.get("family"))?;
    name.starts_with("tracing-").then_some(fields.0)
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let Some(fields) = ours(event) else {
            return;
        };
        self.0
            .lock()
            .unwrap()
            .push((*meta.level(), meta.target().to_owned(), fields));
    }
}

#[test]
fn each_transition_is_one_event_at_its_level_with_its_fields() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let clock = ManualClock::new();
    let recovery = Duration::from_secs(30);
    let b = Breaker::builder()
        .name("tracing-payments")
        .threshold(2)
        .recovery(recovery)
        .clock(clock.clone())
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..100 {
            b.acquire().unwrap().record(Outcome::Success);
        }
        b.acquire().unwrap().record(Outcome::Failure);
        assert!(capture.0.lock().unwrap().is_empty(), "nothing per call");
        b.acquire().unwrap().record(Outcome::Failure);
        for _ in 0..10 {
            assert!(b.acquire().is_err(), "rejections are not logged either");
        }
        clock.advance(recovery);
        b.acquire().unwrap().record(Outcome::Success);
    });
    let events = capture.0.lock().unwrap().clone();
    let summary: Vec<_> = events
        .iter()
        .map(|(level, target, f)| {
            (
                *level,
                target.as_str(),
                f["from"].as_str(),
                f["to"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Level::WARN, "failfast", "closed", "open"),
            (Level::DEBUG, "failfast", "open", "half-open"),
            (Level::INFO, "failfast", "half-open", "closed"),
        ]
    );
    let open = &events[0].2;
    assert_eq!(open["breaker"], "tracing-payments");
    assert_eq!(open["reason"], "threshold_reached");
    assert_eq!(open["consecutive_failures"], "2");
    assert_eq!(open["open_for_secs"], "30.0");
    assert_eq!(open["mode"], "Normal");
    assert_eq!(open["observe_only"], "false");
    assert_eq!(open["seq"], "1");
    assert_eq!(
        open["message"],
        "circuit breaker `tracing-payments` closed → open (threshold_reached)"
    );
    assert_eq!(events[2].2["reason"], "trials_succeeded");
    assert_eq!(events[2].2["trial_successes"], "1");
}

#[test]
fn graded_shedding_says_when_it_starts_and_stops() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("tracing-shed")
        .shed(2.0)
        .clock(clock.clone())
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..10 {
            b.acquire().unwrap().record(Outcome::Failure);
        }
        // Refusals and further failures are not logged one by one.
        for _ in 0..100 {
            if let Ok(permit) = b.acquire() {
                permit.record(Outcome::Failure);
            }
        }
        // The window passes with successes: shedding stops.
        while b.snapshot().shedding > 0.0 {
            clock.advance(Duration::from_millis(100));
            if let Ok(permit) = b.acquire() {
                permit.record(Outcome::Success);
            }
        }
        // A reset while not shedding says nothing of shedding; a reset
        // while shedding says it stopped.
        b.set_mode(Mode::Normal);
        for _ in 0..10 {
            b.acquire().unwrap().record(Outcome::Failure);
        }
        b.set_mode(Mode::Normal);
    });
    let events: Vec<_> = capture
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(.., f)| f["reason"].starts_with("shedding_"))
        .cloned()
        .collect();
    let summary: Vec<_> = events
        .iter()
        .map(|(level, _, f)| (*level, f["message"].as_str()))
        .collect();
    let started = (
        Level::WARN,
        "circuit breaker `tracing-shed` sheds load: refuses 99.8% of calls",
    );
    let stopped = (
        Level::INFO,
        "circuit breaker `tracing-shed` stopped shedding load",
    );
    assert_eq!(summary, [started, stopped, started, stopped]);
    // Ten failures of ten requests: all but the probes, 0.05 × 10 / 400.
    assert_eq!(events[0].2["shedding"], "0.99875");
    assert_eq!(events[1].2["shedding"], "0.0");
}

#[test]
fn an_adaptive_limit_says_when_it_leaves_its_most_places_and_comes_back() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let b = Breaker::builder()
        .name("tracing-limit")
        .adaptive_concurrency(2, 10)
        .threshold(1000)
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        b.acquire().unwrap().record(Outcome::Failure);
        b.acquire().unwrap().record(Outcome::Failure);
        b.set_mode(Mode::Normal);
    });
    let events = capture.0.lock().unwrap().clone();
    let summary: Vec<_> = events
        .iter()
        .map(|(level, _, f)| (*level, f["reason"].as_str(), f["message"].as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                Level::WARN,
                "limit_lowered",
                "circuit breaker `tracing-limit` lowered its concurrency limit to 9"
            ),
            (
                Level::INFO,
                "limit_restored",
                "circuit breaker `tracing-limit` concurrency limit back at 10"
            ),
        ]
    );
    // A reset of a closed breaker is no transition: only the limit says so.
    assert_eq!(events[0].2["concurrency_limit"], "9");
    assert_eq!(events[1].2["concurrency_limit"], "10");
    assert_eq!(events[1].2["seq"], "2");
}

#[test]
fn an_observe_only_breaker_says_calls_still_pass() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let b = Breaker::builder()
        .name("tracing-shadow")
        .threshold(1)
        .build()
        .unwrap();
    b.set_mode(Mode::ObserveOnly);
    tracing::subscriber::with_default(subscriber, || {
        b.acquire().unwrap().record(Outcome::Failure);
    });
    let events = capture.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    let (level, _, open) = &events[0];
    assert_eq!(*level, Level::WARN);
    assert_eq!(open["mode"], "ObserveOnly");
    assert_eq!(open["observe_only"], "true");
    assert_eq!(
        open["message"],
        "circuit breaker `tracing-shadow` closed → open (threshold_reached); observe only, calls still pass"
    );
}

/// Panics on every event of target `failfast` about `tracing-panics`, having
/// counted it.
struct Panicking(Arc<AtomicU64>);

impl<S: Subscriber> Layer<S> for Panicking {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let panics = ours(event).is_some_and(|f| f["breaker"] == "tracing-panics");
        if event.metadata().target() == "failfast" && panics {
            self.0.fetch_add(1, Ordering::Relaxed);
            panic!("a subscriber's bug");
        }
    }
}

/// The subscriber panics on every transition: every call still returns to
/// its caller as usual, and the listener gets every transition, in order.
#[test]
fn a_panicking_subscriber_stops_neither_the_caller_nor_the_listeners() {
    let emitted = Arc::new(AtomicU64::new(0));
    let subscriber = tracing_subscriber::registry().with(Panicking(Arc::clone(&emitted)));
    let clock = ManualClock::new();
    let recovery = Duration::from_secs(30);
    let b = Breaker::builder()
        .name("tracing-panics")
        .threshold(1)
        .recovery(recovery)
        .clock(clock.clone())
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _s = failfast_runtime::events::subscribe(&b, move |t| {
        sink.lock().unwrap().push((t.from, t.to, t.seq))
    });
    tracing::subscriber::with_default(subscriber, || {
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
    assert_eq!(
        emitted.load(Ordering::Relaxed),
        30,
        "the subscriber got every one too"
    );
}

/// A family full of breakers it may not evict says so once, at WARN, when
/// it becomes full; not again while it stays full, though each new key
/// after the pause looks for room again.
#[cfg(feature = "keyed")]
#[test]
fn a_full_family_says_so_once() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let clock = ManualClock::new();
    let family: failfast_runtime::Family<u32> = failfast_runtime::Family::builder(
        Breaker::builder()
            .name("tracing-full")
            .max_keys(1)
            .clock(clock.clone()),
    )
    .build()
    .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        // Under manual control: not evictable.
        family.get(&1_u32).set_mode(Mode::ForcedOpen);
        for key in 2..5_u32 {
            assert_eq!(family.get(&key).name(), "tracing-full[*]");
            clock.advance(Duration::from_secs(2));
        }
    });
    let full: Vec<_> = capture
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, fields)| fields.contains_key("family"))
        .cloned()
        .collect();
    assert_eq!(full.len(), 1, "{full:?}");
    let (level, target, fields) = &full[0];
    assert_eq!((*level, target.as_str()), (Level::WARN, "failfast"));
    assert_eq!(
        (fields["family"].as_str(), fields["max_keys"].as_str()),
        ("tracing-full", "1")
    );
}
