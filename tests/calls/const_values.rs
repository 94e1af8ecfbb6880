//! Attribute values given as constants configure the breaker exactly as the
//! same literals would.

use std::time::Duration;

use crate::support;
use support::{Down, outcome};

use failfast::{State, circuit_breaker, registry};

mod limits {
    pub const PAYMENTS_THRESHOLD: u32 = 3;
    pub const RATE: f64 = 0.5;
    pub const fn window_minimum() -> u32 {
        4
    }
}

const RECOVERY: Duration = Duration::from_secs(3600);

#[circuit_breaker(threshold = limits::PAYMENTS_THRESHOLD, recovery = RECOVERY, name = "consts::charge")]
fn charge(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

#[test]
fn a_threshold_constant_trips_at_its_value_and_a_duration_constant_sets_the_open_time() {
    let state = || registry::get("consts::charge").unwrap().state();
    for _ in 1..limits::PAYMENTS_THRESHOLD {
        assert_eq!(charge(true), Err(Down::Failed));
        assert_eq!(state(), State::Closed);
    }
    assert_eq!(charge(true), Err(Down::Failed));
    assert_eq!(state(), State::Open);
    let Err(Down::Refused(Some(retry_after))) = charge(false) else {
        panic!("an open breaker refuses with a retry-after");
    };
    // Far above the 30 s default, at most the constant.
    assert!(
        retry_after > Duration::from_secs(60) && retry_after <= RECOVERY,
        "{retry_after:?}"
    );
}

#[circuit_breaker(
    failure_rate = limits::RATE,
    window = 8,
    min_calls = limits::window_minimum(),
    name = "consts::rate"
)]
fn rated(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

#[test]
fn rate_and_min_calls_constants_decide_when_the_rate_rule_trips() {
    let state = || registry::get("consts::rate").unwrap().state();
    // 3 calls, all failed: below `min_calls` (4), no verdict.
    for _ in 0..3 {
        let _ = rated(true);
    }
    assert_eq!(state(), State::Closed);
    // The 4th call is a success: 3 of 4 failed, above the 0.5 rate.
    rated(false).unwrap();
    assert_eq!(state(), State::Open);
}
