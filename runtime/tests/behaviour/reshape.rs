//! A reconfiguration that changes the window's shape: accepted, it starts a
//! fresh, empty window of the new shape, which decides the next trip; the
//! running totals go on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ManualClock, State};

/// A breaker tripping at half of its window failed, once the window holds
/// `min_calls`, on `clock`.
fn rate_breaker(clock: &ManualClock, min_calls: u32, window: fn(Builder) -> Builder) -> Breaker {
    window(Breaker::builder().failure_rate(0.5).min_calls(min_calls))
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn fail(b: &Breaker) {
    let _ = b.call(|| Err::<(), _>("down"));
}

fn pass(b: &Breaker) {
    let _ = b.call(|| Ok::<_, &str>(()));
}

/// Calls and failures in `b`'s window.
fn window(b: &Breaker) -> (u64, u64) {
    let s = b.snapshot();
    (s.window_calls, s.window_failures)
}

/// Applies `patch`, a new shape: the window is empty after it.
fn reshape(b: &Breaker, patch: &Builder) {
    b.reconfigure(patch).unwrap();
    assert_eq!(window(b), (0, 0), "a fresh window");
}

/// Calls `b` once per letter (`F` a failure, `S` a success), checking it is
/// still closed after each, but the last when `trips`.
fn feed(b: &Breaker, calls: &str, trips: bool) {
    for (i, call) in calls.chars().enumerate() {
        match call {
            'F' => fail(b),
            _ => pass(b),
        }
        let last = i + 1 == calls.len();
        let expected = if trips && last {
            State::Open
        } else {
            State::Closed
        };
        assert_eq!(b.state(), expected, "after call {} of {calls}", i + 1);
    }
}

#[test]
fn a_new_window_size_on_a_breaker_holding_failures_starts_empty_and_decides_the_next_trip() {
    let b = rate_breaker(&ManualClock::new(), 20, |b| b.window_calls(100));
    // 10 failures of 19 calls: one more failure would trip the old window.
    feed(&b, "FFFFFFFFFFSSSSSSSSS", false);
    assert_eq!(window(&b), (19, 10));

    reshape(&b, &Breaker::builder().window_calls(4).min_calls(4));
    let s = b.snapshot();
    assert_eq!((s.failures, s.successes), (10, 9), "the totals go on");

    // Below `min_calls` of the new window, then 1 failure in the last 4
    // calls, then 2 in the last 4 of a window sliding at its new size (a
    // window of 100 would hold 3 of 7, and the old one would have tripped
    // at the first call).
    feed(&b, "FSSSSFF", true);
    assert_eq!(window(&b), (4, 2));
}

#[test]
fn a_count_window_switched_to_a_time_window_counts_by_time_from_empty() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 4, |b| b.window_calls(10));
    feed(&b, "FFF", false);
    reshape(&b, &Breaker::builder().window_time(Duration::from_secs(10)));
    // By time: these three leave the window 10 s later.
    feed(&b, "FFS", false);
    clock.advance(Duration::from_secs(11));
    assert_eq!(b.snapshot().window_calls, 0, "aged out");
    assert_eq!(b.snapshot().failures, 5);
    // (The count window of 10 would have tripped at the 4th failure above.)
    // The time window holds 1 failure of 4 calls, then 2 of 5, then 3 of 6.
    feed(&b, "SSSFFF", true);
    assert_eq!(window(&b), (6, 3));
}

#[test]
fn a_shorter_time_window_starts_empty_and_forgets_sooner() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 2, |b| b.window_time(Duration::from_secs(60)));
    feed(&b, "F", false);
    reshape(&b, &Breaker::builder().window_time(Duration::from_secs(10)));
    // One call in the new window: below `min_calls` (the old window would
    // now hold 2 failures of 2 and trip).
    feed(&b, "F", false);
    clock.advance(Duration::from_secs(11));
    // Gone from a window of 10 s; a window of 60 s would still hold it.
    assert_eq!(b.snapshot().window_calls, 0);
    feed(&b, "SSFF", true);
}

#[test]
fn the_same_shape_again_keeps_the_window() {
    let b = rate_breaker(&ManualClock::new(), 4, |b| b.window_calls(10));
    feed(&b, "FFS", false);
    b.reconfigure(&Breaker::builder().window_calls(10).failure_rate(0.6))
        .unwrap();
    assert_eq!(window(&b), (3, 2));
}

