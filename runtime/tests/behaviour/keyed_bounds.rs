//! A keyed family's bounds changed while it runs: `max_keys` and
//! `max_ejection_percent` through `FamilyRef::reconfigure`,
//! `configure::apply` and the environment, checked whole with the
//! members' settings; what happens to the members already there, with
//! calls on other threads. Time is each family's `ManualClock`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, mpsc};
use std::thread;
use std::time::Duration;

use failfast_runtime::{Breaker, Family, ManualClock, State, configure};

const RECOVERY: Duration = Duration::from_secs(10);

/// A family of `max_keys` on `clock`, tripping on its first failure.
fn family(name: &'static str, clock: &ManualClock, max_keys: usize) -> Family<String> {
    Family::builder(
        Breaker::builder()
            .name(name)
            .threshold(1)
            .recovery(RECOVERY)
            .clock(clock.clone())
            .max_keys(max_keys),
    )
    .build()
    .unwrap()
}

fn touch(f: &Family<String>, key: &str) {
    let _ = f.get(key).call(|| Ok::<_, ()>(()));
}

fn fail(f: &Family<String>, key: &str) -> State {
    let _ = f.get(key).call(|| Err::<(), _>("down"));
    f.get(key).state()
}

/// The labels of the members stored (the overflow breaker left out).
fn stored(f: &Family<String>) -> BTreeSet<String> {
    f.members()
        .iter()
        .map(|m| m.name().to_string())
        .filter(|name| !name.ends_with("[*]"))
        .collect()
}

/// Raised, `max_keys` stores new keys at once, none evicted; the stats
/// show the bound in force.
#[test]
fn a_raised_max_keys_stores_new_keys_at_once() {
    let clock = ManualClock::new();
    let f = family("bounds::raised", &clock, 2);
    for key in ["a", "b", "c"] {
        touch(&f, key);
    }
    assert_eq!((f.stats().stored, f.stats().evicted), (2, 1));
    f.reconfigure(&Breaker::builder().max_keys(4)).unwrap();
    for key in ["d", "e"] {
        touch(&f, key);
    }
    let stats = f.stats();
    assert_eq!((stats.max_keys, stats.stored, stats.evicted), (4, 4, 1));
    touch(&f, "f");
    assert_eq!((f.stats().stored, f.stats().evicted), (4, 2), "full again");
}

/// Lowered below the members stored, the family evicts down to the new
/// bound at once, as far as members may be evicted: the two whose calls
/// are running on other threads (leases held) stay, and while they keep
/// it over the bound no new key is stored (each runs through the overflow
/// breaker). Once one call ends, the next new key finds its member
/// evictable and the family gets down to the bound.
#[test]
fn a_lowered_max_keys_evicts_down_to_it_as_far_as_members_may_be() {
    let clock = ManualClock::new();
    let f = family("bounds::lowered", &clock, 8);
    for i in 0..8 {
        touch(&f, &format!("k{i}"));
    }
    let leased = Barrier::new(3);
    let (end_k0, k0_ends) = mpsc::channel::<()>();
    let (end_k1, k1_ends) = mpsc::channel::<()>();
    thread::scope(|s| {
        let calls: Vec<_> = [("k0", k0_ends), ("k1", k1_ends)]
            .into_iter()
            .map(|(key, ends)| {
                let (f, leased) = (&f, &leased);
                s.spawn(move || {
                    let lease = f.lease(key);
                    leased.wait();
                    // The call runs until the test ends it.
                    let _ = ends.recv();
                    drop(lease);
                })
            })
            .collect();
        leased.wait();
        f.reconfigure(&Breaker::builder().max_keys(3)).unwrap();
        let kept = stored(&f);
        assert_eq!(kept.len(), 3, "{kept:?}");
        assert!(kept.contains("bounds::lowered[k0]") && kept.contains("bounds::lowered[k1]"));
        assert_eq!(f.stats().evicted, 5);

        // Below the two leased members: none other to evict, and the
        // leased ones stay.
        f.reconfigure(&Breaker::builder().max_keys(1)).unwrap();
        let kept = stored(&f);
        assert_eq!(
            kept,
            BTreeSet::from(["bounds::lowered[k0]".into(), "bounds::lowered[k1]".into()])
        );
        assert_eq!(
            f.get("new").name(),
            "bounds::lowered[*]",
            "no room: overflow"
        );
        assert_eq!(f.stats().unstored, 1);

        // The call through k1 ends; within the pause a full family takes
        // before sweeping again, a new key finds no room and k1 stays;
        // past it, the next new key evicts it.
        end_k1.send(()).unwrap();
        let mut calls = calls.into_iter();
        calls.nth(1).unwrap().join().unwrap();
        clock.advance(Duration::from_millis(999));
        assert_eq!(f.get("paused").name(), "bounds::lowered[*]");
        assert_eq!(stored(&f).len(), 2, "not swept within the pause");
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            f.get("newer").name(),
            "bounds::lowered[*]",
            "k0 still leased"
        );
        assert_eq!(
            stored(&f),
            BTreeSet::from(["bounds::lowered[k0]".into()]),
            "k1 evicted"
        );
        drop(end_k0);
    });
    clock.advance(Duration::from_secs(1));
    assert_eq!(f.get("newest").name(), "bounds::lowered[newest]");
    assert_eq!(
        stored(&f),
        BTreeSet::from(["bounds::lowered[newest]".into()])
    );
    let stats = f.stats();
    assert_eq!(stats.created - stats.evicted, stats.stored as u64);
}

