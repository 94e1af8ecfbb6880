//! Every `#[circuit_breaker]` breaker is in the registry from program start,
//! before its function first runs, under a name no other breaker has.

use std::sync::atomic::{AtomicU32, Ordering};

use failfast::Mode;
use failfast::{Rejected, State, circuit_breaker, registry};

#[derive(Debug, PartialEq)]
enum Down {
    Failed,
    Refused(State),
}

impl From<Rejected> for Down {
    fn from(rejected: Rejected) -> Self {
        Down::Refused(rejected.state())
    }
}

#[circuit_breaker(name = "declared::never_called")]
fn never_called() -> Result<(), Down> {
    Ok(())
}

static FORCED_RAN: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "declared::forced")]
fn forced() -> Result<(), Down> {
    FORCED_RAN.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[test]
fn a_breaker_whose_function_never_ran_is_listed_and_found() {
    let names: Vec<String> = registry::all()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "declared::never_called"),
        "{names:?}"
    );
    let breaker = registry::get("declared::never_called").expect("declared");
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.snapshot().calls, 0);
    // Its first call goes through the same breaker, registered once.
    never_called().unwrap();
    assert_eq!(breaker.snapshot().calls, 1);
    let listed = registry::all()
        .iter()
        .filter(|b| b.name() == "declared::never_called")
        .count();
    assert_eq!(listed, 1);
}

#[test]
fn force_open_before_any_traffic_refuses_the_first_call() {
    registry::get("declared::forced")
        .expect("declared")
        .set_mode(Mode::ForcedOpen);
    assert_eq!(forced(), Err(Down::Refused(State::Open)));
    assert_eq!(FORCED_RAN.load(Ordering::SeqCst), 0, "the body never ran");
    registry::get("declared::forced")
        .unwrap()
        .set_mode(Mode::Normal);
    forced().unwrap();
    assert_eq!(FORCED_RAN.load(Ordering::SeqCst), 1);
}

static FORCED_FAMILY_RAN: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(key = tenant, name = "declared::forced_family")]
fn forced_family(tenant: u32) -> Result<u32, Down> {
    FORCED_FAMILY_RAN.fetch_add(1, Ordering::SeqCst);
    Ok(tenant)
}

/// A keyed function's family, forced open by a reload before its first
/// call, refuses that call, and lets calls through again once the section
/// is dropped.
#[test]
fn a_family_forced_open_by_a_reload_before_any_traffic_refuses_the_first_call() {
    use failfast::{Breaker, configure};
    use std::collections::BTreeMap;

    let _turn = crate::support::reload_turn();
    let section = Breaker::builder().mode(Mode::ForcedOpen);
    configure::reload(BTreeMap::from([(
        "declared::forced_family".to_owned(),
        section,
    )]))
    .unwrap();
    assert_eq!(forced_family(7), Err(Down::Refused(State::Open)));
    assert_eq!(FORCED_FAMILY_RAN.load(Ordering::SeqCst), 0, "never ran");
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(forced_family(7), Ok(7));
    assert_eq!(FORCED_FAMILY_RAN.load(Ordering::SeqCst), 1);
}

#[circuit_breaker(key = tenant, threshold = 5, name = "declared::origins")]
fn origins_family(tenant: u32) -> Result<u32, Down> {
    Ok(tenant)
}

/// A reloaded file with a section for a keyed function's family and one
/// for a key: the key's breaker names the file as the origin of both the
/// setting its own section writes and the one it takes from its family's
/// section, before the family's first call and after it.
#[test]
fn a_keys_section_keeps_the_origins_of_its_declared_familys_settings() {
    use failfast::configure::{self, Origin};
    use failfast::{Breaker, Config};
    use std::collections::BTreeMap;
    use std::time::Duration;

    let _turn = crate::support::reload_turn();
    let reload = |threshold: u32, key: u32, recovery: u64| {
        configure::reload(BTreeMap::from([
            (
                "declared::origins".to_owned(),
                Breaker::builder().threshold(threshold),
            ),
            (
                format!("declared::origins[{key}]"),
                Breaker::builder().recovery(Duration::from_secs(recovery)),
            ),
        ]))
        .unwrap();
        let member = registry::get(&format!("declared::origins[{key}]")).expect("made");
        let snapshot = member.snapshot();
        let settings: &Config = &snapshot.settings;
        assert_eq!(
            (settings.threshold(), settings.recovery()),
            (threshold, Duration::from_secs(recovery))
        );
        for setting in ["threshold", "recovery"] {
            assert_eq!(
                snapshot.origins.get(setting),
                Some(&Origin::File),
                "{setting} of [{key}]: {snapshot:?}"
            );
        }
    };
    // Before the first call: the family's settings are its declaration's.
    reload(3, 7, 9);
    assert_eq!(origins_family(7), Ok(7));
    // The family built by its first call.
    reload(4, 8, 11);
    configure::reload(BTreeMap::new()).unwrap();
}

