//! Runs the scenario of `examples/per_host.rs` (the same code, included as a
//! module) and checks what it shows: the sick replica's breaker opens after
//! three failures and spares it every later call, while the two healthy
//! replicas' breakers stay closed and serve every call sent to them.

#[allow(dead_code)]
#[path = "../../examples/per_host.rs"]
mod scenario;

use failfast::State;

#[tokio::test]
async fn only_the_sick_replicas_breaker_opens_and_the_others_keep_serving() {
    let replicas = scenario::run().await.expect("the scenario runs");
    assert_eq!(replicas.len(), 3);
    for replica in &replicas {
        if replica.sick {
            assert_eq!(replica.state, State::Open, "{}", replica.host);
            assert_eq!(
                replica.hits, 3,
                "{}: three failures, then refused",
                replica.host
            );
        } else {
            assert_eq!(replica.state, State::Closed, "{}", replica.host);
            assert_eq!(replica.hits, 6, "{}: every call served", replica.host);
        }
    }
}