/// Four threads take leases of keys from a set larger than every bound
/// while the bound moves down and up: the family never stores more than
/// the bound beyond the members leased at the moment it was lowered, its
/// counts add up, and once the calls stop the next new key brings it
/// within the bound.
#[test]
fn max_keys_moves_while_threads_call() {
    let clock = ManualClock::new();
    let f = family("bounds::moving", &clock, 64);
    let running = AtomicBool::new(true);
    let calls = AtomicUsize::new(0);
    thread::scope(|s| {
        for t in 0..4_u64 {
            let (f, running, calls) = (&f, &running, &calls);
            s.spawn(move || {
                let mut x = t + 1;
                while running.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let lease = f.lease(&format!("k{}", x % 96));
                    assert!(lease.call(|| Ok::<_, ()>(())).is_ok());
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for bound in [8, 48, 4, 64, 8].into_iter().cycle().take(40) {
            f.reconfigure(&Breaker::builder().max_keys(bound)).unwrap();
            // At most one member leased per thread can stay over the bound.
            assert!(f.stats().stored <= bound + 4, "{:?} at {bound}", f.stats());
            let before = calls.load(Ordering::Relaxed);
            while calls.load(Ordering::Relaxed) < before + 50 {
                thread::yield_now();
            }
        }
        running.store(false, Ordering::Relaxed);
    });
    clock.advance(Duration::from_secs(1));
    let _ = f.get("after");
    let stats = f.stats();
    assert!(stats.stored <= 8, "{stats:?}");
    assert_eq!(
        stats.created - stats.evicted,
        stats.stored as u64,
        "{stats:?}"
    );
}

/// Lowered while more members are open than it allows, the budget
/// leaves those open as they are (until they recover) and holds back
/// every new trip, however many threads fail at once; raised, exactly as
/// many more trip as it makes room for.
#[test]
fn a_lowered_budget_keeps_the_open_members_and_holds_back_new_trips() {
    let clock = ManualClock::new();
    let f = family("bounds::budget", &clock, 16);
    let keys: Vec<String> = (0..8).map(|i| format!("r{i}")).collect();
    for key in &keys {
        touch(&f, key);
    }
    for key in &keys[..4] {
        assert_eq!(fail(&f, key), State::Open, "no budget yet");
    }
    f.reconfigure(&Breaker::builder().max_ejection_percent(25))
        .unwrap();
    assert_eq!(f.stats().max_ejection_percent, 25);
    let fail_together = |keys: &[String]| {
        let start = Barrier::new(keys.len());
        thread::scope(|s| {
            for key in keys {
                let (f, start) = (&f, &start);
                s.spawn(move || {
                    start.wait();
                    fail(f, key)
                });
            }
        });
    };
    // 25 % of 8 is 2; four are open.
    fail_together(&keys[4..]);
    let open = |f: &Family<String>| {
        keys.iter()
            .filter(|k| f.get(k.as_str()).state() != State::Closed)
            .count()
    };
    assert_eq!(open(&f), 4, "the open ones stay open, no new one");
    assert_eq!(f.stats().spared, 4);
    // One recovers: three open, still over the budget.
    clock.advance(RECOVERY);
    touch(&f, &keys[0]);
    assert_eq!(f.get(&keys[0]).state(), State::Closed);
    fail_together(&keys[4..]);
    assert_eq!(open(&f), 3);
    // Raised to 75 %: room for 6 of 8, three more trip of the four failing.
    f.reconfigure(&Breaker::builder().max_ejection_percent(75))
        .unwrap();
    fail_together(&keys[4..]);
    assert_eq!(open(&f), 6);
    // Back to no budget: the last one trips.
    f.reconfigure(&Breaker::builder().max_ejection_percent(100))
        .unwrap();
    fail_together(&keys[4..]);
    assert_eq!(open(&f), 7);
}

/// A patch is checked whole, bounds and members' settings together: one
/// that breaks a rule changes neither. A breaker, and a key's breaker by
/// its name, refuse the family's bounds.
#[test]
fn bounds_are_checked_whole_and_belong_to_the_family() {
    let clock = ManualClock::new();
    let f = family("bounds::checked", &clock, 4);
    failfast_runtime::registry::register(&f);
    touch(&f, "a");
    let refused = f
        .reconfigure(&Breaker::builder().max_keys(2).threshold(0))
        .unwrap_err();
    assert_eq!(refused.key(), "threshold");
    let refused = f
        .reconfigure(&Breaker::builder().threshold(3).max_ejection_percent(0))
        .unwrap_err();
    assert_eq!(refused.key(), "max_ejection_percent");
    let refused = f
        .reconfigure(&Breaker::builder().threshold(3).max_keys(0))
        .unwrap_err();
    assert_eq!(refused.key(), "max_keys");
    let stats = f.stats();
    assert_eq!((stats.max_keys, stats.max_ejection_percent), (4, 100));
    assert_eq!(f.config().threshold(), 1);
    assert_eq!(f.get("a").config().threshold(), 1);

    let key = configure::apply("bounds::checked[a]", Breaker::builder().max_keys(2));
    assert_eq!(key.unwrap_err().key(), "max_keys");
    let alone = Breaker::builder().name("bounds::alone").build().unwrap();
    let refused = alone.reconfigure(&Breaker::builder().max_ejection_percent(50));
    assert_eq!(refused.unwrap_err().key(), "max_ejection_percent");
    let built = Breaker::builder().name("bounds::built").max_keys(3).build();
    let refused = built.unwrap_err();
    assert_eq!(
        (refused.key(), refused.name()),
        ("max_keys", "bounds::built")
    );

    // By the family's name, with a member's setting beside them.
    configure::apply(
        "bounds::checked",
        Breaker::builder()
            .max_keys(2)
            .max_ejection_percent(50)
            .threshold(3),
    )
    .unwrap();
    let stats = f.stats();
    assert_eq!((stats.max_keys, stats.max_ejection_percent), (2, 50));
    assert_eq!(f.get("a").config().threshold(), 3);
    // The members' origins are their settings': the bounds are the
    // family's.
    let origins = f.get("a").snapshot().origins;
    assert!(origins.contains_key("threshold"), "{origins:?}");
    assert!(!origins.contains_key("max_keys"), "{origins:?}");
}

/// `FAILFAST__<FAMILY>__MAX_KEYS` and `__MAX_EJECTION_PERCENT`, checked
/// with every other variable before any applies.
#[test]
fn bounds_from_the_environment() {
    let clock = ManualClock::new();
    let f = family("bounds::env", &clock, 4);
    failfast_runtime::registry::register(&f);
    let refused = configure::from_env([
        ("FAILFAST__BOUNDS_ENV__MAX_KEYS", "16"),
        ("FAILFAST__BOUNDS_ENV__MAX_EJECTION_PERCENT", "150"),
    ])
    .unwrap_err();
    assert_eq!(refused[0].key(), "max_ejection_percent");
    assert_eq!(f.stats().max_keys, 4, "nothing applied");
    configure::from_env([
        ("FAILFAST__BOUNDS_ENV__MAX_KEYS", "16"),
        ("FAILFAST__BOUNDS_ENV__MAX_EJECTION_PERCENT", "30"),
    ])
    .unwrap();
    let stats = f.stats();
    assert_eq!((stats.max_keys, stats.max_ejection_percent), (16, 30));
}

/// A family's part of the variables is checked against the family as it
/// is before any variable applies, also with no member yet to check it
/// against: a `min_calls` its members' window cannot hold refuses the lot,
/// and the breaker named beside it keeps its threshold.
#[test]
fn a_family_with_no_member_yet_is_checked_before_any_variable_applies() {
    let f: Family<String> = Family::builder(
        Breaker::builder()
            .name("bounds::rated")
            .failure_rate(0.5)
            .window_calls(20),
    )
    .build()
    .unwrap();
    failfast_runtime::registry::register(&f);
    let beside = std::sync::Arc::new(
        Breaker::builder()
            .name("bounds::beside")
            .threshold(5)
            .build()
            .unwrap(),
    );
    failfast_runtime::registry::register(&beside);
    let refused = configure::from_env([
        ("FAILFAST__BOUNDS_BESIDE__THRESHOLD", "3"),
        ("FAILFAST__BOUNDS_RATED__MIN_CALLS", "50"),
    ])
    .unwrap_err();
    assert_eq!(refused[0].key(), "min_calls");
    assert_eq!(beside.config().threshold(), 5, "nothing applied");
    assert!(f.members().is_empty());
}
