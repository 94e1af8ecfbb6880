//! The registry at scale: many breakers, lookups by name, breakers dropped.

use std::borrow::Cow;
use std::sync::Arc;

use failfast_runtime::{Breaker, registry};

fn named(name: impl Into<Cow<'static, str>>) -> Arc<Breaker> {
    let b = Arc::new(Breaker::builder().name(name).build().unwrap());
    registry::register(&b);
    b
}

#[test]
fn thousands_of_breakers_found_by_name_and_forgotten_when_dropped() {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for i in 0..20_000 {
        let name = format!("host-{i}");
        let b = named(name.clone());
        if i % 2 == 0 {
            kept.push((name, b));
        } else {
            dropped.push(name);
        }
    }
    for (name, b) in &kept {
        let found = registry::get(name).expect("registered");
        assert!(std::ptr::eq(&*found, &**b), "{name}");
    }
    for name in &dropped {
        assert!(registry::get(name).is_none(), "{name} was dropped");
    }
    assert!(registry::get("no-such-breaker").is_none());
    let all: Vec<_> = registry::all()
        .into_iter()
        .filter(|b| b.name().starts_with("host-"))
        .map(|b| b.name().to_owned())
        .collect();
    let expected: Vec<_> = kept.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        all, expected,
        "every live breaker, in order of registration"
    );
}

#[test]
fn a_shared_name_finds_the_first_registered_that_still_exists() {
    let first = named("shared-name");
    let second = named("shared-name");
    assert!(std::ptr::eq(
        &*registry::get("shared-name").unwrap(),
        &*first
    ));
    drop(first);
    // Register more so the dead entry is swept, then look again.
    let _more: Vec<_> = (0..100).map(|i| named(format!("filler-{i}"))).collect();
    assert!(std::ptr::eq(
        &*registry::get("shared-name").unwrap(),
        &*second
    ));
    registry::register(&second);
    let count = registry::all()
        .iter()
        .filter(|b| b.name() == "shared-name")
        .count();
    assert_eq!(count, 1, "registering twice has no effect");
}

/// A breaker in a `static`, as `#[circuit_breaker]` declares them, registered
/// once however often it is registered.
#[test]
fn a_static_breaker_is_found_by_name() {
    static STATIC: Breaker = Breaker::from_config(
        failfast_runtime::__private::ConstConfig::new("registry-static").into_config(),
    );
    registry::register(&STATIC);
    registry::register(&STATIC);
    let found = registry::get("registry-static").expect("registered");
    assert!(std::ptr::eq(&*found, &STATIC));
    let count = registry::all()
        .iter()
        .filter(|b| b.name() == "registry-static")
        .count();
    assert_eq!(count, 1);
}

/// A `static` breaker called through the attribute's way in registers itself
/// on its first call (a breaker the linker did not gather, here).
#[test]
fn a_static_breaker_registers_itself_on_its_first_call() {
    static CALLED: Breaker = Breaker::from_config(
        failfast_runtime::__private::ConstConfig::new("registry-first-call").into_config(),
    );
    assert!(registry::get("registry-first-call").is_none());
    failfast_runtime::__private::acquire(&CALLED)
        .expect("closed")
        .record(failfast_runtime::Outcome::Success);
    let found = registry::get("registry-first-call").expect("registered by its first call");
    assert!(std::ptr::eq(&*found, &CALLED));
}

/// A name built at run time is stored once and found, reported and compared
/// like a literal one; the registry, rejections and snapshots share it.
#[test]
fn a_name_built_at_run_time_is_found_and_reported() {
    let host = String::from("host-3");
    let b = Arc::new(
        Breaker::builder()
            .name(format!("payments@{host}"))
            .threshold(1)
            .build()
            .unwrap(),
    );
    registry::register(&b);
    let found = registry::get("payments@host-3").expect("registered");
    assert!(std::ptr::eq(&*found, &*b));
    let _ = b.call(|| Err::<(), _>("down"));
    let rejected = b.acquire().unwrap_err();
    assert_eq!(rejected.name(), "payments@host-3");
    assert_eq!(b.snapshot().name, "payments@host-3");
    assert!(
        format!("{rejected}")
            .starts_with("circuit breaker `payments@host-3` is open: call not attempted"),
        "{rejected}"
    );
    drop(found);
    drop(b);
    assert!(registry::get("payments@host-3").is_none());
}

