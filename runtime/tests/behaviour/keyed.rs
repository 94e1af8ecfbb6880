//! Keyed families: one breaker per key, bounded, built once per key.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::registry::FamilyRef;
use failfast_runtime::{Breaker, Error, Family, ManualClock, Member, State, registry};

fn family(name: &'static str, max_keys: usize) -> Family<String> {
    Family::builder(
        Breaker::builder()
            .name(name)
            .threshold(2)
            .max_keys(max_keys),
    )
    .build()
    .unwrap()
}

fn trip(family: &Family<String>, key: &str) {
    for _ in 0..2 {
        let _ = family.get(key).call(|| Err::<(), _>("down"));
    }
    assert_eq!(family.get(key).state(), State::Open, "{key}");
}

/// A family of `settings` on `clock`.
fn on_clock(clock: &ManualClock, settings: failfast_runtime::Builder) -> Family<String> {
    Family::builder(settings.clock(clock.clone()))
        .build()
        .unwrap()
}

/// Settings named `name` that open at the first failure for `recovery`,
/// with a trial lease of 60 s, for `max_keys` keys.
fn leased(name: &'static str, recovery: Duration, max_keys: usize) -> failfast_runtime::Builder {
    Breaker::builder()
        .name(name)
        .threshold(1)
        .recovery(recovery)
        .trial_lease(Duration::from_secs(60))
        .max_keys(max_keys)
}

/// A family's `Debug` names it and gives its bound, as a log line or a
/// failed assertion shows it.
#[test]
fn a_family_debugs_as_its_name_and_bound() {
    let hosts = family("keyed.debugged", 16);
    assert_eq!(
        format!("{hosts:?}"),
        r#"Family { name: "keyed.debugged", max_keys: 16, .. }"#
    );
}

/// A change of a family's mode together with another setting takes both
/// (only a change of the mode alone is set on the members the short way,
/// without republishing their settings).
#[test]
fn a_family_s_mode_changed_with_another_setting_takes_both() {
    let hosts = family("keyed.mode-and-threshold", 16);
    hosts
        .reconfigure(&Breaker::builder().mode(Mode::ObserveOnly).threshold(5))
        .unwrap();
    assert_eq!(hosts.config().threshold(), 5);
    let member = hosts.get("a").snapshot();
    assert_eq!(
        (member.mode, member.settings.threshold()),
        (Mode::ObserveOnly, 5)
    );
}

