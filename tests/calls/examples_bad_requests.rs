//! Runs the scenario of `examples/bad_requests.rs` (the same code, included as a
//! module) and checks what it shows: 400s never move a breaker whose `counts`
//! matches only dependency errors, and the next good call succeeds.

#[allow(dead_code)]
#[path = "../../examples/bad_requests.rs"]
mod scenario;

use failfast::State;
use scenario::common::client::InventoryError;

#[tokio::test]
async fn malformed_skus_never_move_the_breaker_and_the_next_good_call_succeeds() {
    // One test per file: the breakers are statics, shared by the whole process.
    let calls = scenario::run().await.expect("the scenario runs");
    assert_eq!(calls.len(), 6);

    for call in &calls[..5] {
        assert!(
            matches!(call.careful.result, Err(InventoryError::BadRequest(_))),
            "{}: expected a 400, got {:?}",
            call.sku,
            call.careful.result
        );
        assert_eq!(call.careful.state, State::Closed, "{}", call.sku);
        assert_eq!(call.careful.consecutive_failures, 0, "{}", call.sku);
    }
    let good = &calls[5].careful;
    let stock = good.result.as_ref().expect("the good call succeeds");
    assert_eq!(stock.quantity, Some(42));
    assert_eq!(good.state, State::Closed);

    // The counterfactual: without `counts`, the same 400s open the breaker.
    let failures: Vec<u32> = calls[..4]
        .iter()
        .map(|c| c.counting_everything.consecutive_failures)
        .collect();
    assert_eq!(failures, [1, 2, 3, 4]);
    assert_eq!(calls[4].counting_everything.state, State::Open);
    assert!(
        matches!(
            calls[5].counting_everything.result,
            Err(InventoryError::Rejected(_))
        ),
        "{:?}",
        calls[5].counting_everything.result
    );
}
