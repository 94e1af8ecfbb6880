//! `key = expr` and shared breakers (`failfast::breaker!`, `breaker = NAME`).

use std::sync::{Arc, Barrier};

use failfast::Mode;
use failfast::{Rejected, State, circuit_breaker, registry};

#[derive(Debug)]
enum CallError {
    Down,
    Refused(Rejected),
}

impl From<Rejected> for CallError {
    fn from(r: Rejected) -> Self {
        CallError::Refused(r)
    }
}

struct Client {
    host: String,
    sick: bool,
}

impl Client {
    #[circuit_breaker(key = self.host.as_str(), threshold = 3, name = "keyed.client")]
    fn fetch(&self, path: &str) -> Result<String, CallError> {
        if self.sick {
            Err(CallError::Down)
        } else {
            Ok(format!("{}{path}", self.host))
        }
    }
}

#[test]
fn three_hosts_one_sick_only_its_breaker_opens() {
    let clients: Vec<Client> = ["a:80", "b:80", "c:80"]
        .into_iter()
        .map(|h| Client {
            host: h.into(),
            sick: h == "b:80",
        })
        .collect();
    for _ in 0..5 {
        for c in &clients {
            let _ = c.fetch("/stock");
        }
    }
    let family = registry::family("keyed.client").expect("registered on first call");
    let state = |host: &str| {
        registry::get(&format!("keyed.client[{host}]"))
            .unwrap()
            .state()
    };
    assert_eq!(state("b:80"), State::Open);
    assert_eq!(state("a:80"), State::Closed);
    assert_eq!(state("c:80"), State::Closed);
    assert_eq!(family.members().len(), 3);
    assert!(
        matches!(clients[1].fetch("/x"), Err(CallError::Refused(r)) if r.name() == "keyed.client[b:80]")
    );
    assert_eq!(clients[0].fetch("/x").unwrap(), "a:80/x");
    assert_eq!(clients[2].fetch("/x").unwrap(), "c:80/x");
}

#[circuit_breaker(key = tenant, max_keys = 2048, name = "keyed.tenants")]
fn per_tenant(tenant: u32) -> Result<u32, CallError> {
    Ok(tenant)
}

#[test]
fn two_threads_over_a_thousand_keys_create_each_breaker_once() {
    let start = Arc::new(Barrier::new(2));
    std::thread::scope(|s| {
        for t in 0..2 {
            let start = Arc::clone(&start);
            s.spawn(move || {
                start.wait();
                for i in 0..1000u32 {
                    let key = if t == 0 { i } else { 999 - i };
                    assert_eq!(per_tenant(key).unwrap(), key);
                }
            });
        }
    });
    let family = registry::family("keyed.tenants").unwrap();
    assert_eq!(family.stats().created, 1000);
    assert_eq!(family.members().len(), 1000);
    assert_eq!(family.stats().max_keys, 2048);
}

failfast::breaker!(static GATEWAY = threshold = 2, recovery = "30s", name = "keyed.gateway");

#[circuit_breaker(breaker = GATEWAY)]
fn charge(ok: bool) -> Result<(), CallError> {
    if ok { Ok(()) } else { Err(CallError::Down) }
}

#[circuit_breaker(breaker = GATEWAY)]
fn refund(_cents: u64) -> Result<(), CallError> {
    panic!("the gateway is open: refund must not run")
}

#[test]
fn a_shared_breaker_opened_through_one_function_rejects_another() {
    for _ in 0..2 {
        assert!(matches!(charge(false), Err(CallError::Down)));
    }
    assert_eq!(GATEWAY.state(), State::Open);
    assert!(matches!(refund(100), Err(CallError::Refused(r)) if r.name() == "keyed.gateway"));
}

failfast::breaker!(static LEDGER = max_concurrent = 2..=10, threshold = 100, name = "keyed.ledger");

#[circuit_breaker(breaker = LEDGER)]
fn post(ok: bool) -> Result<(), CallError> {
    if ok { Ok(()) } else { Err(CallError::Down) }
}

#[circuit_breaker(breaker = LEDGER, max_concurrent = 4)]
fn audit(ok: bool) -> Result<(), CallError> {
    if ok { Ok(()) } else { Err(CallError::Down) }
}

#[test]
fn a_shared_breaker_keeps_one_adaptive_limit_for_every_function_using_it() {
    let limit = || LEDGER.snapshot().concurrency_limit;
    assert_eq!(limit(), Some(10), "it starts at its most places");
    // Failures through either function cut the one limit: 10, 9, 8.
    assert!(matches!(post(false), Err(CallError::Down)));
    assert!(matches!(audit(false), Err(CallError::Down)));
    assert_eq!(limit(), Some(8));
    // `audit`'s fixed `max_concurrent = 4` is a bulkhead of its own calls,
    // beside the breaker's limit.
    assert!(audit(true).is_ok() && post(true).is_ok());
    LEDGER.set_mode(Mode::Normal);
    assert_eq!(limit(), Some(10), "a reset puts it back at its most");
}

