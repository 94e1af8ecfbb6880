//! The store dies, freezes, slows down, drops packets or resets connections: the
//! fleet runs local-only without blocking anyone, and shares again afterwards.

mod support;

use failfast::State;
use failfast::integration::Cause;
use failfast_fleet::{Fleet, FleetConfig, Transport, TransportError, join};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{FakeMember, Mode, Proxy, RedisServer, eventually};

const WAIT: Duration = Duration::from_secs(15);

async fn member_of(cfg: FleetConfig) -> (Fleet, Arc<FakeMember>) {
    support::member_of(cfg, WAIT).await
}

fn quorum_one(url: &str, instance: &str) -> FleetConfig {
    let mut cfg = support::config(url, instance);
    cfg.quorum = 1;
    cfg
}

/// Worst time `notify` took over `n` calls (it must never wait for the store).
fn worst_notify(member: &FakeMember, n: usize) -> Duration {
    let mut worst = Duration::ZERO;
    for i in 0..n {
        let to = if i % 2 == 0 {
            State::HalfOpen
        } else {
            State::Open
        };
        let started = Instant::now();
        member.transition(to, Cause::Manual);
        worst = worst.max(started.elapsed());
    }
    worst
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_restart_runs_local_only_then_resyncs_and_revotes() {
    let mut server = RedisServer::start();
    let url = server.url();
    let (a_fleet, a) = member_of(quorum_one(&url, "a")).await;
    let (c_fleet, c) = member_of(support::config(&url, "c")).await;

    server.kill9();
    a.transition(State::Open, Cause::Calls);
    eventually(WAIT, "a notices the store is gone", || {
        !a_fleet.stats().connected
    })
    .await;
    eventually(WAIT, "c notices the store is gone", || {
        !c_fleet.stats().connected
    })
    .await;
    let worst = worst_notify(&c, 1000);
    println!("store down: worst notify {worst:?}");
    assert_eq!(c.open_count(), 0, "a store that is down opens nothing");
    let resyncs = (a_fleet.stats().resyncs, c_fleet.stats().resyncs);

    server.restart(); // empty: the votes are gone with the old process
    eventually(WAIT, "a resynced", || a_fleet.stats().resyncs > resyncs.0).await;
    eventually(WAIT, "c resynced", || c_fleet.stats().resyncs > resyncs.1).await;
    // a is still open on local evidence: it votes again, and c learns it.
    eventually(WAIT, "c learns the open a voted again", || {
        c.open_count() >= 1
    })
    .await;
    println!("a: {:?}\nc: {:?}", a_fleet.stats(), c_fleet.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_store_times_out_and_nothing_waits_for_it() {
    let server = RedisServer::start();
    let url = server.url();
    let t = support::transport(&url, "t");
    t.ping().await.unwrap();
    let (fleet, member) = member_of(quorum_one(&url, "a")).await;

    server.freeze();
    // Every operation ends with a timeout while the server is still stopped: if one
    // waited for an answer it would never return, and the test would hang here.
    let mut worst = Duration::ZERO;
    for round in 0..3 {
        let started = Instant::now();
        assert_eq!(
            t.snapshot("dep").await,
            Err(TransportError::Timeout),
            "round {round}"
        );
        assert_eq!(t.vote("dep", 7).await, Err(TransportError::Timeout));
        assert_eq!(
            t.acquire_probe("dep", 1).await,
            Err(TransportError::Timeout)
        );
        assert_eq!(
            t.report_probe("dep", 1, true).await,
            Err(TransportError::Timeout)
        );
        worst = worst.max(started.elapsed() / 4);
    }
    member.transition(State::Open, Cause::Calls);
    eventually(WAIT, "the task goes local-only", || {
        !fleet.stats().connected
    })
    .await;
    let notify = worst_notify(&member, 1000);
    println!(
        "frozen store: worst op {worst:?} (timeout 100 ms), slowest task op {} µs, worst notify {notify:?}",
        fleet.stats().slowest_op_micros
    );
    member.transition(State::Open, Cause::Calls);
    server.thaw();

    eventually(WAIT, "reconnected", || fleet.stats().connected).await;
    assert!(t.snapshot("dep").await.is_ok());
    // Sharing resumed: the open voted during the freeze is in the store now.
    let deadline = Instant::now() + WAIT;
    while t.snapshot("dep").await.unwrap().open.is_none() {
        assert!(
            Instant::now() < deadline,
            "the vote made while frozen never reached the store"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_blackhole_and_resets_through_a_proxy() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    let t = support::transport(&proxy.url(), "t");
    t.resume().await.unwrap();

    proxy.set(Mode::Delay(Duration::from_millis(10)));
    assert!(
        t.snapshot("dep").await.is_ok(),
        "10 ms each way is within the timeout"
    );
    proxy.set(Mode::Delay(Duration::from_millis(400)));
    assert_eq!(t.snapshot("dep").await, Err(TransportError::Timeout));
    proxy.set(Mode::Blackhole);
    assert_eq!(t.vote("dep", 7).await, Err(TransportError::Timeout));
    proxy.set(Mode::Pass);
    tokio::time::sleep(Duration::from_millis(500)).await; // let the delayed replies drain
    assert!(
        t.snapshot("dep").await.is_ok(),
        "works again once the path heals"
    );

    // A fleet behind the proxy loses its connection to resets and comes back.
    let (fleet, member) = member_of(quorum_one(&proxy.url(), "a")).await;
    let observer = FakeMember::new("dep");
    let direct = join(support::config(&server.url(), "o")).unwrap();
    direct.attach(observer.clone()).unwrap();
    eventually(WAIT, "observer connected", || direct.stats().connected).await;
    let before = fleet.stats().resyncs;
    proxy.set(Mode::Blackhole);
    member.transition(State::Open, Cause::Calls);
    eventually(WAIT, "local-only behind the blackhole", || {
        !fleet.stats().connected
    })
    .await;
    proxy.reset_all();
    proxy.set(Mode::Pass);
    eventually(WAIT, "resynced after the reset", || {
        fleet.stats().resyncs > before
    })
    .await;
    eventually(
        WAIT,
        "the open voted during the partition is shared",
        || observer.open_count() >= 1,
    )
    .await;
    println!("behind proxy: {:?}", fleet.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_behind_a_slow_link_connects_and_shares() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    // 25 ms each way: every command fits in its 100 ms, the handshake and the
    // health check (several round trips) do not fit in one.
    proxy.set(Mode::Delay(Duration::from_millis(25)));
    let (fleet, member) = member_of(quorum_one(&proxy.url(), "a")).await;
    let (_o, observer) = member_of(support::config(&server.url(), "o")).await;
    member.transition(State::Open, Cause::Calls);
    eventually(WAIT, "the open crosses the slow link", || {
        observer.open_count() >= 1
    })
    .await;
    assert!(fleet.stats().connected, "{:?}", fleet.stats());
}
