//! The one listing, `registry::all()`: every breaker, each keyed family's
//! members included, with the settings in force and where each came from
//! (`Snapshot::settings`, `Snapshot::origins`); and breakers and families
//! built at run time under one name by tests running in parallel, each
//! test's own inside `testing::isolate`.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use failfast_runtime::configure::Origin;
use failfast_runtime::{Breaker, Builder, Family, Snapshot, configure, registry, testing};

/// The rows of the listing whose names start with `prefix`, by name.
fn rows(prefix: &str) -> BTreeMap<String, Snapshot> {
    registry::all()
        .into_iter()
        .map(|b| b.snapshot())
        .filter(|s| s.name.starts_with(prefix))
        .map(|s| (s.name.to_string(), s))
        .collect()
}

/// Each row's threshold and recovery, with where each came from.
fn seen(prefix: &str) -> BTreeMap<String, (u32, Option<Origin>, Duration, Option<Origin>)> {
    rows(prefix)
        .into_iter()
        .map(|(name, s)| {
            let (threshold, recovery) = (s.settings.threshold(), s.settings.recovery());
            let origin = |key| s.origins.get(key).copied();
            (
                name,
                (threshold, origin("threshold"), recovery, origin("recovery")),
            )
        })
        .collect()
}

fn file(sections: &str) -> BTreeMap<String, Builder> {
    serde_json::from_str(sections).expect("sections as a TOML table reads them")
}

const SECS_30: Duration = Duration::from_secs(30);

/// Declared, then a file's sections, then the environment and changes
/// from code, then back to declared when a reload no longer names them:
/// each row of the one listing says which, setting by setting, for a
/// registered breaker and for each member of a family, those made after
/// a change included. (The only test of this binary that reloads: a
/// reload remembers what the previous one named, process-wide.)
#[test]
fn each_listed_breaker_says_where_each_setting_came_from() {
    let replicas: Family<String> =
        Family::builder(Breaker::builder().name("listing::replica").threshold(5))
            .build()
            .unwrap();
    registry::register(&replicas);
    let _ = replicas.get("a").call(|| Ok::<_, ()>(()));
    let gateway = Arc::new(
        Breaker::builder()
            .name("listing::gateway")
            .threshold(5)
            .build()
            .unwrap(),
    );
    registry::register(&gateway);

    // Declared.
    let declared = (5, None, SECS_30, None);
    assert_eq!(
        seen("listing::"),
        BTreeMap::from([
            ("listing::gateway".to_owned(), declared),
            ("listing::replica[a]".to_owned(), declared),
        ])
    );
    assert!(rows("listing::").values().all(|s| s.origins.is_empty()));

    // A file: the family's threshold, the gateway's recovery.
    configure::reload(file(
        r#"{ "listing::replica": { "threshold": 3 },
             "listing::gateway": { "recovery": "10s" } }"#,
    ))
    .unwrap();
    let _ = replicas.get("b").call(|| Ok::<_, ()>(()));
    let from_file = (3, Some(Origin::File), SECS_30, None);
    assert_eq!(
        seen("listing::"),
        BTreeMap::from([
            (
                "listing::gateway".to_owned(),
                (5, None, Duration::from_secs(10), Some(Origin::File))
            ),
            ("listing::replica[a]".to_owned(), from_file),
            ("listing::replica[b]".to_owned(), from_file),
        ]),
        "a member made after the file gets the file's settings and says so"
    );

    // The environment, then changes from code: one member by name, the
    // gateway's recovery again.
    let env = [("FAILFAST__LISTING_GATEWAY__THRESHOLD", "2")];
    assert_eq!(configure::from_env(env), Ok(1));
    configure::apply("listing::replica[a]", Breaker::builder().threshold(1)).unwrap();
    gateway
        .reconfigure(&Breaker::builder().recovery(Duration::from_secs(20)))
        .unwrap();
    assert_eq!(
        seen("listing::"),
        BTreeMap::from([
            (
                "listing::gateway".to_owned(),
                (
                    2,
                    Some(Origin::Environment),
                    Duration::from_secs(20),
                    Some(Origin::RunTime)
                )
            ),
            (
                "listing::replica[a]".to_owned(),
                (1, Some(Origin::RunTime), SECS_30, None)
            ),
            ("listing::replica[b]".to_owned(), from_file),
        ])
    );

    // The whole family changed from code: its members and those made later.
    replicas
        .reconfigure(&Breaker::builder().recovery(Duration::from_secs(40)))
        .unwrap();
    let _ = replicas.get("c").call(|| Ok::<_, ()>(()));
    let forty = Duration::from_secs(40);
    let c = &seen("listing::replica[c]")["listing::replica[c]"];
    assert_eq!(*c, (3, Some(Origin::File), forty, Some(Origin::RunTime)));

    // Serialised for an admin endpoint: the settings and their origins.
    let row = &rows("listing::gateway")["listing::gateway"];
    let json = serde_json::to_value(row).unwrap();
    assert_eq!(json["settings"]["threshold"], 2);
    assert_eq!(json["settings"]["recovery"], "20s");
    assert_eq!(
        json["origins"],
        serde_json::json!({ "threshold": "environment", "recovery": "run_time" })
    );

    // A reload that no longer names them: every setting back to declared,
    // whatever changed it since.
    configure::reload(BTreeMap::new()).unwrap();
    let rows = seen("listing::");
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows.values().all(|row| *row == declared), "{rows:?}");
}

