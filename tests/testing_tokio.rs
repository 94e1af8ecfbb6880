//! The test kit following tokio's clock: `tokio::time::pause()` and
//! `advance()` move an attribute breaker from Open to HalfOpen. One test in
//! this binary: the clock is the binary's.

use std::time::Duration;

mod support;
use support::Down;

use failfast::{State, circuit_breaker, registry, testing};

#[circuit_breaker(threshold = 1, recovery = "30s", name = "kit::tokio")]
async fn fetch(fail: bool) -> Result<(), Down> {
    tokio::task::yield_now().await;
    if fail { Err(Down::Failed) } else { Ok(()) }
}

fn state(name: &str) -> State {
    registry::get(name).unwrap().state()
}

#[tokio::test(start_paused = true)]
async fn paused_time_advanced_by_tokio_moves_an_attribute_breaker_to_half_open() {
    testing::follow_tokio_clock();
    assert_eq!(fetch(true).await, Err(Down::Failed));
    assert_eq!(state("kit::tokio"), State::Open);

    // Real time passing does nothing while tokio's clock is paused.
    std::thread::sleep(Duration::from_millis(20));
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!(state("kit::tokio"), State::Open);
    assert!(matches!(fetch(false).await, Err(Down::Refused(_))));

    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(state("kit::tokio"), State::HalfOpen);
    fetch(false).await.unwrap();
    assert_eq!(state("kit::tokio"), State::Closed);
}
