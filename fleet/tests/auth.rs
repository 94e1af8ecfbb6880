//! Logging in as an ACL user limited to the fleet's namespace, through a real
//! `redis-server`: the right password connects and shares opens, a wrong one
//! leaves the process local-only; `rediss://` needs the `tls` feature, and
//! with it two instances share opens over TLS (a certificate made for the
//! test by `openssl`, trusted through `SSL_CERT_FILE`) as an ACL user.

mod support;

use failfast::State;
use failfast_fleet::FleetConfig;
use std::time::Duration;
use support::{RedisServer, eventually, member_of};

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
    da.transition(State::Open, failfast::integration::Cause::Calls);
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
    let stats = fleet.stats();
    assert!(!stats.connected, "{stats:?}");
    assert_eq!(
        stats.local_only,
        Some(failfast_fleet::LocalOnly::Refused(
            failfast_fleet::Refusal::Permission
        )),
        "{stats:?}"
    );
}

#[tokio::test]
async fn a_tls_url_needs_the_tls_feature() {
    let cfg = FleetConfig::new("rediss://fleet:s3cret@127.0.0.1:1/", "test/env");
    let joined = failfast_fleet::join(cfg);
    assert_eq!(joined.is_ok(), cfg!(feature = "tls"), "{joined:?}");
}

/// A test CA and a certificate it signed for 127.0.0.1, made by `openssl` in
/// a fresh directory: `(ca, cert, key)` paths. (webpki refuses a self-signed
/// certificate that is its own CA as a server's.)
#[cfg(feature = "tls")]
fn certificates() -> (String, String, String) {
    let dir = std::env::temp_dir().join(format!("failfast-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    std::fs::write(path("ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    let openssl = |args: &[&str]| {
        let made = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl on PATH");
        assert!(made.status.success(), "{made:?}");
    };
    let (ca, ca_key, csr, cert, key) = (
        path("ca.pem"),
        path("ca.key"),
        path("req.csr"),
        path("cert.pem"),
        path("key.pem"),
    );
    openssl(
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ]
        .into_iter()
        .chain([
            "-subj",
            "/CN=failfast test CA",
            "-keyout",
            &ca_key,
            "-out",
            &ca,
        ])
        .collect::<Vec<_>>(),
    );
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
        ]
        .into_iter()
        .chain(["-keyout", &key, "-out", &csr])
        .collect::<Vec<_>>(),
    );
    openssl(
        &[
            "x509", "-req", "-days", "1", "-in", &csr, "-CA", &ca, "-CAkey", &ca_key,
        ]
        .into_iter()
        .chain(["-CAcreateserial", "-extfile", &path("ext"), "-out", &cert])
        .collect::<Vec<_>>(),
    );
    (ca, cert, key)
}

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_as_an_acl_user_opens_are_shared() {
    let (ca, cert, key) = certificates();
    let tls_port = support::free_port();
    let server = RedisServer::start_with(&[
        "--tls-port".into(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        cert,
        "--tls-key-file".into(),
        key,
        "--tls-ca-cert-file".into(),
        ca.clone(),
        "--tls-auth-clients".into(),
        "no".into(),
    ]);
    acl_user(&server.url()).await;
    // rustls-native-certs reads the roots from here; only this test connects
    // over TLS in this binary.
    // SAFETY: no other thread of this test binary reads or writes the
    // environment while this test runs (its other tests never touch it).
    unsafe { std::env::set_var("SSL_CERT_FILE", &ca) };
    let url = format!("rediss://fleet:s3cret@127.0.0.1:{tls_port}/");
    let config = |instance: &str| {
        let mut cfg = support::config(&url, instance);
        cfg.quorum = 1;
        cfg
    };
    let (_a, da) = member_of(config("a"), WAIT).await;
    let (b, db) = member_of(config("b"), WAIT).await;
    da.transition(State::Open, failfast::integration::Cause::Calls);
    eventually(WAIT, "b applied a's open over TLS", || db.open_count() > 0).await;
    assert!(b.stats().connected);
}