#[circuit_breaker(key = host, max_keys = 3, threshold = 1, recovery = "1h", name = "keyed.bounded")]
fn bounded(host: &str, fail: bool) -> Result<(), CallError> {
    if fail { Err(CallError::Down) } else { Ok(()) }
}

#[test]
fn past_max_keys_the_open_breaker_is_never_evicted() {
    assert!(matches!(bounded("sick", true), Err(CallError::Down)));
    for i in 0..50 {
        assert!(bounded(&format!("healthy-{i}"), false).is_ok());
    }
    let family = registry::family("keyed.bounded").unwrap();
    assert_eq!(family.members().len(), 3);
    assert_eq!(family.stats().evicted, 48);
    assert!(
        matches!(bounded("sick", false), Err(CallError::Refused(r)) if r.name() == "keyed.bounded[sick]"),
        "still open after 50 other keys"
    );
}

fn unavailable(rejected: Rejected) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionRefused, rejected)
}

#[circuit_breaker(key = region, threshold = 1, recovery = "1h", reject_with = unavailable, name = "keyed.regions")]
fn in_region(region: u8) -> std::io::Result<u8> {
    Err(std::io::Error::other(format!("region {region} down")))
}

#[test]
fn reject_with_answers_per_key() {
    assert_eq!(in_region(1).unwrap_err().kind(), std::io::ErrorKind::Other);
    assert_eq!(
        in_region(1).unwrap_err().kind(),
        std::io::ErrorKind::ConnectionRefused
    );
    // Region 2 has a breaker of its own: its first failure reaches the body.
    assert_eq!(in_region(2).unwrap_err().kind(), std::io::ErrorKind::Other);
}

failfast::breaker!(static UPSTREAMS = max_keys = 16, threshold = 2, recovery = "1h", name = "keyed.upstreams");

#[circuit_breaker(breaker = UPSTREAMS, key = host)]
fn get_from(host: &str) -> Result<String, CallError> {
    if host == "b" {
        Err(CallError::Down)
    } else {
        Ok(format!("got {host}"))
    }
}

#[circuit_breaker(breaker = UPSTREAMS, key = host, fallback = |_| Ok(String::from("queued")))]
fn post_to(host: &str, body: &str) -> Result<String, CallError> {
    Ok(format!("posted {body} to {host}"))
}

#[test]
fn a_keyed_family_shared_by_two_functions() {
    for _ in 0..2 {
        assert!(get_from("b").is_err());
    }
    assert_eq!(get_from("a").unwrap(), "got a");
    // `post_to` shares the family: host b is open for it too.
    assert_eq!(post_to("b", "x").unwrap(), "queued");
    assert_eq!(post_to("a", "x").unwrap(), "posted x to a");
    let family = registry::family("keyed.upstreams").unwrap();
    assert_eq!(family.members().len(), 2);
}

/// A generic function whose key type depends on its type parameter: one
/// family per key type, each registered under the function's name.
#[circuit_breaker(key = id, threshold = 1, recovery = "1h", name = "keyed.generic")]
fn by_id<K: failfast::Key + std::fmt::Debug>(id: K, fail: bool) -> Result<String, CallError> {
    if fail {
        Err(CallError::Down)
    } else {
        Ok(format!("{id:?}"))
    }
}

#[test]
fn a_generic_function_keeps_one_family_per_key_type() {
    assert!(matches!(by_id(7u32, true), Err(CallError::Down)));
    assert!(matches!(by_id(7u32, false), Err(CallError::Refused(_))));
    // The string "7" is another key type: its own family, its own breaker.
    assert_eq!(by_id("7", false).unwrap(), "\"7\"");
    assert_eq!(by_id(8u32, false).unwrap(), "8");
    let families: Vec<_> = registry::families()
        .into_iter()
        .filter(|f| f.name() == "keyed.generic")
        .collect();
    assert_eq!(families.len(), 2);
}

static FLAKY_RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[failfast::retry(attempts = 5, backoff = "1ms")]
#[circuit_breaker(key = host, threshold = 2, recovery = "1h")]
fn flaky(host: &str) -> Result<(), CallError> {
    let _ = host;
    FLAKY_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Err(CallError::Down)
}