/// A setting a file, the environment and code all set in turn says the
/// last, per key; a patch refused leaves every origin as it was.
#[test]
fn the_last_change_of_a_setting_names_its_origin_and_a_refusal_none() {
    let b = Arc::new(
        Breaker::builder()
            .name("turns::b")
            .failure_rate(0.5)
            .build()
            .unwrap(),
    );
    registry::register(&b);
    let origins = || b.snapshot().origins;
    configure::apply("turns::b", Breaker::builder().min_calls(4)).unwrap();
    assert_eq!(origins(), BTreeMap::from([("min_calls", Origin::RunTime)]));
    let env = [("FAILFAST__TURNS_B__MIN_CALLS", "6")];
    configure::from_env(env).unwrap();
    assert_eq!(
        origins(),
        BTreeMap::from([("min_calls", Origin::Environment)])
    );
    let refused = Breaker::builder().min_calls(8).failure_rate(2.0);
    assert!(b.reconfigure(&refused).is_err());
    assert_eq!(
        origins(),
        BTreeMap::from([("min_calls", Origin::Environment)])
    );
    assert_eq!(serde_json::to_value(b.config()).unwrap()["min_calls"], 6);
    // As an admin page prints them.
    let shown = [
        Origin::Declared,
        Origin::File,
        Origin::Environment,
        Origin::RunTime,
    ];
    let shown = shown.map(|origin| origin.to_string());
    assert_eq!(shown, ["declared", "file", "environment", "run time"]);
    // A mode is manual control, not a setting with an origin.
    b.reconfigure(&Breaker::builder().mode(failfast_runtime::Mode::ObserveOnly))
        .unwrap();
    assert_eq!(
        origins(),
        BTreeMap::from([("min_calls", Origin::Environment)])
    );
}

/// Two tests running in parallel, each building "its" service's family
/// and breaker under the same names: inside `testing::isolate` each test
/// lists, finds and changes its own alone, and neither is listed outside.
#[test]
fn parallel_tests_each_see_their_own_run_time_breakers_under_one_name() {
    let barrier = Arc::new(Barrier::new(2));
    let test = |threshold: u32| {
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            let _scope = testing::isolate();
            let family: Family<String> = Family::builder(
                Breaker::builder()
                    .name("parallel::svc")
                    .threshold(threshold),
            )
            .build()
            .unwrap();
            registry::register(&family);
            let _ = family.get("k").call(|| Ok::<_, ()>(()));
            let one = Arc::new(
                Breaker::builder()
                    .name("parallel::one")
                    .threshold(threshold)
                    .build()
                    .unwrap(),
            );
            registry::register(&one);
            // Both tests have registered theirs.
            barrier.wait();
            let families: Vec<_> = registry::families()
                .into_iter()
                .filter(|f| f.name() == "parallel::svc")
                .collect();
            assert_eq!(families.len(), 1, "the test's own family alone");
            assert_eq!(families[0].config().threshold(), threshold);
            let found = registry::get("parallel::one").unwrap();
            assert!(std::ptr::eq(&*found, &*one), "the test's own breaker");
            let listed = rows("parallel::");
            let names: Vec<&str> = listed.keys().map(String::as_str).collect();
            assert_eq!(names, ["parallel::one", "parallel::svc[k]"]);
            assert!(listed.values().all(|s| s.settings.threshold() == threshold));
            // Changing it by name changes this test's alone.
            let changed = threshold + 10;
            configure::apply("parallel::svc", Breaker::builder().threshold(changed)).unwrap();
            configure::apply("parallel::one", Breaker::builder().threshold(changed)).unwrap();
            barrier.wait();
            assert_eq!(family.get("k").config().threshold(), changed);
            assert_eq!(one.config().threshold(), changed);
            (family, one)
        })
    };
    let (a, b) = (test(2), test(3));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!(
        (a.0.config().threshold(), a.1.config().threshold()),
        (12, 12)
    );
    assert_eq!(
        (b.0.config().threshold(), b.1.config().threshold()),
        (13, 13)
    );
    // Outside the scopes, neither test's is listed or found.
    assert!(registry::get("parallel::one").is_none());
    assert!(registry::family("parallel::svc").is_none());
    assert!(rows("parallel::").is_empty());
}

/// Without scopes, breakers and families built under one name are all
/// kept: listed, and all changed by name, as documented.
#[test]
fn without_a_scope_one_name_lists_and_changes_every_breaker_of_it() {
    let families: Vec<Family<String>> = (0..2)
        .map(|_| {
            let f = Family::builder(Breaker::builder().name("shared::svc").threshold(5))
                .build()
                .unwrap();
            registry::register(&f);
            f
        })
        .collect();
    let listed = registry::families()
        .into_iter()
        .filter(|f| f.name() == "shared::svc")
        .count();
    assert_eq!(listed, 2);
    configure::apply("shared::svc", Breaker::builder().threshold(2)).unwrap();
    assert!(families.iter().all(|f| f.config().threshold() == 2));
    let origins: Vec<_> = families
        .iter()
        .map(|f| f.get("k").snapshot().origins)
        .collect();
    let run_time = BTreeMap::from([("threshold", Origin::RunTime)]);
    assert_eq!(origins, [run_time.clone(), run_time]);
}
