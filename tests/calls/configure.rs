//! Overrides by name before traffic (environment variables, a TOML
//! section), live reconfiguration, and observe-only mode, on attribute
//! breakers. Each test uses its own breakers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::Down;

use failfast::configure::{self, from_env};
use failfast::{Breaker, Builder, Mode, State, circuit_breaker, events, registry};

fn failing() -> Result<(), Down> {
    Err(Down::Failed)
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn threshold(name: &str) -> u32 {
    registry::get(name).unwrap().config().threshold()
}

fn state(name: &str) -> State {
    registry::get(name).unwrap().state()
}

#[circuit_breaker(threshold = 5, name = "payments::charge")]
fn charge() -> Result<(), Down> {
    failing()
}

#[test]
fn an_environment_override_applies_before_the_first_call() {
    let changed = from_env(vars(&[
        ("FAILFAST__PAYMENTS_CHARGE__THRESHOLD", "2"),
        ("FAILFAST__PAYMENTS_CHARGE__RECOVERY", "1m"),
        ("PATH", "/usr/bin"),
    ]))
    .unwrap();
    assert_eq!(changed, 1);
    let config = registry::get("payments::charge").unwrap().config();
    assert_eq!(config.recovery(), Duration::from_secs(60));
    assert_eq!(charge(), Err(Down::Failed));
    assert_eq!(state("payments::charge"), State::Closed);
    assert_eq!(charge(), Err(Down::Failed));
    assert_eq!(
        state("payments::charge"),
        State::Open,
        "tripped at 2, not 5"
    );
}

#[circuit_breaker(threshold = 4, name = "env::whole")]
fn whole() -> Result<(), Down> {
    failing()
}

#[test]
fn invalid_environment_overrides_are_reported_and_nothing_is_applied() {
    let errors = from_env(vars(&[
        ("FAILFAST__ENV_WHOLE__THRESHOLD", "9"),
        ("FAILFAST__ENV_WHOLE__RECOVERY", "0s"),
        ("FAILFAST__NO_SUCH_BREAKER__THRESHOLD", "3"),
        ("FAILFAST__ENV_WHOLE__TRESHOLD", "3"),
    ]))
    .unwrap_err();
    let found: Vec<(String, String)> = errors
        .iter()
        .map(|e| (e.name().to_owned(), e.key().to_owned()))
        .collect();
    assert_eq!(
        found,
        [
            ("NO_SUCH_BREAKER".to_owned(), "name".to_owned()),
            ("env::whole".to_owned(), "treshold".to_owned()),
        ],
        "{errors:?}"
    );
    // Once the names and keys are right, the value is checked: still whole.
    let errors = from_env(vars(&[
        ("FAILFAST__ENV_WHOLE__THRESHOLD", "9"),
        ("FAILFAST__ENV_WHOLE__RECOVERY", "0s"),
    ]))
    .unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "breaker `env::whole`: `recovery` must be longer than zero"
    );
    assert_eq!(threshold("env::whole"), 4, "nothing applied");
    let _ = whole();
}

#[circuit_breaker(failure_rate = 0.5, window = 10, name = "toml::search")]
fn search() -> Result<(), Down> {
    Ok(())
}

#[circuit_breaker(threshold = 5, name = "toml::quote")]
fn quote() -> Result<(), Down> {
    Ok(())
}

#[circuit_breaker(key = host, threshold = 5, name = "toml::hosts")]
fn hosts(host: &str) -> Result<(), Down> {
    let _ = host;
    Ok(())
}

#[derive(serde::Deserialize)]
struct File {
    failfast: std::collections::BTreeMap<String, Builder>,
}