#[test]
fn a_patch_with_a_new_shape_and_a_value_that_cannot_work_is_refused_whole() {
    let b = rate_breaker(&ManualClock::new(), 10, |b| {
        b.window_calls(100).name("reshape::refused")
    });
    feed(&b, "FFS", false);
    let before = format!("{:?}", b.config());
    let refused = |patch: Builder| {
        let error = b.reconfigure(&patch).unwrap_err();
        assert_eq!(format!("{:?}", b.config()), before, "{error}");
        assert_eq!(window(&b), (3, 2), "{error}");
        error
    };
    let e = refused(Breaker::builder().window_calls(10).recovery(Duration::ZERO));
    assert_eq!(e.key(), "recovery");
    let e = refused(Breaker::builder().window_time(Duration::ZERO).threshold(3));
    assert_eq!(e.key(), "threshold", "no consecutive rule here: {e}");
    let e = refused(Breaker::builder().window_time(Duration::ZERO));
    assert_eq!(e.key(), "window");
    let e = refused(Breaker::builder().window_calls(0));
    assert_eq!(e.key(), "window");
    // Fewer calls than `min_calls`: could never trip.
    let e = refused(Breaker::builder().window_calls(5));
    assert_eq!(
        e.to_string(),
        "breaker `reshape::refused`: `window` of 5 calls holds fewer than `min_calls` (10), \
         so the rate rule could never trip; set `min_calls` to at most 5"
    );
    let e = refused(Breaker::builder().window_calls(5).min_calls(6));
    assert_eq!(e.key(), "min_calls");
    // The window still decides as before: 5 failures of 10 calls.
    feed(&b, "SSSSFFF", true);
}

#[test]
fn a_window_for_a_breaker_without_a_rate_rule_is_refused() {
    let b = Breaker::builder().threshold(3).build().unwrap();
    let e = b
        .reconfigure(&Breaker::builder().window_calls(10))
        .unwrap_err();
    assert_eq!(e.key(), "window");
    feed(&b, "FFF", true);
}

/// Two threads call a rate breaker while a third changes its window's
/// shape again and again: no panic, the calls are all counted, and once the
/// changes stop the latest shape trips exactly when it should.
#[test]
fn two_threads_calling_while_a_third_reshapes_the_window() {
    let b = Breaker::builder()
        .failure_rate(0.9)
        .window_calls(100)
        .min_calls(10)
        .build()
        .unwrap();
    let shapes = [
        Breaker::builder().window_calls(50),
        Breaker::builder().window_time(Duration::from_secs(1)),
        Breaker::builder().window_calls(10),
        Breaker::builder().window_time(Duration::from_secs(60)),
    ];
    let stop = AtomicBool::new(false);
    let calls = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (b, stop, calls) = (&b, &stop, &calls);
            s.spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    // 1 in 16 fails: far below the rate.
                    if i % 16 == 0 {
                        fail(b);
                    } else {
                        pass(b);
                    }
                    let _ = b.snapshot();
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let mut changes = 0;
        while changes < 2000 || calls.load(Ordering::Relaxed) < 20_000 {
            b.reconfigure(&shapes[changes % shapes.len()]).unwrap();
            changes += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(b.state(), State::Closed);
    let s = b.snapshot();
    assert_eq!(s.successes + s.failures, calls.load(Ordering::Relaxed));
    assert!(s.window_failures <= s.window_calls, "{s:?}");
    // A new shape, then 10 failures on one thread: the 10th trips.
    reshape(&b, &Breaker::builder().window_calls(20));
    feed(&b, "FFFFFFFFFF", true);
}

/// `WINDOW` in the environment: a number of calls or a duration; anything
/// else is refused and nothing applies.
#[test]
fn a_window_from_the_environment_reshapes_by_name() {
    use failfast_runtime::configure::from_env;
    use failfast_runtime::registry;
    let b = std::sync::Arc::new(
        Breaker::builder()
            .name("reshape::env")
            .failure_rate(0.5)
            .window_calls(100)
            .min_calls(4)
            .build()
            .unwrap(),
    );
    registry::register(&b);
    let var = |value: &str| vec![("FAILFAST__RESHAPE_ENV__WINDOW".to_owned(), value.to_owned())];
    feed(&b, "FF", false);
    let errors = from_env(var("ten")).unwrap_err();
    assert_eq!(errors[0].key(), "window");
    assert_eq!(b.snapshot().window_failures, 2, "nothing applied");
    assert_eq!(from_env(var("4")).unwrap(), 1);
    assert_eq!(b.snapshot().window_failures, 0);
    feed(&b, "SSSSFF", true);
    b.set_mode(failfast_runtime::Mode::Normal);
    assert_eq!(from_env(var("1m")).unwrap(), 1);
    assert!(format!("{:?}", b.config()).contains("Time(60000000000)"));
}

/// In a configuration file's section, `window` is written as in the
/// attribute.
#[cfg(feature = "serde")]
#[test]
fn a_window_in_a_file_section_is_calls_or_a_duration() {
    let calls: Builder = serde_json::from_str(r#"{ "window": 4, "min_calls": 4 }"#).unwrap();
    let same = |a: &Builder, b: Builder| assert_eq!(format!("{a:?}"), format!("{b:?}"));
    same(&calls, Breaker::builder().window_calls(4).min_calls(4));
    let time: Builder = serde_json::from_str(r#"{ "window": "1m 30s" }"#).unwrap();
    same(
        &time,
        Breaker::builder().window_time(Duration::from_secs(90)),
    );
    assert!(serde_json::from_str::<Builder>(r#"{ "window": "often" }"#).is_err());
}