/// A declared family (what `#[circuit_breaker(key = …)]` declares) is
/// listed with its family's counts once it is built: breakers created,
/// evicted, unstored, and trips its ejection budget held back.
#[cfg(feature = "keyed")]
#[test]
fn a_declared_family_is_listed_with_its_counts() {
    use failfast_runtime::__private::{ConstConfig, KeyedSlot};
    use failfast_runtime::State;
    static SLOT: KeyedSlot = KeyedSlot::new(
        ConstConfig::new("registry.declared-counts")
            .threshold(1)
            .into_config(),
        4,
        None,
        std::time::Duration::ZERO,
        50,
    );
    let family = SLOT.family::<String>();
    for key in ["a", "b", "c", "d"] {
        assert!(family.get(key).call(|| Ok::<_, ()>(())).is_ok());
    }
    for key in ["a", "b", "c"] {
        let _ = family.get(key).call(|| Err::<(), _>("down"));
    }
    assert_eq!(family.get("c").state(), State::Closed);
    let listed = registry::family("registry.declared-counts").expect("listed");
    assert_eq!(
        (
            listed.stats().created,
            listed.stats().evicted,
            listed.stats().unstored,
            listed.stats().spared
        ),
        (4, 0, 0, 1)
    );
}

/// One listing of every breaker: `registry::all` holds the registered
/// breakers and every member of every registered family, each once, each
/// with the settings it runs with (its family's, as changed at run time,
/// or its own once changed by its name), its state and its snapshot.
#[cfg(feature = "keyed")]
#[test]
fn the_listing_holds_every_member_with_its_settings() {
    use failfast_runtime::{Family, State, configure};
    let plain = named("listing.plain");
    let replicas: Family<String> = Family::builder(
        Breaker::builder()
            .name("listing.replicas")
            .threshold(5)
            .max_keys(3),
    )
    .build()
    .unwrap();
    registry::register(&replicas);
    // As a configuration file's section for the family would.
    configure::apply("listing.replicas", Breaker::builder().threshold(2)).unwrap();
    for key in ["a", "b"] {
        let _ = replicas.get(key).call(|| Ok::<_, ()>(()));
    }
    configure::apply("listing.replicas[b]", Breaker::builder().threshold(7)).unwrap();
    for _ in 0..2 {
        let _ = replicas.get("a").call(|| Err::<(), _>("down"));
    }
    let all = registry::all();
    let row = |name: &str| {
        let found: Vec<_> = all.iter().filter(|b| b.name() == name).collect();
        assert_eq!(found.len(), 1, "{name} listed once");
        found[0].clone()
    };
    let a = row("listing.replicas[a]");
    assert_eq!(a.state(), State::Open);
    assert_eq!((a.snapshot().calls, a.snapshot().failures), (3, 2));
    assert_eq!(a.config().threshold(), 2, "the family's, from the file");
    let b = row("listing.replicas[b]");
    assert_eq!(b.config().threshold(), 7, "its own, by name");
    assert_eq!(b.snapshot().state, State::Closed);
    assert_eq!(row("listing.plain").config().threshold(), 5);
    // Registered breakers first, in order of registration, then members.
    let at = |name: &str| all.iter().position(|b| b.name() == name).unwrap();
    assert!(at("listing.plain") < at("listing.replicas[a]"));
    assert!(at("listing.replicas[a]") < at("listing.replicas[b]"));
    drop(plain);
}
