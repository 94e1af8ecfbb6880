//! Runs the scenario of `examples/thundering_herd.rs` (the same code, included as
//! a module) and checks what it shows: 10 callers released together the moment
//! a trial is allowed, dependency still sick: exactly 1 reaches the service, 9 are
//! rejected at once, and the failed trial opens the breaker again. For OS threads
//! and for tokio tasks.

#[allow(dead_code)]
#[path = "../../examples/thundering_herd.rs"]
mod scenario;

use std::time::Duration;

use failfast::State;
use scenario::common::client::InventoryError;

#[test]
fn a_herd_released_at_the_trial_instant_sends_exactly_one_call_to_the_service() {
    let hang = Duration::from_millis(250);
    let batches = scenario::run(hang).expect("the scenario runs");
    for batch in &batches {
        let who = batch.callers;
        assert_eq!(
            batch.reached_service, 1,
            "{who}: requests the service received"
        );
        assert_eq!(batch.admitted.len(), 1, "{who}: calls admitted");
        assert!(
            matches!(batch.admitted[0], Err(InventoryError::Dependency(_))),
            "{who}: the trial meets the sick service: {:?}",
            batch.admitted[0]
        );
        assert_eq!(batch.rejected, scenario::CALLERS - 1, "{who}: rejected");
        // Rejected at once: none of them waited for the trial's answer.
        assert!(
            batch.slowest_rejection < hang / 2,
            "{who}: slowest rejection {:?}",
            batch.slowest_rejection
        );
        assert!(
            batch.wall >= hang,
            "{who}: the trial waits out the hang, yet the batch took {:?}",
            batch.wall
        );
        assert_eq!(
            batch.state_after,
            State::Open,
            "{who}: a failed trial reopens"
        );
    }
}