#[test]
fn one_sick_host_opens_only_its_own_breaker() {
    let hosts = family("keyed.hosts", 16);
    trip(&hosts, "host-2");
    for host in ["host-1", "host-3"] {
        let answer = hosts.get(host).call(|| Ok::<_, &str>(host.len()));
        assert_eq!(answer.ok(), Some(6), "{host} keeps flowing");
    }
    let refused = hosts.get("host-2").call(|| Ok::<_, &str>(0));
    match refused {
        Err(Error::Rejected(r)) => assert_eq!(r.name(), "keyed.hosts[host-2]"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_family_is_empty_until_its_first_key() {
    let keys = family("keyed.empty", 4);
    assert_eq!(keys.stats().stored, 0);
    assert_eq!(keys.stats().stored, 0);
    let _ = keys.get("a");
    assert_ne!(keys.stats().stored, 0);
    assert_eq!(keys.stats().stored, 1);
}

#[test]
fn the_least_recently_used_closed_breaker_is_evicted() {
    let keys = family("keyed.lru", 3);
    for k in ["a", "b", "c"] {
        let _ = keys.get(k);
    }
    let _ = keys.get("a"); // "b" is now the least recently used
    let _ = keys.get("d");
    let names: Vec<String> = keys.members().iter().map(|m| m.name().to_owned()).collect();
    assert_eq!(keys.stats().stored, 3);
    assert!(!names.contains(&"keyed.lru[b]".to_owned()), "{names:?}");
    assert_eq!(keys.stats().evicted, 1);
}

/// A key used after its insertion, and then a newer key inserted: the
/// newer key was used last, so the older one goes when a third comes.
/// (Use is recorded at insertion granularity: the key used and the key
/// inserted after are a step apart, not on the same step.)
#[test]
fn a_key_inserted_after_another_was_used_is_the_more_recent() {
    let keys = family("keyed.fresh-lru", 2);
    let _ = keys.get("x");
    let _ = keys.get("a");
    let _ = keys.get("a");
    // "x" goes: "b" takes its slot, before "a"'s.
    let _ = keys.get("b");
    let _ = keys.get("c");
    let names: Vec<String> = keys.members().iter().map(|m| m.name().to_owned()).collect();
    assert_eq!(
        names,
        ["keyed.fresh-lru[b]", "keyed.fresh-lru[c]"],
        "\"a\" was used last before \"b\" came"
    );
    assert_eq!(keys.stats().evicted, 2);
}

#[test]
fn eviction_never_forgets_an_open_breaker() {
    let keys = family("keyed.open-kept", 4);
    trip(&keys, "sick");
    let sick = keys.get("sick");
    // Far more keys than slots: the Closed ones make room, "sick" stays.
    for i in 0..100 {
        let _ = keys.get(&format!("healthy-{i}"));
    }
    assert_eq!(keys.stats().stored, 4);
    assert_eq!(keys.stats().evicted, 97);
    assert!(
        Arc::ptr_eq(&sick, &keys.get("sick")),
        "the open breaker was kept"
    );
    assert_eq!(keys.get("sick").state(), State::Open);
    assert_eq!(keys.stats().created, 101);
}

/// An open breaker left alone may be forgotten once its open time has
/// ended and the trial lease has passed after it: not before, however
/// long ago it opened counts from.
#[test]
fn an_open_breaker_is_forgotten_only_a_lease_after_its_open_time_ends() {
    let clock = ManualClock::new();
    let keys = on_clock(
        &clock,
        leased("keyed.open-forgotten", Duration::from_secs(30), 2),
    );
    let _ = keys.get("sick").call(|| Err::<(), _>("down"));
    let sick = keys.get("sick");
    assert_eq!(sick.state(), State::Open);
    // Open until 30 s: still kept 75 s in, 45 s after, each new key
    // evicting the one before it.
    clock.advance(Duration::from_secs(75));
    for i in 0..4 {
        let _ = keys.get(&format!("healthy-{i}"));
    }
    assert!(
        Arc::ptr_eq(&sick, &keys.get("sick")),
        "kept within its lease"
    );
    assert_eq!(keys.stats().evicted, 3);
    // 91 s in, a lease after its open time ended: two new keys find room,
    // the open breaker's too.
    clock.advance(Duration::from_secs(16));
    for k in ["healthy-4", "healthy-5"] {
        let _ = keys.get(k);
    }
    let mut names: Vec<String> = keys.members().iter().map(|m| m.name().to_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "keyed.open-forgotten[healthy-4]",
            "keyed.open-forgotten[healthy-5]"
        ]
    );
}

#[test]
fn a_family_full_of_open_breakers_gives_new_keys_its_overflow_breaker() {
    let clock = ManualClock::new();
    let keys = on_clock(
        &clock,
        Breaker::builder()
            .name("keyed.all-open")
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .max_keys(2),
    );
    for k in ["x", "y"] {
        let _ = keys.get(k).call(|| Err::<(), _>("down"));
        assert_eq!(keys.get(k).state(), State::Open);
    }
    let first = keys.get("z");
    let second = keys.get("w");
    assert!(Arc::ptr_eq(&first, &second), "one overflow breaker");
    assert_eq!(first.name(), "keyed.all-open[*]");
    assert_eq!(
        (
            keys.stats().stored,
            keys.stats().unstored,
            keys.stats().evicted
        ),
        (2, 2, 0)
    );
    drop((first, second));
    // Once a breaker closes again, it can make room.
    clock.advance(Duration::from_secs(30));
    let _ = keys.get("x").call(|| Ok::<_, ()>(()));
    assert_eq!(keys.get("x").state(), State::Closed);
    let z = keys.get("z");
    assert!(Arc::ptr_eq(&z, &keys.get("z")));
    assert_eq!(
        (
            keys.stats().stored,
            keys.stats().unstored,
            keys.stats().evicted
        ),
        (2, 2, 1)
    );
    // The registry's handle reports the same counts.
    registry::register(&keys);
    let listed = registry::family("keyed.all-open").expect("registered");
    assert_eq!(
        (
            listed.stats().created,
            listed.stats().evicted,
            listed.stats().unstored,
            listed.stats().max_keys
        ),
        (3, 1, 2, 2)
    );
    assert_eq!(keys.stats().created, 3);
}

#[test]
fn two_threads_over_a_thousand_keys_build_each_breaker_once() {
    let keys = family("keyed.once", 2048);
    let barrier = Arc::new(Barrier::new(2));
    let seen: Vec<Vec<Arc<failfast_runtime::Member>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let keys = keys.clone();
                let barrier = Arc::clone(&barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut order: Vec<u32> = (0..1000).collect();
                    if t == 1 {
                        order.reverse();
                    }
                    let mut got: Vec<_> = order
                        .into_iter()
                        .map(|i| (i, keys.get(&format!("key-{i}"))))
                        .collect();
                    got.sort_by_key(|(i, _)| *i);
                    got.into_iter().map(|(_, m)| m).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(keys.stats().created, 1000);
    assert_eq!(keys.stats().stored, 1000);
    for (a, b) in seen[0].iter().zip(&seen[1]) {
        assert!(Arc::ptr_eq(a, b), "{} built twice", a.name());
    }
}

#[test]
fn tuple_and_integer_keys_are_looked_up_without_owning_them() {
    let shards: Family<(String, u16)> = Family::builder(Breaker::builder().name("keyed.shards"))
        .build()
        .unwrap();
    let a = shards.get(&("eu", 3u16));
    let b = shards.get(&(String::from("eu"), 3u16));
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.name(), "keyed.shards[eu, 3]");
    let ports: Family<u16> = Family::builder(Breaker::builder().name("keyed.ports"))
        .build()
        .unwrap();
    assert_eq!(ports.get(&8080u16).name(), "keyed.ports[8080]");
    assert_eq!(shards.stats().created + ports.stats().created, 2);
}

/// A key type of one's own whose values all hash alike: only `matches`
/// tells them apart in the family's map.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Colliding(u8);

impl std::hash::Hash for Colliding {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl failfast_runtime::Key for Colliding {
    type Owned = Colliding;
    fn to_key(&self) -> Colliding {
        self.clone()
    }
    fn matches(&self, owned: &Colliding) -> bool {
        self == owned
    }
    fn label(&self, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
}

/// Keys whose hashes collide are told apart by `Key::matches`, looked up
/// by value, by reference and inside a tuple: each gets its own breaker.
#[test]
fn keys_whose_hashes_collide_still_get_a_breaker_each() {
    let family: Family<Colliding> = Family::builder(Breaker::builder().name("keyed.colliding"))
        .build()
        .unwrap();
    let one = family.get(&Colliding(1));
    // `&Colliding` is a key too (`impl Key for &T`): the same lookup.
    let two = family.get(&&Colliding(2));
    assert!(!Arc::ptr_eq(&one, &two));
    assert_eq!(two.name(), "keyed.colliding[2]");
    assert!(Arc::ptr_eq(&family.get(&&Colliding(1)), &one));
    assert!(Arc::ptr_eq(&family.get(&Colliding(2)), &two));
    assert_eq!(family.stats().created, 2);

    let pairs: Family<(Colliding, u16)> =
        Family::builder(Breaker::builder().name("keyed.colliding_pairs"))
            .build()
            .unwrap();
    let a = pairs.get(&(&Colliding(1), 7u16));
    let b = pairs.get(&(&Colliding(2), 7u16));
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(b.name(), "keyed.colliding_pairs[2, 7]");
    assert!(Arc::ptr_eq(&pairs.get(&(Colliding(1), 7u16)), &a));
}

#[test]
fn a_registered_family_is_one_entry_with_its_members() {
    let keys = family("keyed.registered", 8);
    registry::register(&keys);
    registry::register(&keys);
    trip(&keys, "db-1");
    let _ = keys.get("db-2");
    let found = registry::family("keyed.registered").expect("registered once");
    let mut names: Vec<String> = found
        .members()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keyed.registered[db-1]", "keyed.registered[db-2]"]);
    assert_eq!(
        registry::families()
            .iter()
            .filter(|f| f.name() == "keyed.registered")
            .count(),
        1
    );
    let member = registry::get("keyed.registered[db-1]").expect("member by name");
    assert_eq!(member.state(), State::Open);
    let mut listed: Vec<String> = registry::all()
        .iter()
        .map(|b| b.name().to_owned())
        .filter(|n| n.starts_with("keyed.registered["))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        ["keyed.registered[db-1]", "keyed.registered[db-2]"],
        "the listing holds each member once"
    );
    assert!(registry::get("keyed.registered[db-9]").is_none());
}

#[test]
fn registering_a_family_keeps_those_registered_before() {
    let first = family("keyed.registered-first", 4);
    let second = family("keyed.registered-second", 4);
    registry::register(&first);
    registry::register(&second);
    for name in ["keyed.registered-first", "keyed.registered-second"] {
        assert!(registry::family(name).is_some(), "{name}");
    }
    drop(first);
    assert!(registry::family("keyed.registered-first").is_none());
    assert!(registry::family("keyed.registered-second").is_some());
}

#[test]
fn max_keys_of_zero_is_refused() {
    let refused = Family::<String>::builder(Breaker::builder().name("keyed.none").max_keys(0))
        .build()
        .unwrap_err();
    assert!(refused.to_string().contains("max_keys"));
    assert_eq!(refused.name(), "keyed.none");
}

#[test]
fn each_key_gets_its_own_concurrency_limit() {
    let keys: Family<String> = Family::builder(Breaker::builder().name("keyed.bulkheads"))
        .max_concurrent(1)
        .build()
        .unwrap();
    let a = keys.get("a");
    let held = failfast_runtime::__private::enter_member(&a).unwrap();
    assert!(failfast_runtime::__private::enter_member(&a).is_none());
    assert!(failfast_runtime::__private::enter_member(&keys.get("b")).is_some());
    drop(held);
}

#[test]
fn a_wait_for_a_place_is_refused_beside_members_with_an_adaptive_limit() {
    let members = || {
        Breaker::builder()
            .name("keyed.adaptive-wait")
            .adaptive_concurrency(2, 20)
    };
    let refused = Family::<String>::builder(members().max_wait(Duration::from_millis(50)))
        .max_concurrent(4)
        .build()
        .unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains("max_wait") && text.contains("adaptive"),
        "{text}"
    );
    // Without the wait, both limits hold: each key's bulkhead and its own
    // adaptive limit.
    let keys: Family<String> = Family::builder(members())
        .max_concurrent(4)
        .build()
        .unwrap();
    assert_eq!(keys.get("a").snapshot().concurrency_limit, Some(20));
    assert!(
        failfast_runtime::__private::enter_member(&keys.get("a")).is_some(),
        "a limit of its own"
    );
}

#[test]
fn a_large_full_family_evicts_only_closed_breakers() {
    // Past the sample size: the victim is sampled, and with two thirds of
    // the family open most samples hold open breakers.
    let keys = family("keyed.sampled", 96);
    for i in 0..64 {
        trip(&keys, &format!("sick-{i}"));
    }
    let sick: Vec<_> = (0..64).map(|i| keys.get(&format!("sick-{i}"))).collect();
    for i in 0..1000 {
        let _ = keys.lease(&format!("healthy-{i}"));
    }
    assert_eq!(keys.stats().stored, 96);
    assert_eq!(
        keys.stats().unstored,
        0,
        "a Closed breaker was always found"
    );
    assert_eq!(keys.stats().evicted, 1000 - 32);
    for (i, member) in sick.iter().enumerate() {
        let now = keys.get(&format!("sick-{i}"));
        assert!(Arc::ptr_eq(member, &now), "sick-{i} was evicted");
        assert_eq!(now.state(), State::Open);
    }
    assert_eq!(keys.stats().created, 64 + 1000);
}

#[test]
fn the_sampled_victim_is_the_oldest_of_its_sample() {
    // With keys used again and again, the recently used ones survive far
    // more often than the ones left alone.
    let keys = family("keyed.sampled-lru", 64);
    for i in 0..64 {
        let _ = keys.get(&format!("old-{i}"));
    }
    let hot: Vec<String> = (0..32).map(|i| format!("old-{i}")).collect();
    for round in 0..16 {
        for k in &hot {
            let _ = keys.lease(k.as_str());
        }
        let _ = keys.lease(&format!("new-{round}"));
    }
    let names: Vec<String> = keys.members().iter().map(|m| m.name().to_owned()).collect();
    let hot_kept = hot
        .iter()
        .filter(|k| names.contains(&format!("keyed.sampled-lru[{k}]")))
        .count();
    // 16 evictions out of 64: picking blindly would evict about 8 hot keys.
    assert!(hot_kept >= 30, "{hot_kept} of 32 hot keys kept: {names:?}");
}

/// A member with a call in flight is never evicted: the call's outcome and
/// the key's concurrency limit stay with the key. Here `max_keys = 1`: the
/// key with a call in flight keeps its place, its second call is refused by
/// its own full bulkhead, and the in-flight failure opens its breaker.
#[test]
fn a_member_with_a_call_in_flight_is_never_evicted() {
    let keys: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.in-flight")
            .threshold(1)
            .recovery(Duration::from_secs(30))
            .max_keys(1),
    )
    .max_concurrent(1)
    .build()
    .unwrap();
    let held = keys.lease("one");
    let place = failfast_runtime::__private::enter_member(&held).expect("a place");
    let permit = held.acquire().expect("closed");
    // Other keys: no room, and "one" may not be evicted.
    for i in 0..100 {
        let other = keys.lease(&format!("other-{i}"));
        assert_eq!(other.name(), "keyed.in-flight[*]");
    }
    assert_eq!((keys.stats().evicted, keys.stats().unstored), (0, 100));
    let again = keys.lease("one");
    assert!(std::ptr::eq::<Member>(&*again, &*held), "the same member");
    assert!(
        failfast_runtime::__private::enter_member(&again).is_none(),
        "its limit holds"
    );
    permit.record(failfast_runtime::Outcome::Failure);
    drop(place);
    assert_eq!(again.state(), State::Open, "the in-flight failure counted");
    assert!(keys.lease("one").acquire().is_err());
}

/// `max_keys = 8`, key 0 hangs (its lease and permit held) while 100 calls
/// go to other keys: key 0 keeps its breaker, and its failure counts there.
#[test]
fn a_hanging_call_keeps_its_key_through_churn() {
    let keys = family("keyed.hang", 8);
    let hanging = keys.lease("0");
    let permit = hanging.acquire().expect("closed");
    for i in 1..=100 {
        let _ = keys.lease(&format!("{i}")).call(|| Ok::<_, ()>(()));
    }
    assert!(keys.stats().evicted > 0);
    assert!(keys.members().iter().any(|m| m.name() == "keyed.hang[0]"));
    permit.record(failfast_runtime::Outcome::Failure);
    drop(hanging);
    assert_eq!(keys.get("0").snapshot().failures, 1);
}

#[test]
fn leases_on_two_threads_sharing_keys_while_a_third_evicts() {
    let keys = family("keyed.race", 8);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2 {
            let (keys, stop) = (&keys, &stop);
            s.spawn(move || {
                let mut calls = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || calls < 10_000 {
                    let key = ["x", "y", "z"][(calls % 3) as usize];
                    let lease = keys.lease(key);
                    assert_eq!(lease.name(), format!("keyed.race[{key}]"), "thread {t}");
                    assert!(lease.call(|| Ok::<_, ()>(())).is_ok());
                    calls += 1;
                }
            });
        }
        for i in 0..20_000 {
            let _ = keys.lease(&format!("churn-{i}"));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(keys.stats().evicted > 0);
}

#[test]
fn a_lease_is_send_and_sync() {
    fn shareable<T: Send + Sync>(_: &T) {}
    let keys = family("keyed.send", 4);
    let lease = keys.lease("k");
    shareable(&lease);
    let unstored = {
        let all_open: Family<String> = Family::builder(
            Breaker::builder()
                .name("keyed.send-unstored")
                .threshold(1)
                .recovery(Duration::from_secs(3600))
                .max_keys(1),
        )
        .build()
        .unwrap();
        let _ = all_open.get("a").call(|| Err::<(), _>("down"));
        let lease = all_open.lease("b");
        assert_eq!(all_open.stats().unstored, 1);
        assert_eq!(lease.name(), "keyed.send-unstored[*]");
        lease.state()
    };
    assert_eq!(unstored, State::Closed);
}

#[test]
fn a_family_no_larger_than_the_sample_evicts_exactly_its_least_recently_used_key() {
    // Eight keys or fewer are all looked at: the victim is the true least
    // recently used, every time.
    let keys = family("keyed.exact-lru", 8);
    let key_of = |name: &str| name["keyed.exact-lru[".len()..name.len() - 1].to_owned();
    for i in 0..8 {
        let _ = keys.get(&format!("k{i}"));
    }
    for round in 0..20 {
        // Use every key but one, in an order that changes each round. Use
        // is recorded at insertion granularity, so the one left alone is
        // not the key inserted last (used "now" as far as eviction knows).
        let mut held: Vec<String> = keys.members().iter().map(|m| key_of(m.name())).collect();
        held.sort();
        let last = format!("new-{}", round as i64 - 1);
        let candidates: Vec<usize> = (0..held.len()).filter(|&i| held[i] != last).collect();
        let spared = held.remove(candidates[(round * 3) % candidates.len()]);
        held.rotate_left(round % 7);
        for key in &held {
            let _ = keys.lease(key.as_str());
        }
        let _ = keys.lease(&format!("new-{round}"));
        let names: Vec<String> = keys.members().iter().map(|m| key_of(m.name())).collect();
        assert!(
            !names.contains(&spared),
            "round {round}: {spared} was the least recently used: {names:?}"
        );
        assert_eq!(names.len(), 8);
    }
    assert_eq!(keys.stats().evicted, 20);
}

#[test]
fn a_new_key_evicts_an_idle_one_rather_than_the_last_new_key() {
    // Past the sample size the sample is drawn at random, afresh for every
    // eviction: the idle keys, older than every new one, are what goes. A
    // sample that kept landing on the same slots would evict each new key
    // with the next. Several families, each seeded on its own.
    for family_no in 0..8 {
        let keys = family("keyed.fresh", 64);
        for i in 0..64 {
            let _ = keys.get(&format!("idle-{i}"));
        }
        for round in 0..24 {
            let _ = keys.lease(&format!("new-{round}"));
        }
        let names: Vec<String> = keys.members().iter().map(|m| m.name().to_owned()).collect();
        let new_kept = (0..24)
            .filter(|r| names.contains(&format!("keyed.fresh[new-{r}]")))
            .count();
        // Each eviction misses every idle key only if all 8 samples land on
        // new ones: rare while most of the family is idle.
        assert!(
            new_kept >= 20,
            "family {family_no}: {new_kept} of 24 new keys kept: {names:?}"
        );
    }
}

#[test]
fn leases_from_more_threads_than_stripes() {
    // Every thread gets a stripe, however many threads there are, and each
    // lease's count comes off the stripe it went on.
    let keys = family("keyed.threads", 4);
    let member = keys.get("shared");
    let weak = Arc::downgrade(&member);
    drop(member);
    std::thread::scope(|s| {
        for _ in 0..40 {
            s.spawn(|| {
                for _ in 0..100 {
                    let lease = keys.lease("shared");
                    assert_eq!(lease.call(|| Ok::<_, ()>(1)).ok(), Some(1));
                }
            });
        }
    });
    // Evicted now, and freed: no stripe was left counting a lease.
    for i in 0..10_000 {
        let _ = keys.lease(&format!("other-{i}"));
        if weak.upgrade().is_none() {
            return;
        }
    }
    panic!("an evicted member with every lease dropped was never freed");
}

#[test]
fn a_lease_shows_its_member_in_debug_output() {
    let keys = family("keyed.debug", 4);
    let lease = keys.lease("db-1");
    assert_eq!(
        format!("{lease:?}"),
        r#"Lease { member: "keyed.debug[db-1]" }"#
    );
}

/// Replicas that died while Open (20 keys failing once, never called
/// again) fill a family of 16; 10,000 new keys later, a sick new key is
/// still protected: it shares the overflow breaker, which its failures
/// open. Once the dead members have been left alone for their trial lease
/// past their open time, they are evicted and new keys get breakers of
/// their own again.
#[test]
fn abandoned_open_members_never_leave_new_keys_unprotected() {
    let clock = ManualClock::new();
    let keys: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.abandoned")
            .threshold(1)
            .recovery(Duration::from_millis(10))
            .clock(clock.clone())
            .max_keys(16),
    )
    .build()
    .unwrap();
    for i in 0..20 {
        let _ = keys
            .lease(&format!("dead-{i}"))
            .call(|| Err::<(), _>("down"));
    }
    for i in 0..10_000 {
        let _ = keys.lease(&format!("new-{i}")).call(|| Ok::<_, ()>(()));
    }
    let mut ran = 0;
    for _ in 0..3 {
        let _ = keys.lease("new-bad").call(|| {
            ran += 1;
            Err::<(), _>("down")
        });
    }
    // The four dead keys beyond 16 already opened the overflow breaker
    // (threshold 1): `new-bad` is refused at once; it would have opened it
    // on its first failure otherwise.
    assert!(ran <= 1, "new-bad ran {ran} times");
    assert_eq!(keys.lease("new-bad").state(), State::Open);
    assert_eq!(keys.stats().stored, 16);
    // The default trial lease is 60 s: past it, the dead members go.
    clock.advance(Duration::from_secs(61));
    let fresh = keys.lease("fresh");
    assert_eq!(fresh.name(), "keyed.abandoned[fresh]");
    assert!(keys.stats().evicted >= 1);
    assert_eq!(fresh.state(), State::Closed);
}

/// Keys the family has no room for share the overflow breaker's bulkhead:
/// `max_concurrent` still holds for them (shared, so stricter, never
/// looser), on real threads.
#[test]
fn keys_without_room_keep_the_concurrency_limit() {
    let keys: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.overflow-limit")
            .threshold(1)
            .recovery(Duration::from_secs(3600))
            .max_keys(2),
    )
    .max_concurrent(1)
    .build()
    .unwrap();
    for k in ["x", "y"] {
        let _ = keys.lease(k).call(|| Err::<(), _>("down"));
    }
    let running = std::sync::atomic::AtomicUsize::new(0);
    let most = std::sync::atomic::AtomicUsize::new(0);
    let barrier = Barrier::new(4);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (keys, running, most, barrier) = (&keys, &running, &most, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..200 {
                    let lease = keys.lease(&format!("new-{t}-{i}"));
                    let Some(_place) = failfast_runtime::__private::enter_member(&lease) else {
                        continue;
                    };
                    let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    std::thread::yield_now();
                    running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(most.into_inner(), 1);
    assert_eq!(keys.stats().unstored, 800);
}

/// Two tuple keys never share a name: each part's `,` and `\` are escaped.
/// A key labelled `*` is told apart from the overflow breaker.
#[test]
fn two_keys_never_share_a_name() {
    let pairs: Family<(String, String)> = Family::builder(Breaker::builder().name("keyed.pairs"))
        .build()
        .unwrap();
    let one = pairs.get(&("a, b", "c"));
    let two = pairs.get(&("a", "b, c"));
    assert_ne!(one.name(), two.name());
    assert_eq!(one.name(), r"keyed.pairs[a\, b, c]");
    assert_eq!(two.name(), r"keyed.pairs[a, b\, c]");
    let slash = pairs.get(&(r"a\", "b"));
    assert_eq!(slash.name(), r"keyed.pairs[a\\, b]");
    let stars: Family<String> = Family::builder(Breaker::builder().name("keyed.star"))
        .build()
        .unwrap();
    assert_eq!(stars.get("*").name(), r"keyed.star[\*]");
    assert_eq!(stars.get("**").name(), "keyed.star[**]");
}

/// A member can be named before its key's first call: forced open there,
/// the first call with that key is refused; its name is the key's.
#[test]
fn a_key_can_be_forced_open_before_its_first_call() {
    let keys: Family<String> = Family::builder(Breaker::builder().name("keyed.early").max_keys(4))
        .build()
        .unwrap();
    registry::register(&keys);
    assert!(
        registry::get("keyed.early[10.0.0.3]").is_none(),
        "no call yet"
    );
    let family = registry::family("keyed.early").unwrap();
    let early = family.member("10.0.0.3").expect("made on demand");
    assert_eq!(early.name(), "keyed.early[10.0.0.3]");
    assert!(registry::get("keyed.early[10.0.0.3]").is_some(), "waiting");
    early.set_mode(Mode::ForcedOpen);
    assert!(
        keys.lease("10.0.0.3").call(|| Ok::<_, ()>(())).is_err(),
        "refused"
    );
    assert!(keys.lease("10.0.0.1").call(|| Ok::<_, ()>(())).is_ok());
    let adopted = keys.get("10.0.0.3");
    assert_eq!(adopted.snapshot().mode, failfast_runtime::Mode::ForcedOpen);
    assert_eq!(adopted.name(), "keyed.early[10.0.0.3]");
    assert_eq!(keys.stats().stored, 2);
    // The overflow breaker's label is not a key's.
    assert!(family.member("*").is_none());
}

/// A family is configured by its name: every member now and every member
/// made later gets the change; one that refuses it leaves all unchanged.
#[test]
fn a_family_is_reconfigured_for_its_members_now_and_later() {
    let keys: Family<String> = Family::builder(Breaker::builder().name("keyed.tuned").threshold(5))
        .build()
        .unwrap();
    registry::register(&keys);
    let before = keys.get("a");
    let family = registry::family("keyed.tuned").unwrap();
    family
        .reconfigure(&Breaker::builder().threshold(2))
        .unwrap();
    assert_eq!(before.config().threshold(), 2);
    assert_eq!(keys.get("b").config().threshold(), 2, "a member made later");
    assert_eq!(family.config().threshold(), 2);
    // The typed family is the same family: it reads the settings in force.
    assert_eq!(keys.config().threshold(), 2);
    assert_eq!(
        format!("{family:?}"),
        r#"FamilyRef { name: "keyed.tuned", .. }"#
    );
    let refused = family
        .reconfigure(&Breaker::builder().trial_calls(0))
        .unwrap_err();
    assert_eq!(refused.name(), "keyed.tuned");
    assert_eq!(keys.get("c").config().threshold(), 2);
    // And it is reconfigured as the registry's handle is, without it.
    keys.reconfigure(&Breaker::builder().threshold(7)).unwrap();
    assert_eq!(family.config().threshold(), 7);
    assert_eq!(before.config().threshold(), 7);
}

/// A member whose settings were changed by its own name is kept through
/// churn, so the change is not lost with it.
#[test]
fn a_member_tuned_by_name_is_not_evicted() {
    let keys = family("keyed.pinned", 2);
    registry::register(&keys);
    registry::family("keyed.pinned")
        .unwrap()
        .member("special")
        .unwrap()
        .reconfigure(&Breaker::builder().threshold(9))
        .unwrap();
    let _ = keys.lease("special").call(|| Ok::<_, ()>(()));
    for i in 0..100 {
        let _ = keys.lease(&format!("churn-{i}")).call(|| Ok::<_, ()>(()));
    }
    assert!(keys.stats().evicted > 0);
    assert_eq!(keys.get("special").config().threshold(), 9);
}

/// The replicas `failover` offers, in the order a full run gives them,
/// sorted: which ones, whatever the rotation.
fn offered(family: &FamilyRef, labels: &[&str]) -> Vec<String> {
    let mut up: Vec<String> = family.failover(labels).map(|l| (*l).to_owned()).collect();
    up.sort();
    up
}

/// Failing over: the replicas offered are those whose breaker would let a
/// call through now; asking creates nothing.
#[test]
fn failover_skips_the_replicas_that_would_refuse() {
    let clock = ManualClock::new();
    let replicas: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.failover")
            .threshold(1)
            .recovery(Duration::from_secs(10))
            .clock(clock.clone()),
    )
    .build()
    .unwrap();
    let all = ["a", "b", "c", "d", "new"];
    for k in ["a", "b", "c", "d"] {
        let _ = replicas.get(k).call(|| Ok::<_, ()>(()));
    }
    let _ = replicas.get("b").call(|| Err::<(), _>("down"));
    replicas.get("d").set_mode(Mode::ForcedOpen);
    for _ in 0..all.len() {
        let first = *replicas.failover(&all).next().unwrap();
        assert!(!["b", "d"].contains(&first), "{first}");
    }
    assert_eq!(offered(&replicas, &all), ["a", "c", "new"]);
    assert_eq!(replicas.stats().stored, 4, "asking made no breaker");
    // The family's handle asks by label, as for a family whose key type is
    // not at hand.
    let handle: &FamilyRef = &replicas;
    assert_eq!(offered(handle, &all), ["a", "c", "new"]);
    assert_eq!(
        handle.stats().stored,
        4,
        "asking by label made no breaker either"
    );
    // Past b's open time, a call would be its trial: offered again, until
    // the trial is taken.
    clock.advance(Duration::from_secs(10));
    assert_eq!(offered(&replicas, &all), ["a", "b", "c", "new"]);
    let b = replicas.get("b");
    let trial = b.acquire().expect("the trial");
    assert!(trial.is_trial());
    assert_eq!(offered(&replicas, &all), ["a", "c", "new"]);
    trial.record(failfast_runtime::Outcome::Success);
    assert_eq!(replicas.failover(&all).count(), 4, "b closed again");
    // A replica forced open by name before its first call is skipped too.
    handle.member("later").unwrap().set_mode(Mode::ForcedOpen);
    assert_eq!(offered(&replicas, &["later", "new"]), ["new"]);
    // Observe-only and forced closed let every call through, whatever the
    // state: offered, open or not.
    let watched = replicas.get("watched");
    watched.set_mode(Mode::ObserveOnly);
    let _ = watched.call(|| Err::<(), _>("down"));
    assert_eq!(watched.state(), State::Open);
    let kept = replicas.get("kept");
    let _ = kept.call(|| Err::<(), _>("down"));
    kept.set_mode(Mode::ForcedClosed);
    assert_eq!(
        offered(&replicas, &["watched", "kept"]),
        ["kept", "watched"]
    );
}

/// A half-open replica is offered while it has a trial slot free, though
/// another trial's lease runs, and no longer once every slot is taken.
#[test]
fn failover_offers_a_half_open_replica_while_a_trial_slot_is_free() {
    let clock = ManualClock::new();
    let replicas = on_clock(
        &clock,
        Breaker::builder()
            .name("keyed.failover-trials")
            .threshold(1)
            .recovery(Duration::from_secs(10))
            .trial_calls(2),
    );
    let b = replicas.get("b");
    let _ = b.call(|| Err::<(), _>("down"));
    clock.advance(Duration::from_secs(10));
    let first = b.acquire().expect("a first trial");
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(offered(&replicas, &["b"]), ["b"], "a trial slot is free");
    let second = b.acquire().expect("a second trial");
    assert!(offered(&replicas, &["b"]).is_empty(), "both slots taken");
    first.record(failfast_runtime::Outcome::Success);
    second.record(failfast_runtime::Outcome::Success);
}

/// Each pick takes the next turn, and one more for each sick replica it
/// lands on: the replicas that take calls are each first in turn, equally
/// often, the one after a sick replica no more often than the others.
#[test]
fn failover_rotates_among_the_replicas_that_take_calls() {
    let replicas = family("keyed.failover-turns", 8);
    let all = ["a", "b", "c", "d"];
    let firsts = |n: usize| -> Vec<&str> {
        (0..n)
            .map(|_| *replicas.failover(&all).next().unwrap())
            .collect()
    };
    let start = firsts(1)[0];
    let at = all.iter().position(|l| *l == start).unwrap();
    let expected: Vec<&str> = (1..=8).map(|i| all[(at + i) % 4]).collect();
    assert_eq!(firsts(8), expected, "round robin");
    // The rest of a pick is every other replica, each once, in turn.
    let whole: Vec<&str> = replicas.failover(&all).copied().collect();
    let at = all.iter().position(|l| *l == whole[0]).unwrap();
    let expected: Vec<&str> = (0..4).map(|i| all[(at + i) % 4]).collect();
    assert_eq!(whole, expected);

    trip(&replicas, "b");
    trip(&replicas, "c");
    let picks = firsts(60);
    for sick in ["b", "c"] {
        assert!(!picks.contains(&sick), "{sick} offered first: {picks:?}");
    }
    let a = picks.iter().filter(|p| **p == "a").count();
    assert_eq!(a, 30, "a and d alternate: {picks:?}");
    for pair in picks.windows(2) {
        assert_ne!(pair[0], pair[1], "{picks:?}");
    }
}

/// Picks made on several threads at once share the family's rotation:
/// with every replica taking calls each is first exactly as often (each
/// pick takes its own turn), and with one sick it is never first while
/// the others stay within 10 % of even (the one after it is not favoured).
#[test]
fn failover_picks_on_many_threads_share_one_rotation() {
    const THREADS: usize = 4;
    const PICKS: usize = 3_000;
    let replicas = family("keyed.failover-threads", 8);
    let count = |all: &'static [&'static str]| -> std::collections::HashMap<&'static str, usize> {
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (replicas, start) = (replicas.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    (0..PICKS)
                        .map(|_| *replicas.failover(all).next().unwrap())
                        .collect::<Vec<&'static str>>()
                })
            })
            .collect();
        let mut counts = std::collections::HashMap::new();
        for thread in threads {
            for pick in thread.join().unwrap() {
                *counts.entry(pick).or_default() += 1;
            }
        }
        counts
    };
    let all: &'static [&'static str] = &["a", "b", "c"];
    let counts = count(all);
    for replica in all {
        assert_eq!(counts[replica], THREADS * PICKS / 3, "{counts:?}");
    }

    let four: &'static [&'static str] = &["a", "b", "c", "d"];
    trip(&replicas, "b");
    let counts = count(four);
    assert!(!counts.contains_key("b"), "{counts:?}");
    let even = THREADS * PICKS / 3;
    for replica in ["a", "c", "d"] {
        let n = counts[replica];
        assert!(n.abs_diff(even) < even / 10, "{replica}: {counts:?}");
    }
}

