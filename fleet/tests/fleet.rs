//! Whole processes' fleet tasks against a real `redis-server`, with fake breakers.

mod support;

use failfast::State;
use failfast::integration::Cause;
use failfast_fleet::{Fleet, FleetConfig, Transport};
use redis::AsyncCommands;
use std::sync::Arc;
use std::time::Duration;
use support::{FakeMember, RedisServer, eventually, raw};

const WAIT: Duration = Duration::from_secs(10);

async fn member_of(cfg: FleetConfig) -> (Fleet, Arc<FakeMember>) {
    support::member_of(cfg, WAIT).await
}

/// An instance that opens the fleet alone (quorum 1) for 20 s.
async fn lone_voter(url: &str) -> (Fleet, Arc<FakeMember>) {
    let mut cfg = support::config(url, "a");
    cfg.quorum = 1;
    cfg.open_base = Duration::from_secs(20);
    member_of(cfg).await
}

async fn votes(url: &str) -> usize {
    let mut c = raw(url).await;
    c.zcard("failfast:{test/env/dep}:votes").await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_opens_on_the_second_vote_and_a_silent_instance_learns_it() {
    let server = RedisServer::start();
    let url = server.url();
    let (a_fleet, a) = member_of(support::config(&url, "a")).await;
    let (b_fleet, b) = member_of(support::config(&url, "b")).await;
    let (c_fleet, c) = member_of(support::config(&url, "c")).await;

    // A forged but well-formed nudge causes a read, and the read finds nothing.
    let mut raw = raw(&url).await;
    let _: () = raw
        .publish("failfast:{test/env}:ev", "ff1 open evil - dep")
        .await
        .unwrap();
    eventually(WAIT, "forged nudge received", || {
        c_fleet.stats().events >= 1
    })
    .await;

    a.transition(State::Open, Cause::Calls);
    let url2 = url.clone();
    let deadline = std::time::Instant::now() + WAIT;
    while votes(&url2).await < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "a's vote never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Give the others a few read-backs' worth of chances to get it wrong.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        c.open_count(),
        0,
        "one vote of two must not open the fleet (nor the forged nudge)"
    );
    assert_eq!(a.open_count(), 0);

    b.transition(State::Open, Cause::Calls);
    eventually(WAIT, "c learns the fleet open", || c.open_count() >= 1).await;
    eventually(WAIT, "a learns the fleet open", || a.open_count() >= 1).await;
    assert!(c_fleet.stats().events >= 2, "{:?}", c_fleet.stats());
    let _ = (a_fleet, b_fleet);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_probes_for_the_fleet_and_the_others_close_after_it() {
    let server = RedisServer::start();
    let url = server.url();
    let mut fleets = Vec::new();
    let mut members = Vec::new();
    for name in ["a", "b", "c", "d"] {
        let (fleet, member) = member_of(support::config(&url, name)).await;
        fleets.push(fleet);
        members.push(member);
    }
    members[0].transition(State::Open, Cause::Calls);
    members[1].transition(State::Open, Cause::Calls);
    eventually(WAIT, "everyone open", || {
        members.iter().all(|m| m.open_count() >= 1)
    })
    .await;

    // Near the deadline all four compete: losers extend their open, the winner does not.
    eventually(WAIT, "three losers", || {
        members.iter().filter(|m| m.open_count() >= 2).count() == 3
    })
    .await;
    let winners: Vec<_> = members.iter().filter(|m| m.open_count() == 1).collect();
    assert_eq!(winners.len(), 1, "exactly one prober");
    let winner = winners[0].clone();
    let t = support::transport(&url, "observer");
    let lease = t.snapshot("dep").await.unwrap().probe.expect("lease held");
    assert_eq!(lease.generation, 1);

    // The winner's trial succeeds: the fleet closes and the others follow, jittered.
    winner.transition(State::HalfOpen, Cause::Calls);
    winner.transition(State::Closed, Cause::Calls);
    eventually(WAIT, "losers released", || {
        members.iter().filter(|m| m.release_count() >= 1).count() == 3
    })
    .await;
    assert_eq!(winner.release_count(), 0);
    assert_eq!(t.snapshot("dep").await.unwrap().closed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_started_mid_outage_is_open_before_its_first_call() {
    let server = RedisServer::start();
    let url = server.url();
    let (_a_fleet, a) = lone_voter(&url).await;
    a.transition(State::Open, Cause::Calls);
    eventually(WAIT, "fleet open", || a.open_count() >= 1).await;

    let (_late_fleet, late) = member_of(support::config(&url, "late")).await;
    eventually(WAIT, "late pod applies the open at start", || {
        late.open_count() >= 1
    })
    .await;
    let until = late.last_open().unwrap();
    assert!(
        until > std::time::Instant::now() + Duration::from_secs(10),
        "the fleet's remaining time"
    );
}

/// Runs on one thread: while the test floods the notifier, the fleet task cannot
/// drain the queue, so the last transition is dropped and must be caught up.
#[tokio::test(flavor = "current_thread")]
async fn a_full_transition_queue_is_caught_up_from_the_breakers_state() {
    let server = RedisServer::start();
    let url = server.url();
    let mut cfg = support::config(&url, "a");
    cfg.quorum = 1;
    let (_a_fleet, a) = member_of(cfg).await;
    let (_o_fleet, observer) = member_of(support::config(&url, "o")).await;
    for i in 0..10_000 {
        let to = if i % 2 == 0 {
            State::HalfOpen
        } else {
            State::Open
        };
        a.transition(to, Cause::Manual); // never voted
    }
    a.transition(State::Open, Cause::Calls); // dropped: the queue is full
    eventually(
        WAIT,
        "the observer learns the open a never managed to send",
        || observer.open_count() >= 1,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_breaker_hears_nothing_more_and_can_join_again() {
    let server = RedisServer::start();
    let url = server.url();
    let (_a_fleet, a) = lone_voter(&url).await;
    let (o_fleet, observer) = member_of(support::config(&url, "o")).await;
    assert!(o_fleet.detach("dep"));
    assert!(!o_fleet.detach("dep"), "already gone");

    a.transition(State::Open, Cause::Calls);
    eventually(WAIT, "the open's event reaches o", || {
        o_fleet.stats().events >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1200)).await; // and a few read-backs' worth
    assert_eq!(observer.open_count(), 0, "a detached breaker is left alone");

    let again = FakeMember::new("dep");
    o_fleet.attach(again.clone()).unwrap();
    eventually(WAIT, "joined again, it reads the open", || {
        again.open_count() >= 1
    })
    .await;
    assert_eq!(observer.open_count(), 0);
    assert!(matches!(
        o_fleet.attach(FakeMember::new("dep")),
        Err(failfast_fleet::AttachError::DuplicateName(_))
    ));
}

/// A probe that hangs until its timeout must not outlive its lease: `join`
/// refuses a lease shorter than `probe_lead` + `call_timeout` +
/// `command_timeout`, with the field named.
#[tokio::test]
async fn join_refuses_a_probe_lease_a_hung_probe_would_outlive() {
    let mut cfg = support::config("redis://127.0.0.1:1/", "a");
    cfg.call_timeout = Some(Duration::from_secs(2));
    let refused = failfast_fleet::join(cfg.clone()).expect_err("lease 2 s, probe up to 2.4 s");
    assert!(
        matches!(refused, failfast_fleet::FleetError::Config(_)),
        "{refused}"
    );
    assert!(refused.to_string().contains("`probe_lease`"), "{refused}");
    cfg.probe_lease = Duration::from_millis(2500);
    let fleet = failfast_fleet::join(cfg).expect("a lease that outlasts the probe");
    drop(fleet);
}