#[test]
fn retries_stop_once_the_keys_breaker_opens() {
    assert!(matches!(flaky("x"), Err(CallError::Down)));
    // Two runs open x's breaker; the retry sees it open for an hour and stops.
    assert_eq!(FLAKY_RUNS.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert!(matches!(flaky("x"), Err(CallError::Refused(_))));
    assert!(matches!(flaky("y"), Err(CallError::Down)));
    assert_eq!(FLAKY_RUNS.load(std::sync::atomic::Ordering::Relaxed), 4);
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;
    use failfast::Reason;
    use std::time::Duration;

    struct Replica {
        host: &'static str,
        hangs: bool,
    }

    impl Replica {
        #[circuit_breaker(
            key = self.host,
            threshold = 2,
            recovery = "1h",
            timeout = "50ms",
            max_concurrent = 1,
            fallback = |error| async move {
                Err(match error {
                    failfast::Error::Rejected(r) => CallError::Refused(r),
                    _ => CallError::Down,
                })
            },
            name = "keyed.replicas"
        )]
        async fn read(&self) -> Result<&'static str, CallError> {
            if self.hangs {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            tokio::task::yield_now().await;
            Ok(self.host)
        }
    }

    failfast::breaker!(static QUOTES = threshold = 5, recovery = "30s", name = "keyed.quotes");

    #[circuit_breaker(
        breaker = QUOTES,
        timeout = "50ms",
        fallback = |error| async move {
            match error {
                failfast::Error::Timeout(_) => Ok(0),
                _ => Err(CallError::Down),
            }
        }
    )]
    async fn quote(takes: Duration) -> Result<u32, CallError> {
        tokio::time::sleep(takes).await;
        Ok(7)
    }

    /// A function's own `timeout` next to a shared breaker that has none is
    /// the limit in force: a call within it answers, one past it times out.
    #[tokio::test(start_paused = true)]
    async fn a_functions_own_timeout_holds_beside_a_shared_breaker_without_one() {
        assert!(matches!(quote(Duration::from_millis(10)).await, Ok(7)));
        assert!(matches!(quote(Duration::from_secs(1)).await, Ok(0)));
        assert_eq!(QUOTES.snapshot().timeouts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_fallback_and_max_concurrent_hold_per_key() {
        let sick = Replica {
            host: "r2",
            hangs: true,
        };
        let well = Replica {
            host: "r1",
            hangs: false,
        };
        for _ in 0..2 {
            assert!(
                matches!(sick.read().await, Err(CallError::Down)),
                "timed out"
            );
        }
        assert!(
            matches!(sick.read().await, Err(CallError::Refused(r)) if r.name() == "keyed.replicas[r2]")
        );
        assert_eq!(well.read().await.unwrap(), "r1");
        // One call at a time per key: a second concurrent call to r1 is
        // refused at the limit, while r3 has a place of its own.
        let other = Replica {
            host: "r3",
            hangs: false,
        };
        let (a, b, c) = tokio::join!(well.read(), well.read(), other.read());
        let refused = [&a, &b]
            .iter()
            .filter(|r| matches!(r, Err(CallError::Refused(r)) if r.reason() == Reason::ConcurrencyLimit))
            .count();
        assert_eq!(refused, 1, "{a:?} {b:?}");
        assert_eq!(c.unwrap(), "r3");
    }

    #[circuit_breaker(key = host, threshold = 2, recovery = "1h", name = "keyed.spawned")]
    async fn spawned(host: String, fail: bool) -> Result<String, CallError> {
        // The key's breaker is held across this await, on whichever worker
        // thread the task resumes on.
        tokio::task::yield_now().await;
        if fail { Err(CallError::Down) } else { Ok(host) }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_keyed_async_call_is_send_across_awaits() {
        let sick = (0..2).map(|_| tokio::spawn(spawned("s1".to_owned(), true)));
        for call in sick {
            assert!(matches!(call.await.unwrap(), Err(CallError::Down)));
        }
        let calls: Vec<_> = (0..64)
            .map(|i| tokio::spawn(spawned(["s1", "s2"][i % 2].to_owned(), false)))
            .collect();
        let mut served = 0;
        for call in calls {
            match call.await.unwrap() {
                Ok(host) => {
                    assert_eq!(host, "s2");
                    served += 1;
                }
                Err(CallError::Refused(r)) => assert_eq!(r.name(), "keyed.spawned[s1]"),
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(served, 32);
    }
}

#[circuit_breaker(key = host, threshold = 2, name = "keyed.early-replicas")]
fn replica(host: &str) -> Result<String, CallError> {
    Ok(host.to_owned())
}

failfast::breaker!(static SHARED_HOSTS = max_keys = 16, name = "keyed.shared-hosts", threshold = 2);

/// A keyed function's family, and a shared one, are listed before any call:
/// a replica can be forced open, and the family configured, before traffic.
#[test]
fn a_declared_family_is_listed_and_forceable_before_its_first_call() {
    let family = registry::family("keyed.early-replicas").expect("listed from the start");
    assert!(family.members().is_empty());
    assert_eq!(family.stats().stored, 0);
    assert!(registry::family("keyed.shared-hosts").is_some());
    family
        .member("10.0.0.3")
        .expect("the key's breaker, before its first call")
        .set_mode(Mode::ForcedOpen);
    family
        .reconfigure(&failfast::Breaker::builder().threshold(7))
        .unwrap();
    assert!(matches!(replica("10.0.0.3"), Err(CallError::Refused(_))));
    assert_eq!(replica("10.0.0.1").unwrap(), "10.0.0.1");
    let members = family.members();
    assert_eq!(members.len(), 2, "the key adopted its breaker");
    assert_eq!(family.stats().stored, 2);
    assert!(members.iter().all(|m| m.config().threshold() == 7));
    assert_eq!(
        registry::get("keyed.early-replicas[10.0.0.3]")
            .unwrap()
            .snapshot()
            .mode,
        failfast::Mode::ForcedOpen
    );
    assert_eq!(
        registry::families()
            .iter()
            .filter(|f| f.name() == "keyed.early-replicas")
            .count(),
        1,
        "listed once"
    );
}
