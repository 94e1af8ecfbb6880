//! Concurrency limits changed while calls run: a fixed `max_concurrent`
//! (the bulkhead in front of a breaker), its `max_wait`, and an adaptive
//! range, through `reconfigure`, `configure::apply`, a family, the
//! environment, a TOML section and `reload`. Calls run on real threads,
//! or as tasks on tokio's paused clock where time matters. Each test uses
//! its own breakers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use failfast::configure::{self, Origin, from_env};
use failfast::{Breaker, Builder, Reason, Rejected, circuit_breaker, registry};

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ended {
    Refused(Reason),
}

impl From<Rejected> for Ended {
    fn from(rejected: Rejected) -> Self {
        Ended::Refused(rejected.reason())
    }
}

const SECOND: Duration = Duration::from_secs(1);

/// Calls that hold their place until released, one at a time: how many
/// are inside, the most at once, and how many have left (their place
/// given back).
#[derive(Default)]
struct Gate {
    inside: AtomicU32,
    most: AtomicU32,
    left: AtomicU32,
    releases: Mutex<u32>,
    released: Condvar,
}

impl Gate {
    /// Inside a call: counted, then held until a release lets it go (a
    /// call never released fails the test after a minute instead of
    /// stalling it).
    fn hold(&self) {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let give_up = std::time::Instant::now() + Duration::from_secs(60);
        let mut releases = self.releases.lock().unwrap();
        while *releases == 0 {
            let left = give_up.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "held for a minute: never released");
            releases = self.released.wait_timeout(releases, left).unwrap().0;
        }
        *releases -= 1;
        drop(releases);
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }

    /// Calls `call` through the gate: once it has returned (its place given
    /// back) an admitted call counts as left.
    fn through(&self, call: impl FnOnce(&Gate) -> Result<(), Ended>) -> Result<(), Ended> {
        let answer = call(self);
        if answer.is_ok() {
            self.left.fetch_add(1, Ordering::SeqCst);
        }
        answer
    }

    /// How many of `calls` at once get in, on threads of their own; lets
    /// them go once all are in or refused.
    fn admitted(&self, calls: u32, call: impl Fn(&Gate) -> Result<(), Ended> + Sync) -> u32 {
        let refusals = AtomicU32::new(0);
        std::thread::scope(|scope| {
            for _ in 0..calls {
                scope.spawn(|| {
                    if self.through(&call).is_err() {
                        refusals.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            eventually(|| self.inside() + refusals.load(Ordering::SeqCst) == calls);
            let inside = self.inside();
            self.release(inside);
            inside
        })
    }

    /// Lets `n` calls go, and waits until they have left.
    fn release(&self, n: u32) {
        let before = self.left.load(Ordering::SeqCst);
        *self.releases.lock().unwrap() += n;
        self.released.notify_all();
        eventually(|| self.left.load(Ordering::SeqCst) == before + n);
    }

    fn inside(&self) -> u32 {
        self.inside.load(Ordering::SeqCst)
    }
}

/// Waits (yielding) until `done`; a hang fails the test after a minute
/// instead of stalling it.
fn eventually(done: impl Fn() -> bool) {
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < give_up, "never happened");
        std::thread::yield_now();
    }
}

/// The settings in force of breaker `name`, as they serialise.
fn settings_of(name: &str) -> serde_json::Value {
    serde_json::to_value(registry::get(name).unwrap().config()).unwrap()
}

/// Where breaker `name`'s `key` in force came from.
fn origin_of(name: &str, key: &str) -> Origin {
    let origins = registry::get(name).unwrap().snapshot().origins;
    origins.get(key).copied().unwrap_or(Origin::Declared)
}

/// A limit of `n` places, as a patch gives it.
fn limit(n: u32) -> Builder {
    Breaker::builder().adaptive_concurrency(n, n)
}

#[circuit_breaker(max_concurrent = 4, threshold = 1000, name = "limits::lowered")]
fn lowered(gate: &Gate) -> Result<(), Ended> {
    gate.hold();
    Ok(())
}

/// Four calls running when the limit falls to two: they finish, and no call
/// is admitted until fewer than two run; then two at once, never three.
#[test]
fn a_lowered_limit_lets_running_calls_finish_and_admits_none_beyond_it() {
    let gate = Gate::default();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| gate.through(lowered).unwrap());
        }
        eventually(|| gate.inside() == 4);
        configure::apply("limits::lowered", limit(2)).unwrap();
        assert_eq!(settings_of("limits::lowered")["max_concurrent"], 2);
        assert_eq!(
            origin_of("limits::lowered", "max_concurrent"),
            Origin::RunTime
        );
        assert_eq!(gate.inside(), 4, "the running calls keep their places");
        let refused = Err(Ended::Refused(Reason::ConcurrencyLimit));
        for running in [4, 3, 2] {
            assert_eq!(lowered(&gate), refused, "{running} running");
            gate.release(1);
        }
        // One runs: a call is admitted again.
        let admitted = scope.spawn(|| gate.through(lowered));
        eventually(|| gate.inside() == 2);
        assert_eq!(lowered(&gate), refused, "two run: the new limit");
        gate.release(2);
        assert_eq!(admitted.join().unwrap(), Ok(()));
    });
    assert_eq!(gate.inside(), 0);
    // Exactly two places once all drained: threads racing for them get two.
    assert_eq!(gate.most.swap(0, Ordering::SeqCst), 4);
    assert_eq!(gate.admitted(6, lowered), 2);
    assert_eq!(gate.most.load(Ordering::SeqCst), 2);
}

