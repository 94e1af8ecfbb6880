//! Runs the scenario of `examples/recovery.rs` (the same code, included as a
//! module) and checks what it shows: the breaker opens, stays open after the
//! service is healed until `recovery` has passed, then the first call is the
//! trial, reaches the service, succeeds, and closes the breaker.

#[allow(dead_code)]
#[path = "../../examples/recovery.rs"]
mod scenario;

use std::time::Duration;

use failfast::State::{Closed, HalfOpen, Open};
use scenario::common::client::InventoryError;

#[tokio::test]
async fn the_first_call_after_recovery_is_the_trial_and_closes_the_breaker() {
    let steps = scenario::run(Duration::from_millis(50), |_| {})
        .await
        .expect("the scenario runs");
    let states: Vec<_> = steps.iter().map(|s| (s.before, s.after)).collect();
    assert_eq!(
        states,
        [
            (Closed, Closed),
            (Closed, Closed),
            (Closed, Closed),
            (Closed, Closed),
            (Closed, Open),
            (Open, Open),
            (Open, Open),
            (HalfOpen, Closed),
            (Closed, Closed),
        ]
    );
    let reached: Vec<bool> = steps.iter().map(|s| s.reached_service).collect();
    assert_eq!(
        reached,
        [true, true, true, true, true, false, false, true, true]
    );
    for step in &steps[..5] {
        assert!(matches!(step.result, Err(InventoryError::Dependency(_))));
    }
    for step in &steps[5..7] {
        match &step.result {
            Err(InventoryError::Rejected(r)) => {
                assert_eq!(r.state(), Open);
                assert!(r.retry_after().is_some());
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
    }
    for step in &steps[7..] {
        let stock = step.result.as_ref().expect("the healed service answers");
        assert_eq!(stock.quantity, Some(42));
    }
}
