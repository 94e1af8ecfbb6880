//! A store that answers but cannot do what the fleet needs: the process runs
//! local-only, as when the store times out, with the reason in `stats()` and
//! one warning per episode, and health checks with backoff until the store
//! can be used again. Each refusal made by a real `redis-server`: a cluster
//! node behind a plain `redis://` URL (MOVED), an ACL user without the
//! namespace's keys (NOPERM), a replica (READONLY), and a proxy that loads
//! the scripts somewhere else (NOSCRIPT after reloading). CROSSSLOT cannot
//! be produced (each script touches one breaker's keys under one hash tag):
//! its classification is tested in `src/redis.rs`.

mod support;

use failfast::State;
use failfast::integration::Cause;
use failfast_fleet::{Fleet, FleetConfig, LocalOnly, Refusal, Transport};
use std::time::Duration;
use support::{FakeMember, Mode, Proxy, RedisCluster, RedisServer, eventually, warnings};

const WAIT: Duration = Duration::from_secs(15);

/// Waits until `fleet` runs local-only for `refusal` and has retried at
/// least three health checks since, then checks it warned once.
async fn refused(fleet: &Fleet, instance: &str, refusal: Refusal) {
    eventually(WAIT, &format!("local-only for {refusal:?}"), || {
        fleet.stats().local_only == Some(LocalOnly::Refused(refusal))
    })
    .await;
    let failed = fleet.stats().ops_failed;
    eventually(WAIT, "three health checks more", || {
        fleet.stats().ops_failed >= failed + 3
    })
    .await;
    let stats = fleet.stats();
    assert!(!stats.connected, "{stats:?}");
    assert_eq!(
        stats.local_only,
        Some(LocalOnly::Refused(refusal)),
        "{stats:?}"
    );
    let warned = warnings::of(instance);
    assert_eq!(warned.len(), 1, "one warning per episode: {warned:?}");
    assert!(
        warned[0].contains(&format!("Refused({refusal:?})")),
        "{warned:?}"
    );
}

fn quorum_one(url: &str, instance: &str) -> FleetConfig {
    let mut cfg = support::config(url, instance);
    cfg.quorum = 1;
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_url_pointed_at_a_cluster_node_is_redirected_and_runs_local_only() {
    warnings::capture();
    let cluster = RedisCluster::start(3, 0);
    let elsewhere = cluster.breaker_on("test/env", 1);
    let url = cluster.nodes[0].url(); // redis://, not redis+cluster://
    let fleet = failfast_fleet::join(quorum_one(&url, "moved")).unwrap();
    fleet.attach(FakeMember::new(&elsewhere)).unwrap();
    refused(&fleet, "moved", Refusal::Redirected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_without_the_namespaces_keys_runs_local_only_until_granted() {
    warnings::capture();
    let server = RedisServer::start();
    let mut admin = support::raw(&server.url()).await;
    let acl = |keys: &'static str| {
        let mut cmd = redis::cmd("ACL");
        cmd.arg(&["SETUSER", "fleet", "on", ">s3cret", "resetkeys", keys])
            .arg(&[
                "&*",
                "+@read",
                "+@write",
                "+@scripting",
                "+@pubsub",
                "+ping",
                "+time",
            ]);
        cmd
    };
    let _: () = acl("~other:*").query_async(&mut admin).await.unwrap();
    let url = format!("redis://fleet:s3cret@127.0.0.1:{}/", server.port);
    let fleet = failfast_fleet::join(quorum_one(&url, "noperm")).unwrap();
    let member = FakeMember::new("dep");
    fleet.attach(member.clone()).unwrap();
    refused(&fleet, "noperm", Refusal::Permission).await;

    // Granted the keys, it shares again: its open reaches another instance.
    let _: () = acl("~failfast:{test/env/*")
        .query_async(&mut admin)
        .await
        .unwrap();
    eventually(WAIT, "connected once granted", || fleet.stats().connected).await;
    assert_eq!(fleet.stats().local_only, None);
    let (_o, observer) = support::member_of(support::config(&server.url(), "o"), WAIT).await;
    member.transition(State::Open, Cause::Calls);
    eventually(WAIT, "the open is shared", || observer.open_count() >= 1).await;
    assert_eq!(warnings::of("noperm").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_refuses_the_vote_and_once_promoted_takes_it() {
    warnings::capture();
    let primary = RedisServer::start();
    let replica = RedisServer::start_with(&[
        "--replicaof".into(),
        "127.0.0.1".into(),
        primary.port.to_string(),
    ]);
    let fleet = failfast_fleet::join(quorum_one(&replica.url(), "readonly")).unwrap();
    let member = FakeMember::new("dep");
    fleet.attach(member.clone()).unwrap();
    // Reading works on a replica; voting writes.
    eventually(WAIT, "connected", || fleet.stats().connected).await;
    member.transition(State::Open, Cause::Calls);
    refused(&fleet, "readonly", Refusal::ReadOnly).await;

    // Promoted, it takes the vote the breaker still stands by.
    let mut admin = support::raw(&replica.url()).await;
    let _: () = redis::cmd("REPLICAOF")
        .arg(&["NO", "ONE"])
        .query_async(&mut admin)
        .await
        .unwrap();
    eventually(WAIT, "connected once promoted", || fleet.stats().connected).await;
    let t = support::transport(&replica.url(), "t");
    let deadline = std::time::Instant::now() + WAIT;
    while !t.snapshot("dep").await.is_ok_and(|s| s.open.is_some()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the vote never reached the promoted replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_loses_the_scripts_leaves_the_process_local_only() {
    warnings::capture();
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    proxy.set(Mode::LoseScripts);
    let fleet = failfast_fleet::join(quorum_one(&proxy.url(), "noscript")).unwrap();
    fleet.attach(FakeMember::new("dep")).unwrap();
    refused(&fleet, "noscript", Refusal::NoScript).await;

    proxy.set(Mode::Pass);
    eventually(WAIT, "connected through an honest proxy", || {
        fleet.stats().connected
    })
    .await;
}