/// Holds its place for `d`.
#[circuit_breaker(
    max_concurrent = 1,
    max_wait = "60s",
    threshold = 1000,
    name = "limits::raised"
)]
async fn raised(d: Duration) -> Result<(), Ended> {
    tokio::time::sleep(d).await;
    Ok(())
}

/// `call(d)` as a task: what it answered, after how long.
fn task<F: std::future::Future<Output = Result<(), Ended>> + Send + 'static>(
    call: impl FnOnce() -> F + Send + 'static,
) -> tokio::task::JoinHandle<(Result<(), Ended>, Duration)> {
    tokio::spawn(async move {
        let started = tokio::time::Instant::now();
        (call().await, started.elapsed())
    })
}

/// One call holding the only place for 10 s and two waiting for it under
/// `max_wait`: a limit raised to three hands them places at once (not when
/// the first leaves), while it still runs.
#[tokio::test(start_paused = true)]
async fn a_raised_limit_admits_the_calls_waiting_at_once() {
    let holder = task(|| raised(10 * SECOND));
    tokio::task::yield_now().await;
    let waiters: Vec<_> = (0..2).map(|_| task(|| raised(SECOND))).collect();
    // Each waits in line now.
    tokio::task::yield_now().await;
    configure::apply("limits::raised", limit(3)).unwrap();
    for waiter in waiters {
        let (answer, took) = waiter.await.unwrap();
        assert_eq!(answer, Ok(()));
        assert_eq!(took, SECOND, "admitted at once, then ran 1 s");
    }
    assert_eq!(holder.await.unwrap(), (Ok(()), 10 * SECOND));
}

/// Holds its place for `d`.
#[circuit_breaker(
    max_concurrent = 1,
    max_wait = "100ms",
    threshold = 1000,
    name = "limits::wait"
)]
async fn waiting(d: Duration) -> Result<(), Ended> {
    tokio::time::sleep(d).await;
    Ok(())
}

/// A changed `max_wait` applies to the calls that start waiting after it:
/// one already waiting keeps its 100 ms.
#[tokio::test(start_paused = true)]
async fn a_changed_max_wait_applies_to_the_calls_that_start_waiting_after_it() {
    let call = |d: Duration| task(move || waiting(d));
    let holder = call(10 * SECOND);
    tokio::task::yield_now().await;
    let before = call(Duration::ZERO);
    tokio::task::yield_now().await;
    configure::apply(
        "limits::wait",
        Breaker::builder().max_wait(Duration::from_millis(300)),
    )
    .unwrap();
    assert_eq!(settings_of("limits::wait")["max_wait"], "300ms");
    let after = call(Duration::ZERO);
    let refused = Err(Ended::Refused(Reason::ConcurrencyLimit));
    assert_eq!(before.await.unwrap(), (refused, Duration::from_millis(100)));
    assert_eq!(after.await.unwrap(), (refused, Duration::from_millis(300)));
    assert_eq!(holder.await.unwrap(), (Ok(()), 10 * SECOND));
}

#[circuit_breaker(max_concurrent = 4, threshold = 5, name = "limits::fixed")]
fn fixed() -> Result<(), Ended> {
    Ok(())
}

#[circuit_breaker(max_concurrent = 2..=8, threshold = 5, name = "limits::adaptive")]
fn adaptive() -> Result<(), Ended> {
    Ok(())
}

