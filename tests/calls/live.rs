//! The limits of the calls in flight changed while calls run: a time limit
//! (`timeout`) through `reconfigure`, `configure::apply`, a family, the
//! environment, a TOML section and `reload`. Time is tokio's paused clock.
//! Each test uses its own breakers.

use std::collections::BTreeMap;
use std::time::Duration;

use failfast::configure::{self, from_env};
use failfast::{Breaker, Builder, Rejected, TimedOut, circuit_breaker, registry};
use tokio::time::Instant;

/// How a call ended: its body's answer, or the time limit it was cut at.
#[derive(Debug, PartialEq)]
enum Ended {
    TimedOut(Duration),
    Refused,
}

impl From<TimedOut> for Ended {
    fn from(timed_out: TimedOut) -> Self {
        Ended::TimedOut(timed_out.limit())
    }
}

impl From<Rejected> for Ended {
    fn from(_: Rejected) -> Self {
        Ended::Refused
    }
}

const SECOND: Duration = Duration::from_secs(1);

/// The `timeout` in force, as the breaker's settings write it.
fn timeout_of(name: &str) -> Option<String> {
    let config = serde_json::to_value(registry::get(name).unwrap().config()).unwrap();
    config["timeout"].as_str().map(str::to_owned)
}

/// Runs for `d`, then answers `Ok`.
#[circuit_breaker(timeout = "10s", threshold = 1000, name = "live::timeout")]
async fn work(d: Duration) -> Result<(), Ended> {
    tokio::time::sleep(d).await;
    Ok(())
}

