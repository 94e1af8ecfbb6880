//! `key = expr` and shared breakers (`failfast::breaker!`, `breaker = NAME`).

use std::sync::{Arc, Barrier};

use failfast::{circuit_breaker, registry, Rejected, State};

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
    assert_eq!(family.created(), 1000);
    assert_eq!(family.members().len(), 1000);
    assert_eq!(family.max_keys(), 2048);
}

failfast::breaker!(static GATEWAY = threshold = 2, recovery = "30s", name = "keyed.gateway");

#[circuit_breaker(breaker = GATEWAY)]
fn charge(ok: bool) -> Result<(), CallError> {
    if ok {
        Ok(())
    } else {
        Err(CallError::Down)
    }
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
