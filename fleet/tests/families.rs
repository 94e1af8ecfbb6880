//! Keyed families in a fleet, through a real `redis-server`: a member opening
//! on one instance opens the same key's member on another; a remote open for
//! a key an instance has not created creates nothing there, and reaches the
//! member once the instance creates the key; evicted members leave the fleet.
//! Two instances in one process, each with its own family, fleet task,
//! connection and identity.

mod support;

use failfast_fleet::{Breakers, Fleet};
use failfast_runtime::{Breaker, Family, State};
use std::time::Duration;
use support::{RedisServer, eventually};

const WAIT: Duration = Duration::from_secs(10);

struct Instance {
    fleet: Fleet,
    hosts: Family<String>,
}

/// An instance whose vote alone opens the fleet, with a family `upstream`
/// (one failure trips a member) of at most `max_keys` hosts.
async fn instance(url: &str, name: &str, max_keys: usize) -> Instance {
    let mut cfg = support::config(url, name);
    cfg.quorum = 1;
    cfg.veto_successes = 0;
    cfg.open_base = Duration::from_secs(20);
    cfg.breakers = Breakers::Explicit;
    let fleet = failfast_fleet::join(cfg).unwrap();
    let hosts = Family::builder(
        Breaker::builder()
            .name("upstream")
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .max_keys(max_keys),
    )
    .build()
    .unwrap();
    fleet.attach_family(&hosts);
    eventually(WAIT, "connected", || fleet.stats().connected).await;
    Instance { fleet, hosts }
}

fn joined(i: &Instance, name: &str) -> bool {
    i.fleet.attached().iter().any(|n| n == name)
}

fn succeed(hosts: &Family<String>, key: &str) {
    assert!(hosts.get(key).call(|| Ok::<_, ()>(())).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_opening_on_one_instance_opens_the_same_key_on_another() {
    let server = RedisServer::start();
    let a = instance(&server.url(), "a", 100).await;
    let b = instance(&server.url(), "b", 100).await;
    for key in ["10.0.0.1", "10.0.0.2"] {
        succeed(&a.hosts, key);
        succeed(&b.hosts, key);
    }
    for i in [&a, &b] {
        eventually(WAIT, "members joined", || {
            joined(i, "upstream[10.0.0.1]") && joined(i, "upstream[10.0.0.2]")
        })
        .await;
    }
    let _ = a.hosts.get("10.0.0.1").call(|| Err::<(), _>("refused"));
    let shared = b.hosts.get("10.0.0.1");
    eventually(WAIT, "b's member of the key opened", || {
        shared.state() == State::Open
    })
    .await;
    assert_eq!(b.hosts.get("10.0.0.2").state(), State::Closed);
    assert_eq!(a.hosts.get("10.0.0.2").state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_open_for_a_key_not_created_here_creates_nothing_until_the_key_is() {
    let server = RedisServer::start();
    let a = instance(&server.url(), "a", 100).await;
    let b = instance(&server.url(), "b", 100).await;
    succeed(&a.hosts, "10.0.0.9");
    eventually(WAIT, "a's member joined", || {
        joined(&a, "upstream[10.0.0.9]")
    })
    .await;
    let _ = a.hosts.get("10.0.0.9").call(|| Err::<(), _>("refused"));
    eventually(WAIT, "b heard of the open", || b.fleet.stats().events > 0).await;
    // Ignored: no breaker, no fleet slot for a key b never used.
    assert_eq!(b.hosts.stats().stored, 0);
    assert!(b.fleet.attached().is_empty());
    // Created while the open is in force: the member reads it on joining.
    let late = b.hosts.get("10.0.0.9");
    eventually(WAIT, "b's new member opened", || {
        late.state() == State::Open
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_member_leaves_the_fleet_and_its_key_can_join_again() {
    let server = RedisServer::start();
    let a = instance(&server.url(), "a", 1).await;
    succeed(&a.hosts, "first");
    eventually(WAIT, "first joined", || joined(&a, "upstream[first]")).await;
    succeed(&a.hosts, "second");
    assert_eq!(a.hosts.stats().evicted, 1);
    eventually(WAIT, "first left, second joined", || {
        !joined(&a, "upstream[first]") && joined(&a, "upstream[second]")
    })
    .await;
    succeed(&a.hosts, "first");
    eventually(WAIT, "first joined again", || {
        joined(&a, "upstream[first]") && !joined(&a, "upstream[second]")
    })
    .await;
}