#[test]
fn each_toml_section_is_applied_whole_or_not_at_all_and_every_refusal_is_returned() {
    hosts("10.0.0.1").unwrap(); // the family registers on its first call
    let file: File = toml::from_str(
        r#"
        [failfast."toml::quote"]
        threshold = 8
        recovery = "45s"

        [failfast."toml::search"]
        failure_rate = 0.25
        threshold = 3

        [failfast."toml::qoute"]
        threshold = 2

        [failfast."toml::hosts"]
        threshold = 4

        [failfast."toml::hosts[10.0.0.3]"]
        threshold = 1
        "#,
    )
    .unwrap();
    // `toml::search` trips on a failure rate: a threshold is another rule,
    // and its section is refused whole; `toml::qoute` is no breaker. The
    // other sections are applied.
    let errors: Vec<_> = file
        .failfast
        .into_iter()
        .filter_map(|(name, settings)| configure::apply(&name, settings).err())
        .collect();
    let found: Vec<_> = errors.iter().map(|e| (e.name(), e.key())).collect();
    assert_eq!(
        found,
        [("toml::qoute", "name"), ("toml::search", "threshold")],
        "{errors:?}"
    );
    assert_eq!(threshold("toml::quote"), 8);
    let quote_config = registry::get("toml::quote").unwrap().config();
    assert_eq!(quote_config.recovery(), Duration::from_secs(45));
    let search_config = format!("{:?}", registry::get("toml::search").unwrap().config());
    assert!(
        search_config.contains("failure_rate: 0.5"),
        "{search_config}"
    );
    // A family by its name (every key), one key by `family[key]` before its
    // first call.
    assert_eq!(threshold("toml::hosts[10.0.0.1]"), 4);
    hosts("10.0.0.2").unwrap();
    assert_eq!(threshold("toml::hosts[10.0.0.2]"), 4);
    hosts("10.0.0.3").unwrap();
    assert_eq!(threshold("toml::hosts[10.0.0.3]"), 1);
    quote().unwrap();
    search().unwrap();
}

#[circuit_breaker(threshold = 5, name = "live::threshold")]
fn live() -> Result<(), Down> {
    failing()
}

#[test]
fn a_live_threshold_change_takes_effect_on_the_next_failure() {
    let _ = live();
    let _ = live();
    assert_eq!(state("live::threshold"), State::Closed);
    registry::get("live::threshold")
        .unwrap()
        .reconfigure(&Breaker::builder().threshold(3))
        .unwrap();
    assert_eq!(state("live::threshold"), State::Closed);
    assert_eq!(live(), Err(Down::Failed));
    assert_eq!(
        state("live::threshold"),
        State::Open,
        "the third failure trips"
    );
    assert!(matches!(live(), Err(Down::Refused(_))));
}

static SHADOW_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[circuit_breaker(threshold = 2, name = "shadow::rollout")]
fn shadow() -> Result<(), Down> {
    SHADOW_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    failing()
}

#[test]
fn observe_only_never_rejects_and_reports_what_it_would_have_done() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _subscription = events::subscribe("shadow::rollout", move |t| {
        sink.lock().unwrap().push((t.to, t.mode));
    });
    configure::apply(
        "shadow::rollout",
        Breaker::builder().mode(Mode::ObserveOnly),
    )
    .unwrap();
    for _ in 0..10 {
        assert_eq!(shadow(), Err(Down::Failed), "never refused");
    }
    assert_eq!(SHADOW_CALLS.load(std::sync::atomic::Ordering::SeqCst), 10);
    // Would reject: the rules ran, and the breaker says it is open.
    assert_eq!(state("shadow::rollout"), State::Open);
    let snapshot = registry::get("shadow::rollout").unwrap().snapshot();
    assert_eq!(
        (snapshot.would_reject, snapshot.rejected),
        (8, 0),
        "the 8 calls after the trip would have been refused"
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.contains(&(State::Open, Mode::ObserveOnly)),
        "an event says it would have opened: {seen:?}"
    );
    drop(seen);
    configure::apply("shadow::rollout", Breaker::builder().mode(Mode::Normal)).unwrap();
    assert_eq!(state("shadow::rollout"), State::Closed);
}

#[test]
fn configuring_an_unknown_breaker_names_it() {
    let error = configure::apply("nope", Breaker::builder().threshold(2)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`nope` matches no registered breaker or family"
    );
}

#[circuit_breaker(key = host, threshold = 5, name = "inventory")]
fn inventory(host: &str) -> Result<(), Down> {
    let _ = host;
    failing()
}

/// The trial report's case: a family configured by its name, then one of
/// its keys, by `configure` and from the environment.
#[test]
fn an_attribute_family_is_configured_by_its_name_and_a_key_by_family_and_key() {
    let _ = inventory("10.0.0.1"); // the family registers on its first call
    configure::apply("inventory", Breaker::builder().threshold(2)).unwrap();
    let _ = inventory("10.0.0.1");
    assert_eq!(state("inventory[10.0.0.1]"), State::Open, "tripped at 2");
    configure::apply("inventory[10.0.0.3]", Breaker::builder().threshold(1)).unwrap();
    let _ = inventory("10.0.0.3");
    assert_eq!(state("inventory[10.0.0.3]"), State::Open, "tripped at 1");
    assert_eq!(
        from_env(vars(&[("FAILFAST__INVENTORY__THRESHOLD", "5")])),
        Ok(1)
    );
    assert_eq!(threshold("inventory[10.0.0.1]"), 5);
    assert_eq!(threshold("inventory[10.0.0.3]"), 5);
}
