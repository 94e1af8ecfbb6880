//! failfast breakers (the runtime's own, not fakes) sharing opens and probes
//! through a real `redis-server`, several instances in one process, each with
//! its own fleet task, connection, identity and breaker.

mod support;

use failfast_fleet::{Breakers, Fleet, FleetConfig, Transport};
use failfast_runtime::{Breaker, State};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};
use support::{RedisServer, eventually};

const WAIT: Duration = Duration::from_secs(10);

/// One instance: its fleet and its own breaker named `dep`.
struct Instance {
    fleet: Fleet,
    breaker: Arc<Breaker>,
}

fn breaker(recovery: Duration) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name("dep")
            .threshold(5)
            .recovery(recovery)
            // The limit of the calls `hang` makes.
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    )
}

async fn instance(mut cfg: FleetConfig, recovery: Duration) -> Instance {
    cfg.breakers = Breakers::Explicit;
    let fleet = failfast_fleet::join(cfg).unwrap();
    let breaker = breaker(recovery);
    fleet.attach_breaker(breaker.clone()).unwrap();
    eventually(WAIT, "connected", || fleet.stats().connected).await;
    Instance { fleet, breaker }
}

/// Five failing calls: the breaker trips on its own evidence.
fn trip(b: &Breaker) {
    for _ in 0..5 {
        let _ = b.call(|| Err::<(), _>("dependency down"));
    }
    assert_eq!(b.state(), State::Open);
}

/// Instance `a`, whose vote alone opens the fleet (quorum 1) for 20 s.
async fn lone_voter(url: &str) -> Instance {
    let mut cfg = support::config(url, "a");
    cfg.quorum = 1;
    cfg.open_base = Duration::from_secs(20);
    instance(cfg, Duration::from_secs(30)).await
}

