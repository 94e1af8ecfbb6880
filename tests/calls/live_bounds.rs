//! A declared family's bounds (`max_keys`, `max_ejection_percent` beside
//! `key`) changed while the program runs: before the family's first call,
//! from a TOML section that `reload` puts in force and, deleted, takes
//! back to the declared values, and from the environment. A process of its
//! own: a reload remembers what the previous one named.

use std::collections::BTreeMap;

use failfast::configure::{self, from_env};
use failfast::registry::{self, FamilyRef};
use failfast::{Builder, FamilyStats, Rejected, State, circuit_breaker};

#[derive(Debug)]
struct Down;

impl From<Rejected> for Down {
    fn from(_: Rejected) -> Self {
        Down
    }
}

#[circuit_breaker(key = host, threshold = 1, max_keys = 4, max_ejection_percent = 50, name = "live_bounds::hosts")]
fn call(host: &str, up: bool) -> Result<(), Down> {
    let _ = host;
    if up { Ok(()) } else { Err(Down) }
}

fn hosts() -> FamilyRef {
    registry::family("live_bounds::hosts").expect("declared")
}

fn bounds(stats: FamilyStats) -> (usize, u8) {
    (stats.max_keys, stats.max_ejection_percent)
}

#[derive(serde::Deserialize)]
struct File {
    failfast: BTreeMap<String, Builder>,
}

fn file(text: &str) -> BTreeMap<String, Builder> {
    toml::from_str::<File>(text).unwrap().failfast
}

#[test]
fn a_declared_family_s_bounds_change_before_and_after_its_first_call() {
    let _turn = crate::support::reload_turn();
    assert_eq!(bounds(hosts().stats()), (4, 50), "as declared");
    // Before the first call: held until the family is built.
    configure::reload(file(
        r#"
        [failfast."live_bounds::hosts"]
        max_keys = 2
        max_ejection_percent = 100
        "#,
    ))
    .unwrap();
    assert_eq!(bounds(hosts().stats()), (2, 100));
    for host in ["a", "b", "c"] {
        call(host, true).unwrap();
    }
    let stats = hosts().stats();
    assert_eq!((stats.stored, stats.evicted), (2, 1));
    // No budget: both stored members may open.
    let _ = call("b", false);
    let _ = call("c", false);
    let state = |host: &str| {
        registry::get(&format!("live_bounds::hosts[{host}]"))
            .unwrap()
            .state()
    };
    assert_eq!((state("b"), state("c")), (State::Open, State::Open));

    // The section deleted: the declared bounds, a budget of 50 % of the two
    // stored again; the open ones stay open.
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(bounds(hosts().stats()), (4, 50));
    assert_eq!((state("b"), state("c")), (State::Open, State::Open));
    call("d", true).unwrap();
    call("e", true).unwrap();
    let _ = call("d", false);
    assert_eq!(state("d"), State::Closed, "two of four open: no room");
    assert_eq!(hosts().stats().spared, 1);

    // A value that breaks its rule: the whole section refused.
    let refused = configure::reload(file(
        r#"
        [failfast."live_bounds::hosts"]
        max_keys = 0
        threshold = 3
        "#,
    ))
    .unwrap_err();
    assert_eq!(refused[0].key(), "max_keys");
    assert_eq!(bounds(hosts().stats()), (4, 50));

    // From the environment.
    from_env([
        ("FAILFAST__LIVE_BOUNDS_HOSTS__MAX_KEYS", "8"),
        ("FAILFAST__LIVE_BOUNDS_HOSTS__MAX_EJECTION_PERCENT", "75"),
    ])
    .map_err(|e| e[0].clone())
    .unwrap();
    assert_eq!(bounds(hosts().stats()), (8, 75));
    let _ = call("d", false);
    assert_eq!(state("d"), State::Open, "75 % of four: room for a third");
}