#[circuit_breaker(threshold = 5, name = "limits::unlimited")]
fn unlimited() -> Result<(), Ended> {
    Ok(())
}

/// What cannot work is refused whole, naming the key, and changes
/// nothing: a fixed limit does not become a range, a wait needs a limit
/// declared with one, a breaker without a limit takes none.
#[test]
fn a_limit_that_cannot_work_changes_nothing() {
    fixed().unwrap();
    adaptive().unwrap();
    unlimited().unwrap();
    let refused = |name: &str, settings: Builder| {
        let error = configure::apply(name, settings).unwrap_err();
        (error.key().to_owned(), error.to_string())
    };
    // A fixed limit stays one number; the threshold beside it is not
    // applied either.
    let (key, message) = refused(
        "limits::fixed",
        Breaker::builder().threshold(9).adaptive_concurrency(2, 8),
    );
    assert_eq!(key, "max_concurrent", "{message}");
    assert!(message.contains("fixed `max_concurrent = N`"), "{message}");
    assert_eq!(settings_of("limits::fixed")["max_concurrent"], 4);
    assert_eq!(
        registry::get("limits::fixed").unwrap().config().threshold(),
        5
    );
    let (key, _) = refused("limits::fixed", limit(0));
    assert_eq!(key, "max_concurrent");
    // No wait for a breaker declared without one.
    let (key, message) = refused("limits::fixed", Breaker::builder().max_wait(SECOND));
    assert_eq!(key, "max_wait", "{message}");
    assert!(settings_of("limits::fixed").get("max_wait").is_none());
    let (key, message) = refused("limits::adaptive", Breaker::builder().max_wait(SECOND));
    assert_eq!(key, "max_wait", "{message}");
    let (key, message) = refused("limits::unlimited", Breaker::builder().max_wait(SECOND));
    assert_eq!(key, "max_wait", "{message}");
    // No limit for a breaker declared without one.
    let (key, message) = refused("limits::unlimited", limit(4));
    assert_eq!(key, "max_concurrent", "{message}");
    assert!(
        settings_of("limits::unlimited")
            .get("max_concurrent")
            .is_none()
    );
    // An adaptive range stays within the rules of one.
    let (key, _) = refused(
        "limits::adaptive",
        Breaker::builder().adaptive_concurrency(8, 2),
    );
    assert_eq!(key, "max_concurrent");
    assert_eq!(settings_of("limits::adaptive")["max_concurrent"], "2..=8");
}

/// An adaptive range changed at run time: the limit in force is brought
/// within it, the calls running keep their places, and none is admitted
/// while as many as the new limit run; raised, it admits at once.
#[test]
fn an_adaptive_range_changes_while_calls_run() {
    let breaker = Breaker::builder()
        .adaptive_concurrency(2, 4)
        .threshold(100)
        .build()
        .unwrap();
    let limit_now = || breaker.snapshot().concurrency_limit;
    assert_eq!(limit_now(), Some(4));
    let held: Vec<_> = (0..4).map(|_| breaker.acquire().unwrap()).collect();
    breaker
        .reconfigure(&Breaker::builder().adaptive_concurrency(1, 2))
        .unwrap();
    assert_eq!(limit_now(), Some(2));
    assert_eq!(
        breaker.snapshot().origins["max_concurrent"],
        Origin::RunTime
    );
    // Threads asking while four run over a limit of two: all refused.
    let refused = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                if breaker.acquire().is_err() {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(refused.load(Ordering::SeqCst), 4);
    let mut held = held;
    held.truncate(1);
    let second = breaker.acquire().expect("one runs, under two");
    assert!(breaker.acquire().is_err(), "two run");
    // Raised: the limit was at its most, and goes to the new most.
    breaker
        .reconfigure(&Breaker::builder().adaptive_concurrency(2, 6))
        .unwrap();
    assert_eq!(limit_now(), Some(6));
    let more: Vec<_> = (0..4).map(|_| breaker.acquire().unwrap()).collect();
    assert!(breaker.acquire().is_err(), "six run");
    drop((held, second, more));
    // Lowered below the limit in force: brought within the range.
    breaker
        .reconfigure(&Breaker::builder().adaptive_concurrency(1, 3))
        .unwrap();
    assert_eq!(limit_now(), Some(3));
    // Failures cut it to the new range's least, and no further.
    for _ in 0..10 {
        breaker
            .acquire()
            .unwrap()
            .record(failfast::Outcome::Failure);
    }
    assert_eq!(limit_now(), Some(1));
}

/// Waits until released, for `host`.
#[circuit_breaker(key = host, max_concurrent = 2, threshold = 1000, name = "limits::hosts")]
fn host_call(host: &str, gate: &Gate) -> Result<(), Ended> {
    let _ = host;
    gate.hold();
    Ok(())
}

/// A family's limit changes for every key, those seen before and those
/// seen after; one key's own limit for that key alone.
#[test]
fn a_family_s_limit_changes_for_every_key_now_and_later() {
    let gate = Gate::default();
    // How many calls to `host` get in when `calls` try at once.
    let admitted =
        |host: &'static str, calls: u32| gate.admitted(calls, |gate| host_call(host, gate));
    assert_eq!(admitted("a", 4), 2);
    configure::apply("limits::hosts", limit(3)).unwrap();
    assert_eq!(admitted("a", 5), 3, "a key seen before");
    assert_eq!(admitted("b", 5), 3, "a key seen after");
    configure::apply("limits::hosts[c]", limit(1)).unwrap();
    assert_eq!(admitted("c", 3), 1, "its own");
    assert_eq!(admitted("b", 5), 3, "the others keep the family's");
}

#[circuit_breaker(
    max_concurrent = 1,
    max_wait = "10ms",
    threshold = 5,
    name = "limits::env"
)]
fn env_limited(gate: &Gate) -> Result<(), Ended> {
    gate.hold();
    Ok(())
}

