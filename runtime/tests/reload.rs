//! `configure::reload`: a whole document of sections, and what it no
//! longer names back to its declared settings.
//!
//! A reload remembers what the previous one named, process-wide: the tests
//! of this binary take turns, each starting from an empty document.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ConfigError, Mode, State, configure, registry};

/// One test at a time, from an empty document.
fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    configure::reload(BTreeMap::new()).expect("an empty document");
    turn
}

fn document<const N: usize>(sections: [(&str, Builder); N]) -> BTreeMap<String, Builder> {
    sections
        .into_iter()
        .map(|(name, section)| (name.to_owned(), section))
        .collect()
}

fn registered(name: &'static str, declared: Builder) -> Arc<Breaker> {
    let breaker = Arc::new(declared.name(name).build().expect("valid settings"));
    registry::register(&breaker);
    breaker
}

#[test]
fn a_dropped_section_puts_the_declared_settings_back() {
    let _turn = turn();
    let b = registered("reload::dropped", Breaker::builder().threshold(5));
    let c = registered("reload::kept", Breaker::builder().threshold(5));
    configure::reload(document([
        (
            "reload::dropped",
            Breaker::builder()
                .threshold(2)
                .recovery(Duration::from_secs(7)),
        ),
        ("reload::kept", Breaker::builder().threshold(3)),
    ]))
    .unwrap();
    assert_eq!(
        (b.config().threshold(), b.config().recovery()),
        (2, Duration::from_secs(7))
    );
    configure::reload(document([(
        "reload::kept",
        Breaker::builder().threshold(3),
    )]))
    .unwrap();
    assert_eq!(
        b.config().threshold(),
        5,
        "the deleted section's value is gone"
    );
    assert_eq!(
        b.config().recovery(),
        Breaker::builder().build().unwrap().config().recovery()
    );
    assert_eq!(c.config().threshold(), 3, "the section still named stays");
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(
        c.config().threshold(),
        5,
        "an empty document: everything declared"
    );
}

#[test]
fn a_key_the_section_no_longer_writes_goes_back_to_its_declared_value() {
    let _turn = turn();
    let b = registered("reload::changed", Breaker::builder().threshold(5));
    configure::reload(document([(
        "reload::changed",
        Breaker::builder()
            .threshold(2)
            .recovery(Duration::from_secs(9)),
    )]))
    .unwrap();
    configure::reload(document([(
        "reload::changed",
        Breaker::builder().threshold(4),
    )]))
    .unwrap();
    assert_eq!(b.config().threshold(), 4, "changed");
    assert_ne!(
        b.config().recovery(),
        Duration::from_secs(9),
        "declared + section, not a patch"
    );
    configure::reload(document([(
        "reload::changed",
        Breaker::builder()
            .threshold(2)
            .recovery(Duration::from_secs(9)),
    )]))
    .unwrap();
    assert_eq!(
        (b.config().threshold(), b.config().recovery()),
        (2, Duration::from_secs(9)),
        "and back"
    );
}

#[test]
fn an_empty_section_puts_back_what_apply_changed() {
    let _turn = turn();
    let b = registered("reload::applied", Breaker::builder().threshold(5));
    let other = registered("reload::untouched", Breaker::builder().threshold(5));
    configure::apply("reload::applied", Breaker::builder().threshold(9)).unwrap();
    configure::apply("reload::untouched", Breaker::builder().threshold(8)).unwrap();
    configure::reload(document([("reload::applied", Breaker::builder())])).unwrap();
    assert_eq!(b.config().threshold(), 5);
    assert_eq!(
        other.config().threshold(),
        8,
        "a name no reload named is left alone"
    );
}

