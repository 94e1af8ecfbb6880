//! Runs `examples/failover.rs` (the same code, included as a module) and
//! checks what it shows: with failover the sick replica gets only the three
//! failures that open its breaker and every later call is served by a
//! healthy one; plain round robin keeps answering a third of the calls from
//! the fallback.

#[allow(dead_code)]
#[path = "../../examples/failover.rs"]
mod scenario;

#[tokio::test]
async fn failover_skips_the_sick_replica_once_its_breaker_opens() {
    let (plain, failover) = scenario::run(30).await.expect("the scenario runs");
    assert_eq!(plain.sick_hits, 3, "{plain:?}");
    assert_eq!((plain.served, plain.unknown), (20, 10), "{plain:?}");
    assert_eq!(failover.sick_hits, 3, "{failover:?}");
    assert_eq!((failover.served, failover.unknown), (27, 3), "{failover:?}");
}