/// `calls` tasks calling `work(d)` at once, each with the time it started
/// and what its call answered after how long.
fn start(calls: usize, d: Duration) -> Vec<tokio::task::JoinHandle<(Result<(), Ended>, Duration)>> {
    (0..calls)
        .map(|_| {
            tokio::spawn(async move {
                let started = Instant::now();
                let answer = work(d).await;
                (answer, started.elapsed())
            })
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_shorter_timeout_applies_to_the_calls_that_start_after_it() {
    // Eight calls running under the declared 10 s limit, each taking 8 s.
    let before = start(8, 8 * SECOND);
    tokio::time::sleep(SECOND).await;
    configure::apply("live::timeout", Breaker::builder().timeout(5 * SECOND)).unwrap();
    assert_eq!(timeout_of("live::timeout").as_deref(), Some("5s"));
    // Eight more, started after the change, each taking as long.
    let after = start(8, 8 * SECOND);
    for call in before {
        assert_eq!(call.await.unwrap(), (Ok(()), 8 * SECOND), "kept its 10 s");
    }
    for call in after {
        let (answer, took) = call.await.unwrap();
        assert_eq!(answer, Err(Ended::TimedOut(5 * SECOND)));
        assert_eq!(took, 5 * SECOND, "cut at the new limit");
    }
    // Longer again: a call of 8 s finishes.
    registry::get("live::timeout")
        .unwrap()
        .reconfigure(&Breaker::builder().timeout(9 * SECOND))
        .unwrap();
    let longer = start(4, 8 * SECOND);
    for call in longer {
        assert_eq!(call.await.unwrap(), (Ok(()), 8 * SECOND));
    }
}

#[circuit_breaker(timeout = "2s", slow = "1s", threshold = 5, name = "live::slow")]
async fn timed_slow() -> Result<(), Ended> {
    Ok(())
}

#[circuit_breaker(timeout = "5s", shed = 2.0, name = "live::shed")]
async fn timed_shed() -> Result<(), Ended> {
    Ok(())
}

#[circuit_breaker(threshold = 5, name = "live::untimed")]
async fn untimed() -> Result<(), Ended> {
    Ok(())
}

#[tokio::test]
async fn a_timeout_that_cannot_work_with_the_settings_beside_it_changes_nothing() {
    timed_slow().await.unwrap();
    timed_shed().await.unwrap();
    untimed().await.unwrap();
    let refused = |name: &str, settings: Builder| {
        let error = configure::apply(name, settings).unwrap_err();
        (error.key().to_owned(), error.to_string())
    };
    // `slow` must stay shorter than the limit; the threshold in the same
    // patch is not applied either.
    let (key, message) = refused(
        "live::slow",
        Breaker::builder().threshold(9).timeout(SECOND),
    );
    assert_eq!(key, "slow", "{message}");
    assert_eq!(registry::get("live::slow").unwrap().config().threshold(), 5);
    assert_eq!(timeout_of("live::slow").as_deref(), Some("2s"));
    // Graded shedding's window (10 s) must hold the limit.
    let (key, message) = refused("live::shed", Breaker::builder().timeout(11 * SECOND));
    assert_eq!(key, "shed_window", "{message}");
    assert_eq!(timeout_of("live::shed").as_deref(), Some("5s"));
    configure::apply(
        "live::shed",
        Breaker::builder()
            .timeout(11 * SECOND)
            .shed_window(30 * SECOND),
    )
    .unwrap();
    assert_eq!(timeout_of("live::shed").as_deref(), Some("11s"));
    // No limit of zero, and none for a breaker declared without one.
    let (key, _) = refused("live::slow", Breaker::builder().timeout(Duration::ZERO));
    assert_eq!(key, "timeout");
    let (key, message) = refused("live::untimed", Breaker::builder().timeout(SECOND));
    assert_eq!(key, "timeout");
    assert!(message.contains("time limit"), "{message}");
    assert_eq!(timeout_of("live::untimed"), None);
}

/// Waits forever, for `host`.
#[circuit_breaker(key = host, timeout = "10s", threshold = 1000, name = "live::hosts")]
async fn host_call(host: &str) -> Result<(), Ended> {
    let _ = host;
    std::future::pending::<()>().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_family_s_timeout_changes_for_every_key_now_and_later() {
    let call = |host: &'static str| {
        tokio::spawn(async move {
            let started = Instant::now();
            (host_call(host).await, started.elapsed())
        })
    };
    assert_eq!(
        call("a").await.unwrap(),
        (Err(Ended::TimedOut(10 * SECOND)), 10 * SECOND)
    );
    configure::apply("live::hosts", Breaker::builder().timeout(3 * SECOND)).unwrap();
    // The key seen before, and one seen for the first time.
    let (a, b) = (call("a"), call("b"));
    for task in [a, b] {
        assert_eq!(
            task.await.unwrap(),
            (Err(Ended::TimedOut(3 * SECOND)), 3 * SECOND)
        );
    }
    // One key's own.
    configure::apply("live::hosts[c]", Breaker::builder().timeout(SECOND)).unwrap();
    let (b, c) = (call("b"), call("c"));
    assert_eq!(b.await.unwrap().0, Err(Ended::TimedOut(3 * SECOND)));
    assert_eq!(c.await.unwrap().0, Err(Ended::TimedOut(SECOND)));
}

#[circuit_breaker(timeout = "10s", name = "live::env")]
async fn env_timed() -> Result<(), Ended> {
    Ok(())
}

#[tokio::test]
async fn a_timeout_from_the_environment_round_trips_through_the_settings() {
    let changed = from_env([("FAILFAST__LIVE_ENV__TIMEOUT", "1m 30s")]).unwrap();
    assert_eq!(changed, 1);
    assert_eq!(timeout_of("live::env").as_deref(), Some("1m 30s"));
    // What the settings write reads back as the same limit.
    let written = serde_json::to_string(&registry::get("live::env").unwrap().config()).unwrap();
    let read: failfast::Config = serde_json::from_str(&written).unwrap();
    assert_eq!(serde_json::to_string(&read).unwrap(), written);
    let refused = from_env([("FAILFAST__LIVE_ENV__TIMEOUT", "soon")]).unwrap_err();
    assert_eq!(refused[0].key(), "timeout");
    assert_eq!(timeout_of("live::env").as_deref(), Some("1m 30s"));
    env_timed().await.unwrap();
}

#[circuit_breaker(timeout = "10s", threshold = 5, name = "live::reloaded")]
async fn reloaded() -> Result<(), Ended> {
    Ok(())
}

#[derive(serde::Deserialize)]
struct File {
    failfast: BTreeMap<String, Builder>,
}

#[tokio::test]
async fn a_timeout_from_a_file_goes_back_to_the_declared_one_when_its_section_goes() {
    let file: File = toml::from_str(
        r#"
        [failfast."live::reloaded"]
        timeout = "250ms"
        threshold = 3
        "#,
    )
    .unwrap();
    {
        let _turn = crate::support::reload_turn();
        configure::reload(file.failfast).unwrap();
        assert_eq!(timeout_of("live::reloaded").as_deref(), Some("250ms"));
        configure::reload(BTreeMap::new()).unwrap();
    }
    assert_eq!(timeout_of("live::reloaded").as_deref(), Some("10s"));
    assert_eq!(
        registry::get("live::reloaded")
            .unwrap()
            .config()
            .threshold(),
        5
    );
    reloaded().await.unwrap();
}