#[test]
fn a_mode_from_the_file_dropped_goes_back_to_normal_an_operators_stays() {
    let _turn = turn();
    let observed = registered("reload::observed", Breaker::builder());
    let forced = registered("reload::forced", Breaker::builder());
    let section = || Breaker::builder().mode(Mode::ObserveOnly);
    configure::reload(document([
        ("reload::observed", section()),
        ("reload::forced", section()),
    ]))
    .unwrap();
    assert_eq!(observed.snapshot().mode, Mode::ObserveOnly);
    // An operator forces one open; the same document again leaves it so.
    forced.set_mode(Mode::ForcedOpen);
    configure::reload(document([
        ("reload::observed", section()),
        ("reload::forced", section()),
    ]))
    .unwrap();
    assert_eq!(
        forced.state(),
        State::Open,
        "an unchanged mode is not set again"
    );
    // The mode deleted from the file.
    configure::reload(document([
        ("reload::observed", Breaker::builder()),
        ("reload::forced", Breaker::builder()),
    ]))
    .unwrap();
    assert_eq!(
        observed.snapshot().mode,
        Mode::Normal,
        "the file's mode, dropped"
    );
    assert_eq!(
        forced.snapshot().mode,
        Mode::ForcedOpen,
        "the operator's, kept"
    );
    // An operator's mode on a breaker the file names without one.
    observed.set_mode(Mode::ForcedOpen);
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(observed.snapshot().mode, Mode::ForcedOpen);
    // A mode the file sets anew is put in force.
    configure::reload(document([(
        "reload::forced",
        Breaker::builder().mode(Mode::Normal),
    )]))
    .unwrap();
    assert_eq!(forced.state(), State::Closed);
}

#[test]
fn a_refused_section_leaves_its_name_as_it_was_and_others_apply() {
    let _turn = turn();
    let good = registered("reload::good", Breaker::builder().threshold(5));
    let bad = registered("reload::bad", Breaker::builder().threshold(5));
    configure::reload(document([("reload::bad", Breaker::builder().threshold(3))])).unwrap();
    let refused = configure::reload(document([
        ("reload::good", Breaker::builder().threshold(2)),
        (
            "reload::bad",
            Breaker::builder()
                .threshold(0)
                .recovery(Duration::from_secs(1)),
        ),
        ("reload::fixed", Breaker::builder().name("other")),
        ("reload::nothing", Breaker::builder().threshold(2)),
    ]))
    .unwrap_err();
    let refused: Vec<(String, String)> = refused
        .iter()
        .map(|e: &ConfigError| (e.to_string(), e.key().to_owned()))
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    // Breakers and families first, then what may be a key's breaker.
    assert_eq!(
        refused[0].0,
        "breaker `reload::bad`: `threshold` must be at least 1"
    );
    assert!(
        refused[1].0.starts_with("`reload::fixed` is fixed"),
        "{refused:?}"
    );
    assert_eq!(refused[1].1, "name");
    assert_eq!(
        refused[2].0,
        "`reload::nothing` matches no registered breaker or family"
    );
    assert_eq!(good.config().threshold(), 2, "applied");
    assert_eq!(
        bad.config().recovery(),
        Breaker::builder().build().unwrap().config().recovery()
    );
    assert_eq!(
        bad.config().threshold(),
        3,
        "as the previous reload left it"
    );
    // Still remembered: dropped later, it goes back.
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(bad.config().threshold(), 5);
}

#[cfg(feature = "keyed")]
#[test]
fn a_family_and_its_keys_go_back_to_declared() {
    use failfast_runtime::Family;
    let _turn = turn();
    let family: Family<String> =
        Family::builder(Breaker::builder().name("reload::family").threshold(5))
            .build()
            .unwrap();
    registry::register(&family);
    let a = family.get("a");
    configure::apply("reload::family[c]", Breaker::builder().threshold(7)).unwrap();
    configure::reload(document([
        (
            "reload::family",
            Breaker::builder().threshold(4).mode(Mode::ObserveOnly),
        ),
        ("reload::family[b]", Breaker::builder().threshold(1)),
    ]))
    .unwrap();
    let b = family.get("b");
    assert_eq!(a.config().threshold(), 4);
    assert_eq!(b.config().threshold(), 1, "a key's section on its family's");
    assert_eq!(
        family.get("c").config().threshold(),
        4,
        "the family's replaces a key's"
    );
    assert_eq!(
        family.get("new").config().threshold(),
        4,
        "members made later"
    );
    assert_eq!(a.snapshot().mode, Mode::ObserveOnly);
    assert_eq!(b.snapshot().mode, Mode::ObserveOnly, "the family's mode");
    // The key's section dropped: its family's settings.
    configure::reload(document([(
        "reload::family",
        Breaker::builder().threshold(4).mode(Mode::ObserveOnly),
    )]))
    .unwrap();
    assert_eq!(b.config().threshold(), 4);
    // Everything dropped: declared, now and later, and normal.
    configure::reload(BTreeMap::new()).unwrap();
    for key in ["a", "b", "c", "new", "later"] {
        let member = family.get(key);
        assert_eq!(member.config().threshold(), 5, "{key}");
        assert_eq!(member.snapshot().mode, Mode::Normal, "{key}");
    }
    // A key named alone goes back to its family's when dropped.
    configure::reload(document([(
        "reload::family[a]",
        Breaker::builder().threshold(2),
    )]))
    .unwrap();
    assert_eq!(a.config().threshold(), 2);
    configure::reload(BTreeMap::new()).unwrap();
    assert_eq!(a.config().threshold(), 5);
}

