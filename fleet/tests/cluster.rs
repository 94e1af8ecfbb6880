//! The fleet against a real Redis Cluster on loopback (three primaries made
//! by `redis-cli --cluster create`): opens, probes and closes shared for
//! breakers whose keys live on each primary, by instances each pointed at a
//! different node; and a primary's failover, after which scripts go to the
//! promoted replica and events still arrive.

mod support;

use failfast::State;
use failfast::integration::Cause;
use failfast_fleet::{Fleet, FleetConfig, Transport};
use std::sync::Arc;
use std::time::Duration;
use support::{FakeMember, RedisCluster, eventually};

const WAIT: Duration = Duration::from_secs(15);

/// An instance joined through `url` with one fake breaker per name.
async fn instance(cfg: FleetConfig, names: &[String]) -> (Fleet, Vec<Arc<FakeMember>>) {
    let fleet = failfast_fleet::join(cfg).unwrap();
    let members: Vec<_> = names.iter().map(|n| FakeMember::new(n)).collect();
    for member in &members {
        fleet.attach(member.clone()).unwrap();
    }
    eventually(WAIT, "connected", || fleet.stats().connected).await;
    (fleet, members)
}

/// One breaker's whole cycle across `members` (one per instance): two
/// votes open it everywhere, one instance wins the probe lease while the
/// others extend their open, its successful probe closes the fleet and the
/// others release theirs.
async fn cycle(members: Vec<Arc<FakeMember>>, observer: &impl Transport) {
    let name = members[0].name.clone();
    members[0].transition(State::Open, Cause::Calls);
    members[1].transition(State::Open, Cause::Calls);
    eventually(WAIT, &format!("{name}: everyone open"), || {
        members.iter().all(|m| m.open_count() >= 1)
    })
    .await;
    eventually(
        WAIT,
        &format!("{name}: every other instance lost the lease"),
        || members.iter().filter(|m| m.open_count() >= 2).count() == members.len() - 1,
    )
    .await;
    let winners: Vec<_> = members.iter().filter(|m| m.open_count() == 1).collect();
    assert_eq!(winners.len(), 1, "{name}: exactly one prober");
    let winner = winners[0].clone();
    let lease = observer.snapshot(&name).await.unwrap().probe;
    assert_eq!(lease.map(|l| l.generation), Some(1), "{name}");

    winner.transition(State::HalfOpen, Cause::Calls);
    winner.transition(State::Closed, Cause::Calls);
    eventually(WAIT, &format!("{name}: the others released"), || {
        members.iter().filter(|m| m.release_count() >= 1).count() == members.len() - 1
    })
    .await;
    assert_eq!(winner.release_count(), 0);
    assert_eq!(observer.snapshot(&name).await.unwrap().closed, 1, "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opens_probes_and_closes_are_shared_for_breakers_on_every_primary() {
    let cluster = RedisCluster::start(3, 0);
    let names: Vec<String> = (0..3)
        .map(|node| cluster.breaker_on("test/env", node))
        .collect();
    let mut fleets = Vec::new();
    let mut members = Vec::new();
    // Four instances, each pointed at one node: most scripts are redirected.
    for (i, instance_name) in ["a", "b", "c", "d"].into_iter().enumerate() {
        let mut cfg = support::config(&cluster.url(i % 3), instance_name);
        // A loaded test machine must not send an instance local-only (what
        // is checked is that no operation is redirected away or refused).
        cfg.command_timeout = Duration::from_secs(1);
        // Nor may the winner's lease run out before the test reports its probe.
        cfg.probe_lease = Duration::from_secs(10);
        let (fleet, ms) = instance(cfg, &names).await;
        fleets.push(fleet);
        members.push(ms);
    }
    let observer = support::transport(&cluster.url(2), "observer");
    let cycles = (0..names.len()).map(|b| {
        let of_breaker: Vec<_> = members.iter().map(|ms| ms[b].clone()).collect();
        cycle(of_breaker, &observer)
    });
    futures_util::future::join_all(cycles).await;
    for (i, fleet) in fleets.iter().enumerate() {
        let stats = fleet.stats();
        assert!(stats.connected && stats.local_only.is_none(), "{stats:?}");
        assert_eq!(stats.ops_failed, 0, "{stats:?}");
        // c and d voted nothing: each breaker's open reached them by an event.
        assert!(
            i < 2 || stats.events >= 3,
            "events from every node's breakers: {stats:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failover_scripts_reach_the_promoted_replica_and_events_still_arrive() {
    let mut cluster = RedisCluster::start(3, 1);
    let primaries = cluster.primaries();
    // The primary that owns the events channel's slot, and a breaker of its own.
    let channel = failfast_fleet::keys::channel("test/env");
    let doomed = cluster.owner(&channel, primaries[0]);
    let name = cluster.breaker_on("test/env", doomed);
    let seed = *primaries.iter().find(|&&p| p != doomed).unwrap();
    let config = |instance: &str| {
        let mut cfg = support::config(&cluster.url(seed), instance);
        cfg.quorum = 1;
        // No read-back within the test: what b learns, it learns from an event.
        cfg.poll_interval = Duration::from_secs(600);
        cfg.reconnect_max = Duration::from_millis(300);
        cfg
    };
    let names = [name.clone()];
    let (a_fleet, a) = instance(config("a"), &names).await;
    let (b_fleet, b) = instance(config("b"), &names).await;

    cluster.nodes[doomed].kill9();
    cluster.wait_ok(Duration::from_secs(30));
    assert_ne!(cluster.owner(&channel, seed), doomed, "a replica took over");
    // Each fleet noticed the lost node meanwhile (local-only) and comes back.
    for fleet in [&a_fleet, &b_fleet] {
        eventually(WAIT, "connected again", || fleet.stats().connected).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let events = b_fleet.stats().events;

    a[0].transition(State::Open, Cause::Calls);
    eventually(WAIT, "b learns a's open from an event", || {
        b[0].open_count() >= 1
    })
    .await;
    assert!(b_fleet.stats().events > events, "{:?}", b_fleet.stats());
    let observer = support::transport(&cluster.url(seed), "observer");
    let open = observer.snapshot(&name).await.unwrap().open;
    assert_eq!(
        open.map(|o| o.generation),
        Some(1),
        "written on the promoted replica"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_started_before_its_cluster_is_made_shares_once_it_is() {
    let cluster = RedisCluster::nodes(3);
    let config = |instance: &str, node: usize| {
        let mut cfg = support::config(&cluster.url(node), instance);
        cfg.quorum = 1;
        cfg
    };
    // Nodes without slots: the fleets run local-only meanwhile.
    let a_fleet = failfast_fleet::join(config("a", 0)).unwrap();
    let a = FakeMember::new("dep");
    a_fleet.attach(a.clone()).unwrap();
    let b_fleet = failfast_fleet::join(config("b", 1)).unwrap();
    let b = FakeMember::new("dep");
    b_fleet.attach(b.clone()).unwrap();
    eventually(WAIT, "health checks fail", || {
        a_fleet.stats().ops_failed >= 2 && b_fleet.stats().ops_failed >= 2
    })
    .await;
    assert!(!a_fleet.stats().connected, "{:?}", a_fleet.stats());

    cluster.create(0);
    for fleet in [&a_fleet, &b_fleet] {
        eventually(WAIT, "connected once the cluster is made", || {
            fleet.stats().connected
        })
        .await;
    }
    a.transition(State::Open, Cause::Calls);
    eventually(WAIT, "b applies a's open", || b.open_count() >= 1).await;
}