/// With an ejection budget, no more than its share of the replicas given
/// is left out: those refusing beyond it are still offered, after the
/// ones that take calls; without one, every refusing replica is left out.
#[test]
fn failover_offers_the_replicas_beyond_the_ejection_budget() {
    let budgeted: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.failover-budget")
            .threshold(1)
            .max_ejection_percent(50),
    )
    .build()
    .unwrap();
    let all = ["a", "b", "c", "d"];
    for replica in ["a", "b", "c"] {
        // Forced opens are not held back by the family's budget.
        budgeted.get(replica).set_mode(Mode::ForcedOpen);
    }
    // 50 % of four: two may be left out, the first two refusing (a, b).
    for _ in 0..4 {
        assert_eq!(
            budgeted.failover(&all).copied().collect::<Vec<_>>(),
            ["d", "c"]
        );
    }
    budgeted.get("d").set_mode(Mode::ForcedOpen);
    assert_eq!(
        budgeted.failover(&all).copied().collect::<Vec<_>>(),
        ["c", "d"]
    );
    // Within the budget, the refusing ones are left out.
    for replica in ["a", "b", "c"] {
        budgeted.get(replica).set_mode(Mode::Normal);
    }
    assert_eq!(offered(&budgeted, &all), ["a", "b", "c"]);
    // At least one may always be left out: 50 % of one replica.
    assert_eq!(budgeted.failover(&["d"]).count(), 0);

    let unbounded = family("keyed.failover-no-budget", 8);
    for replica in all {
        unbounded.get(replica).set_mode(Mode::ForcedOpen);
    }
    assert_eq!(unbounded.failover(&all).count(), 0, "no budget: none");
    assert_eq!(unbounded.failover(&[] as &[&str]).count(), 0);
}

