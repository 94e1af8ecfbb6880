//! Feature `metrics`, in a process where no recorder is ever installed
//! before the end: calls are not timed for `failfast_call_duration_seconds`
//! (a permit holds no clock reading), and nothing is recorded until a
//! registration or an export finds a recorder.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, Outcome, registry};
use metrics_util::debugging::DebuggingRecorder;

/// The `started` word a permit's `Debug` shows.
fn started(permit: &failfast_runtime::Permit<'_>) -> u64 {
    let shown = format!("{permit:?}");
    let (_, rest) = shown.rsplit_once("started: ").expect(&shown);
    rest.trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .expect(&shown)
}

#[test]
fn without_a_recorder_calls_are_not_timed_and_nothing_is_recorded() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(1_000));
    let b = Arc::new(
        Breaker::builder()
            .name("unrecorded")
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    registry::register(&b);
    failfast_runtime::metrics::export();
    let permit = b.acquire().unwrap();
    // The generation counter, not the clock (1,000 s, marked `CLOCKED`).
    assert!(started(&permit) < 1 << 20, "{permit:?}");
    permit.record(Outcome::Success);

    // A recorder in use, but not found yet: calls go untimed.
    let recorder = DebuggingRecorder::new();
    let s = recorder.snapshotter();
    let histograms = || {
        s.snapshot()
            .into_vec()
            .into_iter()
            .filter(|(key, ..)| key.key().name() == "failfast_call_duration_seconds")
            .count()
    };
    // A breaker that times its calls anyway (the slow-call rule) records
    // none either until the recorder is found.
    let timed = Arc::new(
        Breaker::builder()
            .name("unrecorded-timed")
            .slow(Duration::from_secs(60))
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    registry::register(&timed);
    metrics::with_local_recorder(&recorder, || {
        b.call(|| Ok::<_, ()>(())).unwrap();
        timed.call(|| Ok::<_, ()>(())).unwrap();
        assert_eq!(histograms(), 0);
        // Found by an export: the next call is timed and recorded.
        failfast_runtime::metrics::export();
        let permit = b.acquire().unwrap();
        assert!(started(&permit) >= 1 << 62, "{permit:?}");
        clock.advance(Duration::from_millis(3));
        permit.record(Outcome::Success);
        assert_eq!(histograms(), 1);
    });
}