#[circuit_breaker(key = tenant, max_keys = 2, name = "declared::early")]
fn early_family(tenant: u32) -> Result<u32, Down> {
    Ok(tenant)
}

/// Before a keyed function's first call its keys may be tuned by name
/// (`name[key]`), as many as `max_keys`, and their first calls adopt the
/// breakers made for them; its overflow breaker may not be, nor a key
/// past `max_keys`: each refusal says why.
#[test]
fn keys_tuned_before_the_first_call_are_at_most_max_keys_and_never_the_overflow() {
    use failfast::{Breaker, configure};

    let _turn = crate::support::reload_turn();
    let tune = |key: &str, threshold: u32| {
        configure::apply(
            &format!("declared::early[{key}]"),
            Breaker::builder().threshold(threshold),
        )
    };
    let refused = tune("*", 3).unwrap_err();
    assert_eq!(refused.key(), "name");
    assert!(
        refused.to_string().contains("overflow breaker"),
        "{refused}"
    );
    tune("1", 3).unwrap();
    tune("2", 4).unwrap();
    let refused = tune("3", 7).unwrap_err();
    assert_eq!(refused.key(), "name");
    assert!(
        refused.to_string().contains("2 keys already wait"),
        "{refused}"
    );
    // A key made before is found again, however many wait.
    tune("1", 6).unwrap();
    assert_eq!(early_family(1), Ok(1));
    assert_eq!(early_family(3), Ok(3));
    let threshold = |key: u32| {
        registry::get(&format!("declared::early[{key}]")).map(|member| member.config().threshold())
    };
    assert_eq!(threshold(1), Some(6), "adopted by its first call");
    assert_eq!(threshold(3), Some(5), "the family's default, not 7");
}

mod methods {
    use super::*;

    pub struct A;
    pub struct B;

    impl A {
        #[circuit_breaker(threshold = 1)]
        pub fn fetch(&self) -> Result<u32, Down> {
            Err(Down::Failed)
        }
    }

    impl B {
        #[circuit_breaker(threshold = 1)]
        pub fn fetch(&self) -> Result<u32, Down> {
            Ok(2)
        }
    }

    fn fetch_breakers() -> Vec<registry::BreakerRef> {
        let prefix = concat!(module_path!(), "::fetch@");
        registry::all()
            .into_iter()
            .filter(|b| b.name().starts_with(prefix))
            .collect()
    }

    /// The attribute cannot see `impl A`, so a method's default name is the
    /// module path, the method and where it is written.
    #[test]
    fn same_named_methods_of_two_types_get_two_default_names() {
        let breakers = fetch_breakers();
        assert_eq!(breakers.len(), 2, "{breakers:?}");
        assert_ne!(breakers[0].name(), breakers[1].name());
        for b in &breakers {
            let (_, at) = b.name().split_once('@').unwrap();
            let (line, column) = at.split_once(':').unwrap();
            assert!(line.parse::<u32>().unwrap() > 0, "{}", b.name());
            assert!(column.parse::<u32>().unwrap() > 0, "{}", b.name());
        }
    }

    /// Two names, two breakers: A tripping leaves B closed.
    #[test]
    fn tripping_one_method_leaves_the_other_closed() {
        assert_eq!(A.fetch(), Err(Down::Failed));
        assert_eq!(A.fetch(), Err(Down::Refused(State::Open)));
        assert_eq!(B.fetch(), Ok(2));
        let states: Vec<State> = fetch_breakers().iter().map(|b| b.state()).collect();
        assert!(states.contains(&State::Open) && states.contains(&State::Closed));
    }
}

/// A free function keeps the plain `module::function` default.
mod free {
    use super::*;

    #[circuit_breaker]
    fn lookup() -> Result<(), Down> {
        Ok(())
    }

    #[test]
    fn a_free_function_is_named_module_and_function() {
        let name = concat!(module_path!(), "::lookup");
        assert!(registry::get(name).is_some(), "{name} is declared");
        lookup().unwrap();
    }
}