fn rejects(b: &Breaker) -> bool {
    b.call(|| Ok::<(), ()>(()))
        .is_err_and(|e| matches!(e, failfast::Error::Rejected(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_trip_on_one_instance_opens_the_breaker_of_another() {
    let server = RedisServer::start();
    let url = server.url();
    let a = lone_voter(&url).await;
    let b = instance(support::config(&url, "b"), Duration::from_secs(30)).await;
    assert!(!rejects(&b.breaker));

    trip(&a.breaker);
    eventually(WAIT, "b's breaker opened by a's trip", || {
        b.breaker.state() == State::Open
    })
    .await;
    assert!(rejects(&b.breaker), "b refuses calls without having failed");
    let s = b.breaker.snapshot();
    assert_eq!(s.failures, 0);
    assert!(s.retry_after.unwrap() > Duration::from_secs(10), "{s:?}");
    // b's open came from the fleet: it was not voted back (no echo).
    let mut raw = support::raw(&url).await;
    let votes: Vec<String> =
        redis::AsyncCommands::zrange(&mut raw, "failfast:{test/env/dep}:votes", 0, -1)
            .await
            .unwrap();
    assert_eq!(votes.len(), 1, "{votes:?}");
    assert!(votes[0].ends_with("|a"), "{votes:?}");
    let _ = a.fleet;
}

/// Instances `a`, `b` and `c` (quorum 2), their configurations changed by
/// `tweak`.
async fn three(url: &str, tweak: impl Fn(&mut FleetConfig)) -> Vec<Instance> {
    let mut instances = Vec::new();
    for name in ["a", "b", "c"] {
        let mut cfg = support::config(url, name);
        tweak(&mut cfg);
        instances.push(instance(cfg, Duration::from_secs(30)).await);
    }
    instances
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_quorum_two_one_trip_opens_nothing_and_a_second_opens_the_fleet() {
    let server = RedisServer::start();
    let url = server.url();
    let instances = three(&url, |cfg| cfg.open_base = Duration::from_secs(20)).await;
    trip(&instances[0].breaker);
    // A few read-backs' and events' worth of chances to get it wrong.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        instances[2].breaker.state(),
        State::Closed,
        "one vote of two"
    );
    assert_eq!(instances[1].breaker.state(), State::Closed);

    trip(&instances[1].breaker);
    eventually(WAIT, "c opened by the quorum", || {
        instances[2].breaker.state() == State::Open
    })
    .await;
    assert_eq!(instances[2].breaker.snapshot().failures, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_open_expires_on_the_local_clock() {
    let server = RedisServer::start();
    let url = server.url();
    let mut cfg = support::config(&url, "a");
    cfg.quorum = 1;
    cfg.open_base = Duration::from_secs(30); // the store says 30 s
    let a = instance(cfg, Duration::from_secs(60)).await;
    let mut cfg = support::config(&url, "b");
    cfg.max_remote_open = Duration::from_millis(1500); // b accepts 1.5 s at most
    let b = instance(cfg, Duration::from_secs(60)).await;

    trip(&a.breaker);
    eventually(WAIT, "b opened", || b.breaker.state() == State::Open).await;
    // Well before the store's 30 s: WAIT is 10 s.
    eventually(WAIT, "b's remote open ends", || {
        b.breaker.state() == State::HalfOpen
    })
    .await;
    let trial = b.breaker.acquire().expect("b admits a trial");
    assert!(trial.is_trial());
    trial.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.breaker.state(), State::Closed);
    assert_eq!(a.breaker.state(), State::Open, "a's own open is its own");
}

/// Four instances call a dependency that stays sick: every fleet open is
/// probed by exactly one of them, whose failed trial reopens the fleet; once
/// the dependency heals, one successful probe closes every breaker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_per_fleet_per_recovery_then_the_fleet_closes() {
    let server = RedisServer::start();
    let url = server.url();
    let recovery = Duration::from_millis(1500);
    let mut instances = Vec::new();
    for name in ["a", "b", "c", "d"] {
        let mut cfg = support::config(&url, name);
        cfg.quorum = 1;
        cfg.open_base = recovery;
        cfg.open_cap = recovery;
        // Four fleets and a server on a loaded test machine: a slow reply must
        // not send an instance local-only (a different test's subject).
        cfg.command_timeout = Duration::from_secs(1);
        instances.push(Arc::new(instance(cfg, recovery).await));
    }
    let sick = Arc::new(AtomicBool::new(false));
    let trials = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = instances
        .iter()
        .map(|i| {
            let (b, sick, trials, stop) = (
                i.breaker.clone(),
                sick.clone(),
                trials.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(permit) = b.acquire() {
                        if permit.is_trial() {
                            trials.fetch_add(1, Ordering::Relaxed);
                        }
                        if sick.load(Ordering::Relaxed) {
                            permit.record(failfast_runtime::Outcome::Failure);
                        } else {
                            permit.record(failfast_runtime::Outcome::Success);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        })
        .collect();

    sick.store(true, Ordering::Relaxed);
    eventually(WAIT, "every breaker open", || {
        instances.iter().all(|i| i.breaker.state() != State::Closed)
    })
    .await;
    // Each failed probe reopens the fleet under a new generation: wait for
    // the third open, i.e. two recoveries probed.
    let observer = support::transport(&url, "observer");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut generation = 0;
    while generation < 3 {
        assert!(Instant::now() < deadline, "the fleet never reopened twice");
        // A read that times out on a loaded machine is tried again.
        if let Ok(Some(open)) = observer.snapshot("dep").await.map(|s| s.open) {
            generation = open.generation;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let probes = trials.load(Ordering::Relaxed);
    let stats: Vec<_> = instances.iter().map(|i| i.fleet.stats()).collect();
    assert_eq!(
        probes, 2,
        "two recoveries of four instances each: one probe apiece; {stats:?}"
    );

    sick.store(false, Ordering::Relaxed);
    eventually(
        Duration::from_secs(15),
        "every breaker closed again",
        || instances.iter().all(|i| i.breaker.state() == State::Closed),
    )
    .await;
    // The prober's breaker closes before its fenced report reaches the
    // store, so the store may record the close a little after every
    // breaker shows closed.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match observer.snapshot("dep").await {
            Ok(snapshot) if snapshot.closed >= 3 => break,
            last if Instant::now() >= deadline => {
                let stats: Vec<_> = instances.iter().map(|i| i.fleet.stats()).collect();
                panic!("the probe's close was never recorded: {last:?} {stats:?}");
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in callers {
        c.await.unwrap();
    }
}

/// `Breakers::All`: a builder breaker registered before the fleet, one
/// registered after it, and an attribute breaker on its first call all join;
/// `Breakers::Named` takes only the breakers it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_breakers_join_before_and_after_the_fleet_attribute_ones_on_first_call() {
    let server = RedisServer::start();
    let url = server.url();
    let early = Arc::new(
        Breaker::builder()
            .name("reg-early")
            .threshold(5)
            .build()
            .unwrap(),
    );
    failfast_runtime::registry::register(&early);
    let mut cfg = support::config(&url, "x");
    cfg.breakers = Breakers::All;
    let x = failfast_fleet::join(cfg).unwrap();
    let mut cfg = support::config(&url, "n");
    cfg.breakers = Breakers::Named(vec!["reg-late".into()]);
    let named = failfast_fleet::join(cfg).unwrap();
    eventually(WAIT, "connected", || {
        x.stats().connected && named.stats().connected
    })
    .await;

    let late = Arc::new(
        Breaker::builder()
            .name("reg-late")
            .threshold(5)
            .build()
            .unwrap(),
    );
    failfast_runtime::registry::register(&late);
    assert_eq!(attribute_breaker_call(), Ok(()));
    let mut on_x = x.attached();
    on_x.sort();
    for name in ["reg-attr", "reg-early", "reg-late"] {
        assert!(on_x.iter().any(|n| n == name), "{name} not in {on_x:?}");
    }
    assert_eq!(named.attached(), ["reg-late"]);

    // Another instance trips its own breakers of those names (quorum 1):
    // the registered ones here open, attribute breaker included.
    let mut cfg = support::config(&url, "y");
    cfg.quorum = 1;
    cfg.breakers = Breakers::Explicit;
    let y = failfast_fleet::join(cfg).unwrap();
    let theirs: Vec<_> = ["reg-attr", "reg-early", "reg-late"]
        .map(|name| Arc::new(Breaker::builder().name(name).threshold(2).build().unwrap()))
        .into_iter()
        .collect();
    for b in &theirs {
        y.attach_breaker(b.clone()).unwrap();
    }
    eventually(WAIT, "y connected", || y.stats().connected).await;
    for b in &theirs {
        for _ in 0..2 {
            let _ = b.call(|| Err::<(), _>("down"));
        }
    }
    eventually(WAIT, "x's breakers opened by y", || {
        early.state() == State::Open
            && late.state() == State::Open
            && attribute_breaker_call().is_err()
    })
    .await;
    assert_eq!(early.snapshot().failures, 0);
}

#[derive(Debug, PartialEq)]
struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

#[failfast::circuit_breaker(name = "reg-attr", threshold = 2)]
fn attribute_breaker_call() -> Result<(), Down> {
    Ok(())
}

/// The local veto on real breakers: an instance whose calls keep succeeding
/// does not apply a remote open, while an idle one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_whose_calls_succeed_vetoes_a_remote_open() {
    let server = RedisServer::start();
    let url = server.url();
    let a = lone_voter(&url).await;
    let busy = instance(support::config(&url, "busy"), Duration::from_secs(30)).await;
    let idle = instance(support::config(&url, "idle"), Duration::from_secs(30)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let caller = {
        let (b, stop) = (busy.breaker.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let _ = b.call(|| Ok::<(), ()>(()));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    // Long enough for the outcome samples to cover a second of calls.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    trip(&a.breaker);
    eventually(WAIT, "the idle instance applies the open", || {
        idle.breaker.state() == State::Open
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await; // and read-backs
    assert_eq!(busy.breaker.state(), State::Closed, "vetoed");
    stop.store(true, Ordering::Relaxed);
    caller.await.unwrap();
}

/// Calls `b` every 2 ms until `stop`: when each call was made and whether
/// it was admitted.
fn caller(b: Arc<Breaker>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<(Instant, bool)>> {
    tokio::spawn(async move {
        let mut calls = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let admitted = b.call(|| Ok::<(), ()>(())).is_ok();
            calls.push((Instant::now(), admitted));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        calls
    })
}

/// After the fleet's probe succeeds, an instance that did not probe is
/// released at once and admits a rising share of its calls over
/// `close_jitter`: fewer in the ramp's first third than in its last, some
/// refused in between, and all of them once it is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_probe_the_others_are_released_at_once_and_ramp_up() {
    let server = RedisServer::start();
    let url = server.url();
    let recovery = Duration::from_millis(1500);
    let mut a_cfg = support::config(&url, "a");
    a_cfg.quorum = 1;
    a_cfg.open_base = recovery;
    a_cfg.open_cap = recovery;
    a_cfg.probe_lead = Duration::from_secs(1); // a asks for the lease first (b at 300 ms)
    a_cfg.command_timeout = Duration::from_secs(1);
    let mut b_cfg = support::config(&url, "b");
    b_cfg.close_jitter = Duration::from_secs(1);
    b_cfg.command_timeout = Duration::from_secs(1);
    let a = instance(a_cfg, recovery).await;
    let b = instance(b_cfg, recovery).await;
    let stop = Arc::new(AtomicBool::new(false));
    trip(&a.breaker);
    eventually(WAIT, "b opened by the fleet", || {
        b.breaker.state() == State::Open
    })
    .await;
    let tripped = Instant::now();
    let a_calls = caller(a.breaker.clone(), stop.clone());
    let b_calls = caller(b.breaker.clone(), stop.clone());
    // a probes (successfully) at the fleet deadline and closes the fleet.
    let observer = support::transport(&url, "observer");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !matches!(observer.snapshot("dep").await, Ok(s) if s.closed >= 1) {
        assert!(Instant::now() < deadline, "the fleet never closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eventually(WAIT, "b's ramp over", || {
        b.breaker.state() == State::Closed && b.fleet.stats().connected
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    let a_calls = a_calls.await.unwrap();
    let b_calls = b_calls.await.unwrap();
    let a_first = a_calls.iter().find(|c| c.1).expect("a probed").0;
    // b's release: its first admitted call after the trip.
    let released = b_calls
        .iter()
        .find(|c| c.1 && c.0 > tripped)
        .expect("b admitted calls again")
        .0;
    assert!(
        released >= a_first,
        "b waited for a's probe: a's first call admitted {:?} after the trip, b's {:?}",
        a_first - tripped,
        released - tripped
    );
    let share = |from: f64, to: f64| {
        let span = |x: f64| released + Duration::from_secs(1).mul_f64(x);
        let part: Vec<_> = b_calls
            .iter()
            .filter(|c| c.0 >= span(from) && c.0 < span(to))
            .collect();
        assert!(part.len() >= 10, "too few calls to judge: {}", part.len());
        part.iter().filter(|c| c.1).count() as f64 / part.len() as f64
    };
    let (first, last) = (share(0.0, 0.33), share(0.67, 1.0));
    assert!(
        first < 0.6,
        "the ramp starts low: {first:.2} of calls admitted"
    );
    assert!(
        last > first + 0.25,
        "and rises: {first:.2} then {last:.2} of calls admitted"
    );
    assert_eq!(
        share(1.1, 1.4),
        1.0,
        "once it is over, every call is admitted"
    );
}

/// `n` calls through `b` that hang under a 60 s limit (they never end
/// within the test): the fleet can only learn of them in flight.
fn hang(b: &Arc<Breaker>, n: usize) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let b = b.clone();
            tokio::spawn(async move {
                let pending = std::future::pending::<Result<(), ()>>();
                let _ = b.call_async(pending).await;
            })
        })
        .collect()
}

/// With `hung_after`, calls still running past it are a vote: one
/// instance's hung calls alone leave the fleet closed (quorum 2), a second
/// instance's open it, and every breaker opens while the calls still hang,
/// long before their limit, that of an instance whose recent calls
/// succeeded but one of which hangs included (no veto).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_calls_vote_and_a_quorum_of_them_opens_the_fleet_before_any_timeout() {
    let server = RedisServer::start();
    let url = server.url();
    let instances = three(&url, |cfg| {
        cfg.hung_after = Some(Duration::from_millis(200));
        cfg.hung_calls = 3;
        cfg.command_timeout = Duration::from_secs(1);
    })
    .await;
    let observer = support::transport(&url, "observer");
    let votes = || async {
        let mut c = support::raw(&url).await;
        redis::AsyncCommands::zcard::<_, usize>(&mut c, "failfast:{test/env/dep}:votes")
            .await
            .unwrap()
    };
    // Two calls hanging on a: fewer than `hung_calls`, no vote; one on c.
    let mut hung = hang(&instances[0].breaker, 2);
    hung.extend(hang(&instances[2].breaker, 1));
    // Then a third: a votes, alone.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(votes().await, 0, "two hung calls are not enough");
    hung.extend(hang(&instances[0].breaker, 1));
    let deadline = Instant::now() + WAIT;
    while votes().await < 1 {
        assert!(Instant::now() < deadline, "a never voted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let snapshot = observer.snapshot("dep").await.unwrap();
    assert_eq!(
        snapshot.open, None,
        "one instance's hung calls open nothing"
    );
    assert!(instances.iter().all(|i| i.breaker.state() == State::Closed));
    // c's calls succeed, but one hangs: successes with a call hanging are
    // no veto, so c applies the fleet's open too.
    for _ in 0..10 {
        instances[2].breaker.call(|| Ok::<(), ()>(())).unwrap();
    }
    // b's calls hang too: the second vote opens the fleet, everywhere.
    hung.extend(hang(&instances[1].breaker, 3));
    eventually(WAIT, "every breaker opened by the fleet", || {
        instances.iter().all(|i| i.breaker.state() == State::Open)
    })
    .await;
    for i in &instances {
        let s = i.breaker.snapshot();
        assert_eq!(
            (s.failures, s.timeouts),
            (0, 0),
            "opened before any call ended"
        );
    }
    assert_eq!(instances[0].breaker.snapshot().timed_started, 3);
    assert_eq!(instances[0].breaker.snapshot().timed_ended, 0);
    for h in hung {
        h.abort();
    }
}