/// From the environment: the limit and the wait, read back from the
/// settings and followed by the calls; a value that is neither refused.
#[test]
fn a_limit_from_the_environment_round_trips_through_the_settings() {
    let changed = from_env([
        ("FAILFAST__LIMITS_ENV__MAX_CONCURRENT", "3"),
        ("FAILFAST__LIMITS_ENV__MAX_WAIT", "20ms"),
    ])
    .unwrap();
    assert_eq!(changed, 1);
    let settings = settings_of("limits::env");
    assert_eq!(settings["max_concurrent"], 3);
    assert_eq!(settings["max_wait"], "20ms");
    assert_eq!(origin_of("limits::env", "max_wait"), Origin::Environment);
    // What the settings write reads back as the same limit.
    let written = serde_json::to_string(&registry::get("limits::env").unwrap().config()).unwrap();
    let read: failfast::Config = serde_json::from_str(&written).unwrap();
    assert_eq!(serde_json::to_string(&read).unwrap(), written);
    let refused = from_env([("FAILFAST__LIMITS_ENV__MAX_CONCURRENT", "many")]).unwrap_err();
    assert_eq!(refused[0].key(), "max_concurrent");
    // The bulkhead follows: three run at once, the others are refused
    // after their 20 ms.
    assert_eq!(Gate::default().admitted(5, env_limited), 3);
}

#[circuit_breaker(
    max_concurrent = 1,
    max_wait = "10ms",
    threshold = 5,
    name = "limits::reloaded"
)]
fn reloaded(gate: &Gate) -> Result<(), Ended> {
    gate.hold();
    Ok(())
}

#[derive(serde::Deserialize)]
struct File {
    failfast: BTreeMap<String, Builder>,
}

/// From a file's section, and back to the declared limit and wait when the
/// section goes.
#[test]
fn a_limit_from_a_file_goes_back_to_the_declared_one_when_its_section_goes() {
    let _turn = crate::support::reload_turn();
    let gate = Gate::default();
    // Called first: the bulkhead is attached and told each change.
    assert_eq!(gate.admitted(2, reloaded), 1);
    let file: File = toml::from_str(
        r#"
        [failfast."limits::reloaded"]
        max_concurrent = 2
        max_wait = "250ms"
        "#,
    )
    .unwrap();
    configure::reload(file.failfast).unwrap();
    let settings = settings_of("limits::reloaded");
    assert_eq!(
        (
            settings["max_concurrent"].clone(),
            settings["max_wait"].clone()
        ),
        (2.into(), "250ms".into())
    );
    assert_eq!(
        origin_of("limits::reloaded", "max_concurrent"),
        Origin::File
    );
    assert_eq!(gate.admitted(4, reloaded), 2);
    configure::reload(BTreeMap::new()).unwrap();
    let settings = settings_of("limits::reloaded");
    assert_eq!(
        (
            settings["max_concurrent"].clone(),
            settings["max_wait"].clone()
        ),
        (1.into(), "10ms".into())
    );
    assert_eq!(gate.admitted(3, reloaded), 1);
}
