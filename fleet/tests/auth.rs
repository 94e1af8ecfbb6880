//! Logging in as an ACL user limited to the fleet's namespace, through a real
//! `redis-server`: the right password connects and shares opens, a wrong one
//! leaves the process local-only; `rediss://` needs the `tls` feature.

mod support;

use failfast_fleet::{FleetConfig, LocalState};
use std::time::Duration;
use support::{eventually, member_of, RedisServer};

const WAIT: Duration = Duration::from_secs(10);

/// A user that may touch only the `test/env` namespace's keys and channel.
async fn acl_user(url: &str) {
    let mut admin = support::raw(url).await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "fleet",
            "on",
            ">s3cret",
            "~failfast:{test/env/*",
            "&failfast:{test/env}:*",
            "+@read",
            "+@write",
            "+@scripting",
            "+@pubsub",
            "+ping",
            "+time",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
}

fn as_user(server: &RedisServer, password: &str, instance: &str) -> FleetConfig {
    let url = format!("redis://fleet:{password}@127.0.0.1:{}/", server.port);
    let mut cfg = support::config(&url, instance);
    cfg.quorum = 1;
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_limited_to_the_namespace_shares_opens() {
    let server = RedisServer::start();
    acl_user(&server.url()).await;
    let (a, da) = member_of(as_user(&server, "s3cret", "a"), WAIT).await;
    let (_b, db) = member_of(as_user(&server, "s3cret", "b"), WAIT).await;
    da.transition(LocalState::Open, failfast_fleet::Cause::LocalEvidence);
    eventually(WAIT, "b applied a's open", || db.open_count() > 0).await;
    assert_eq!(a.stats().ops_failed, 0, "{:?}", a.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_leaves_the_process_local_only() {
    let server = RedisServer::start();
    acl_user(&server.url()).await;
    let fleet = failfast_fleet::join(as_user(&server, "wrong", "a")).unwrap();
    eventually(WAIT, "health checks tried", || {
        fleet.stats().ops_failed >= 2
    })
    .await;
    assert!(!fleet.stats().connected, "{:?}", fleet.stats());
}

#[tokio::test]
async fn a_tls_url_needs_the_tls_feature() {
    let cfg = FleetConfig::new("rediss://fleet:s3cret@127.0.0.1:1/", "test/env");
    let joined = failfast_fleet::join(cfg);
    assert_eq!(joined.is_ok(), cfg!(feature = "tls"), "{joined:?}");
}