/// The whole family's mode, as one: every member held, one asked for by
/// name before its first call, the overflow breaker and every member made
/// later; and back to normal.
#[test]
fn a_whole_family_is_forced_open_and_closed_as_one() {
    let keys = family("keyed.family-mode", 2);
    trip(&keys, "a");
    let _ = keys.get("b");
    let named = keys.member("named").unwrap();
    keys.reconfigure(&Breaker::builder().mode(Mode::ForcedClosed))
        .unwrap();
    let every = |state: State| {
        for member in keys.members() {
            assert_eq!(member.state(), state, "{}", member.name());
        }
        assert_eq!(named.state(), state, "asked for by name");
    };
    every(State::Closed);
    for _ in 0..3 {
        assert!(keys.get("a").call(|| Err::<(), _>("down")).is_err());
    }
    every(State::Closed);
    keys.reconfigure(&Breaker::builder().mode(Mode::ForcedOpen))
        .unwrap();
    every(State::Open);
    // A key made now (the family is full and may not evict: the overflow
    // breaker), and once room frees up, a member of its own: both open.
    assert_eq!(keys.get("c").name(), "keyed.family-mode[*]");
    assert_eq!(keys.get("c").state(), State::Open);
    assert!(keys.get("c").call(|| Ok::<_, ()>(())).is_err());
    keys.reconfigure(&Breaker::builder().mode(Mode::Normal))
        .unwrap();
    every(State::Closed);
    let _ = keys.get("d");
    assert!(keys.get("d").call(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(keys.get("d").snapshot().mode, Mode::Normal);
    // By the family's name, as a configuration file or an operator does.
    registry::register(&keys);
    failfast_runtime::configure::apply(
        "keyed.family-mode",
        Breaker::builder().mode(Mode::ForcedOpen),
    )
    .unwrap();
    every(State::Open);
    assert_eq!(keys.config().threshold(), 2, "the settings stay");
}

/// A lease taken while its member is being picked for eviction either keeps
/// the member or waits for the key's new one: whatever the interleaving, the
/// member a lease holds is stored in the family for as long as the lease
/// lives. Two threads lease three hot keys and look, under each lease, for
/// their member among the stored ones while a third thread churns new keys
/// through a family with room for four.
#[test]
fn a_lease_never_holds_an_evicted_member() {
    let keys = family("keyed.held", 4);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let strays = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (keys, stop, strays) = (&keys, &stop, &strays);
            s.spawn(move || {
                let mut calls = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || calls < 2_000 {
                    let key = ["x", "y", "z"][(calls % 3) as usize];
                    let lease = keys.lease(key);
                    let stored = keys
                        .members()
                        .iter()
                        .any(|member| std::ptr::eq(&**member, &*lease));
                    if !stored {
                        strays.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    drop(lease);
                    calls += 1;
                }
            });
        }
        for i in 0..50_000 {
            let _ = keys.lease(&format!("churn-{i}"));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(keys.stats().evicted > 0);
    assert_eq!(strays.into_inner(), 0, "leases that held an evicted member");
}

fn budgeted(name: &'static str, percent: u8) -> Family<String> {
    Family::builder(
        Breaker::builder()
            .name(name)
            .threshold(1)
            .max_ejection_percent(percent),
    )
    .build()
    .unwrap()
}

/// The ejection budget holds back a trip from Closed once its share of the
/// stored members is Open or HalfOpen, counts each one held back, and lets
/// a member trip again once another closed.
#[test]
fn the_ejection_budget_keeps_a_share_of_the_members_closed() {
    let clock = failfast_runtime::ManualClock::new();
    let keys: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.budget")
            .threshold(1)
            .recovery(std::time::Duration::from_secs(1))
            .clock(clock.clone())
            .max_ejection_percent(40),
    )
    .build()
    .unwrap();
    let all: Vec<String> = (0..5).map(|i| format!("r{i}")).collect();
    for key in &all {
        assert!(keys.get(key.as_str()).call(|| Ok::<_, ()>(())).is_ok());
    }
    for key in &all {
        let _ = keys.get(key.as_str()).call(|| Err::<(), _>("down"));
    }
    // 40 % of 5: two open, three kept Closed and still called.
    let states: Vec<State> = all.iter().map(|k| keys.get(k.as_str()).state()).collect();
    assert_eq!(
        states,
        [
            State::Open,
            State::Open,
            State::Closed,
            State::Closed,
            State::Closed
        ]
    );
    assert_eq!(keys.stats().spared, 3);
    let called = std::sync::atomic::AtomicU32::new(0);
    let _ = keys.get("r4").call(|| {
        called.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Err::<(), _>("down")
    });
    assert_eq!(called.into_inner(), 1);
    assert_eq!(keys.stats().spared, 4);
    // A failed trial reopens whatever the budget: it was already ejected.
    clock.advance(std::time::Duration::from_secs(1));
    let _ = keys.get("r0").call(|| Err::<(), _>("still down"));
    assert_eq!(keys.get("r0").state(), State::Open);
    assert_eq!(keys.stats().spared, 4);
    // `r1` recovers: the budget has room again, and `r4` trips.
    assert!(keys.get("r1").call(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(keys.get("r1").state(), State::Closed);
    let _ = keys.get("r4").call(|| Err::<(), _>("down"));
    assert_eq!(keys.get("r4").state(), State::Open);
    assert_eq!(keys.stats().spared, 4);
}

/// Without a budget every member may open; a budget of one percent still
/// lets one open; a budget out of range is refused.
#[test]
fn an_ejection_budget_lets_at_least_one_member_open_and_is_checked() {
    let open_all = |keys: &Family<String>| {
        for key in ["a", "b", "c"] {
            let _ = keys.get(key).call(|| Ok::<_, ()>(()));
        }
        for key in ["a", "b", "c"] {
            let _ = keys.get(key).call(|| Err::<(), _>("down"));
        }
        ["a", "b", "c"]
            .iter()
            .filter(|k| keys.get(**k).state() == State::Open)
            .count()
    };
    assert_eq!(open_all(&budgeted("keyed.budget100", 100)), 3);
    let unbudgeted = Family::builder(Breaker::builder().name("keyed.nobudget").threshold(1));
    assert_eq!(open_all(&unbudgeted.build().unwrap()), 3);
    assert_eq!(open_all(&budgeted("keyed.budget1", 1)), 1);
    assert_eq!(open_all(&budgeted("keyed.budget67", 67)), 2);
    for percent in [0, 101] {
        let error = Family::<String>::builder(
            Breaker::builder()
                .name("keyed.badbudget")
                .max_ejection_percent(percent),
        )
        .build()
        .unwrap_err();
        assert_eq!(error.key(), "max_ejection_percent", "{percent}");
    }
}

/// The budget counts what its stored members are, on every way in and
/// out: an Open member evicted (left alone past its trial lease) gives its
/// room to the rest, a member forced open by name before its first call
/// takes room once stored, and a family forced open and back to normal by
/// a reconfiguration gives back all it took.
#[test]
fn the_budget_counts_members_stored_evicted_and_reconfigured() {
    let clock = ManualClock::new();
    let keys = on_clock(
        &clock,
        leased("keyed.budget.kept", Duration::from_secs(1), 4).max_ejection_percent(25),
    );
    let fail = |key: &str| {
        let _ = keys.get(key).call(|| Err::<(), _>("down"));
        keys.get(key).state()
    };
    // `a`, first in and open, is the least recently used once left alone.
    assert_eq!(fail("a"), State::Open);
    for key in ["b", "c", "d"] {
        assert!(keys.get(key).call(|| Ok::<_, ()>(())).is_ok());
    }
    assert_eq!(fail("b"), State::Closed, "room for one of four");
    clock.advance(Duration::from_secs(62));
    let _ = keys.get("e");
    assert_eq!(keys.stats().evicted, 1);
    assert!(
        keys.members()
            .iter()
            .all(|m| m.name() != "keyed.budget.kept[a]")
    );
    assert_eq!(fail("b"), State::Open, "the evicted one gave its room back");
    keys.get("b").set_mode(Mode::Normal);

    // Forced open by name before its key's first call: counted once stored.
    let early = keys.member("f").expect("made on demand");
    early.set_mode(Mode::ForcedOpen);
    assert_eq!(fail("c"), State::Open, "not stored yet: not counted");
    keys.get("c").set_mode(Mode::Normal);
    let _ = keys.get("f");
    assert_eq!(fail("c"), State::Closed, "stored, and counted");
    keys.get("f").set_mode(Mode::Normal);

    let all_forced = Breaker::builder().mode(Mode::ForcedOpen);
    keys.reconfigure(&all_forced).unwrap();
    let normal = Breaker::builder().mode(Mode::Normal);
    keys.reconfigure(&normal).unwrap();
    assert_eq!(fail("c"), State::Open, "all given back");
    assert_eq!(fail("d"), State::Closed, "and only that");
}

/// Two members tripping at the same moment share one budget. Each of 16
/// families of four has room for one open member (25 %); two threads, on
/// two CPUs, go through the families side by side, meeting before each one
/// and then failing their own member of it at once; after each pass every
/// family has exactly one member open, and both are closed again for the
/// next. Two open would be the budget overspent (read, then tripped on, by
/// both); none, room lost (the closes give back exactly what the trips
/// took).
#[test]
fn members_tripping_at_once_never_overspend_the_budget() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    const PASSES: usize = 500;
    let families: Vec<Family<String>> =
        (0..16).map(|_| budgeted("keyed.budget.race", 25)).collect();
    let members: Vec<[Arc<Member>; 4]> = families
        .iter()
        .map(|keys| ["a", "b", "c", "d"].map(|key| keys.get(key)))
        .collect();
    let arrived = AtomicUsize::new(0);
    let passed = Barrier::new(3);
    let (mut overspent, mut lost) = (0, 0);
    std::thread::scope(|s| {
        for mine in 0..2 {
            let (arrived, passed, members) = (&arrived, &passed, &members);
            s.spawn(move || {
                pin(mine);
                let mut race = 0;
                for _ in 0..PASSES {
                    for family in members {
                        race += 1;
                        arrived.fetch_add(1, Ordering::AcqRel);
                        let mut spins = 0_u32;
                        while arrived.load(Ordering::Acquire) < 2 * race {
                            spins += 1;
                            if spins < 1 << 12 {
                                std::hint::spin_loop();
                            } else {
                                std::thread::yield_now();
                            }
                        }
                        let _ = family[mine].call(|| Err::<(), _>("down"));
                    }
                    // The families are checked and closed meanwhile.
                    passed.wait();
                    passed.wait();
                }
            });
        }
        for _ in 0..PASSES {
            passed.wait();
            for family in &members {
                match family.iter().filter(|m| m.state() != State::Closed).count() {
                    1 => {}
                    0 => lost += 1,
                    _ => overspent += 1,
                }
                for member in &family[..2] {
                    member.set_mode(Mode::Normal);
                }
            }
            passed.wait();
        }
    });
    let races = PASSES * members.len();
    assert_eq!(
        (overspent, lost),
        (0, 0),
        "of {races} races, those that left two members open, and none"
    );
    let spared: u64 = families.iter().map(|keys| keys.stats().spared).sum();
    assert_eq!(spared, races as u64, "one trip held back per race");
}

/// Keeps the calling thread on the `n`th CPU the process may run on
/// (Linux), so that two threads racing each other run at the same time
/// rather than by turns on one CPU. With fewer CPUs, the thread stays
/// where it was.
#[cfg(target_os = "linux")]
fn pin(n: usize) {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; the calls read and write
    // `size_of` bytes of the sets given, and `CPU_ISSET`/`CPU_SET` stay
    // within `CPU_SETSIZE`.
    #[allow(unsafe_code)]
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return;
        }
        let Some(cpu) = (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &allowed))
            .nth(n)
        else {
            return;
        };
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, size, &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin(_n: usize) {}

/// A family's reconfiguration racing insertions of new keys, and members
/// asked for by name before their key's first call, always finishes: the
/// family takes its locks in one order (its insertion lock, then the
/// members asked for by name, then its settings). A reconfiguration once
/// held the settings and then took the insertion lock while an insertion
/// held the insertion lock and then took the settings: each waited for
/// the other for good.
///
/// Three threads race for `ROUNDS` rounds; a deadlock never ends, so the
/// test waits 60 s at most (far longer than the race takes) and then
/// fails, leaving the stuck threads behind. A deadlock detector, not a
/// timing assertion.
#[test]
fn a_reconfiguration_racing_new_keys_never_deadlocks() {
    const ROUNDS: usize = 3_000;
    let keys: Family<String> = Family::builder(
        Breaker::builder()
            .name("keyed.lock-order")
            .threshold(5)
            .max_keys(16),
    )
    .build()
    .unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let start = Arc::new(Barrier::new(3));
    let racers: [fn(&Family<String>, usize); 3] = [
        |keys, round| {
            let threshold = 2 + (round % 5) as u32;
            keys.reconfigure(&Breaker::builder().threshold(threshold))
                .unwrap();
        },
        // New keys, evicting idle ones once 16 are stored.
        |keys, round| {
            let _ = keys.lease(&format!("new-{round}")).call(|| Ok::<_, ()>(()));
        },
        // A key asked for by name, then adopted by its first call.
        |keys, round| {
            let label = format!("named-{round}");
            let _ = keys.member(&label);
            let _ = keys.lease(&label).call(|| Ok::<_, ()>(()));
        },
    ];
    for race in racers {
        let (keys, done, start) = (keys.clone(), done.clone(), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            for round in 0..ROUNDS {
                race(&keys, round);
            }
            let _ = done.send(());
        });
    }
    let limit = std::time::Instant::now() + Duration::from_secs(60);
    for _ in 0..3 {
        let left = limit.saturating_duration_since(std::time::Instant::now());
        assert!(
            finished.recv_timeout(left).is_ok(),
            "a reconfiguration and insertions still waiting for each other after 60 s: a lock-order deadlock"
        );
    }
    assert_eq!(keys.config().threshold(), 2 + ((ROUNDS - 1) % 5) as u32);
    assert!(keys.stats().evicted > 0);
}

/// A member is found by its label (the registry's `family[label]`,
/// `member`, `callable`) exactly while it is stored, through the family's
/// index of labels: the same breaker as its key's, none once it is
/// evicted, and a key whose label is `*` under its escaped name.
#[test]
fn a_member_is_found_by_its_label_while_it_is_stored() {
    let keys = family("keyed.labels", 2);
    registry::register(&keys);
    let a = keys.get("a");
    let star = keys.get("*");
    let found = |name: &str| match registry::get(name) {
        Some(registry::BreakerRef::Member(member)) => Some(member),
        _ => None,
    };
    assert!(Arc::ptr_eq(&found("keyed.labels[a]").unwrap(), &a));
    assert!(Arc::ptr_eq(&found(r"keyed.labels[\*]").unwrap(), &star));
    assert!(
        found("keyed.labels[*]").is_none(),
        "no overflow breaker yet"
    );
    assert!(found("keyed.labels[b]").is_none(), "no breaker for b yet");
    drop((a, star));
    for i in 0..10 {
        let _ = keys.get(&format!("churn-{i}"));
    }
    assert!(found("keyed.labels[a]").is_none(), "evicted");
    assert!(found("keyed.labels[churn-9]").is_some());
    let _ = keys.get("a");
    assert!(Arc::ptr_eq(
        &found("keyed.labels[a]").unwrap(),
        &keys.get("a")
    ));
}