/// A section for one member sets what it writes from the file, and the
/// member keeps where the rest of its family's settings came from: a
/// threshold changed at run time for the whole family stays a run-time
/// one.
#[cfg(feature = "keyed")]
#[test]
fn a_members_section_keeps_the_origins_of_its_familys_settings() {
    use failfast_runtime::Family;
    use failfast_runtime::configure::Origin;
    let _turn = turn();
    let family: Family<String> =
        Family::builder(Breaker::builder().name("reload::origins").threshold(5))
            .build()
            .unwrap();
    registry::register(&family);
    let a = family.get("a");
    configure::apply("reload::origins", Breaker::builder().threshold(3)).unwrap();
    configure::reload(document([(
        "reload::origins[a]",
        Breaker::builder().recovery(Duration::from_secs(9)),
    )]))
    .unwrap();
    let s = a.snapshot();
    assert_eq!(
        (s.settings.threshold(), s.settings.recovery()),
        (3, Duration::from_secs(9))
    );
    assert_eq!(s.origins.get("threshold"), Some(&Origin::RunTime), "{s:?}");
    assert_eq!(s.origins.get("recovery"), Some(&Origin::File), "{s:?}");
}

/// Calls on two threads while the settings go from one document to the
/// other and back: every call counted, and every reading one document's
/// (threshold n with recovery n seconds).
#[test]
fn calls_during_reloads_are_all_counted_and_read_one_documents_settings() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let _turn = turn();
    let b = registered(
        "reload::busy",
        Breaker::builder()
            .threshold(1_000)
            .recovery(Duration::from_secs(1_000)),
    );
    let documents = [
        document([(
            "reload::busy",
            Breaker::builder()
                .threshold(2_000)
                .recovery(Duration::from_secs(2_000)),
        )]),
        document([(
            "reload::busy",
            Breaker::builder()
                .threshold(3_000)
                .recovery(Duration::from_secs(3_000)),
        )]),
        BTreeMap::new(),
    ];
    let (stop, calls) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (b, stop, calls) = (&b, &stop, &calls);
            s.spawn(move || {
                let mut n = 0_u64;
                while !stop.load(Ordering::Relaxed) {
                    calls.fetch_add(1, Ordering::Relaxed);
                    let c = b.config();
                    assert!(
                        [1_000, 2_000, 3_000].contains(&c.threshold()),
                        "{}",
                        c.threshold()
                    );
                    assert_eq!(
                        u64::from(c.threshold()),
                        c.recovery().as_secs(),
                        "a torn reading"
                    );
                    let failed = n % 7 == 0;
                    let _ = b.call(|| if failed { Err(()) } else { Ok(()) });
                    n += 1;
                }
            });
        }
        let mut round = 0;
        while round < 600 || calls.load(Ordering::Relaxed) < 10_000 {
            configure::reload(documents[round % 3].clone()).unwrap();
            round += 1;
        }
        configure::reload(BTreeMap::new()).unwrap();
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        b.snapshot().calls,
        calls.load(Ordering::Relaxed),
        "no call lost"
    );
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.config().threshold(), 1_000, "the last document was empty");
}
