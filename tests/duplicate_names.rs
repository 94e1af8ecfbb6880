//! Two `#[circuit_breaker]`s given one `name` are a programming error: the
//! first use of the registry (here, the first call) panics with both
//! declaration sites, every time. Alone in its test binary, since every
//! breaker of the program is affected.

use failfast::{Rejected, circuit_breaker, registry};

#[derive(Debug)]
struct Refused;

impl From<Rejected> for Refused {
    fn from(_: Rejected) -> Self {
        Refused
    }
}

#[circuit_breaker(name = "payments")]
fn charge() -> Result<(), Refused> {
    Ok(())
}

#[circuit_breaker(name = "payments")]
fn refund() -> Result<(), Refused> {
    Ok(())
}

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("a duplicate name panics");
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn two_breakers_declared_with_one_name_panic_naming_both_sites() {
    for message in [
        panic_message(|| {
            let _ = charge();
        }),
        panic_message(|| {
            let _ = registry::all();
        }),
        panic_message(|| {
            let _ = registry::get("payments");
        }),
        panic_message(|| {
            let _ = refund();
        }),
    ] {
        assert!(message.contains("named `payments`"), "{message}");
        let sites = message.matches("tests/duplicate_names.rs:").count();
        assert_eq!(sites, 2, "{message}");
        assert!(message.contains("name = "), "{message}");
    }
}
