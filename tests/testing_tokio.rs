//! The test kit following tokio's clock: `tokio::time::pause()` and
//! `advance()` move an attribute breaker from Open to HalfOpen, and time
//! the calls for `slow`. The clock is the binary's: every test here follows
//! tokio's.

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

/// `max_concurrent = 1` with `max_wait`: ten calls of 40 ms each arrive
/// together and take their turns, the last waiting 360 ms for its place.
/// The slow clock starts when a call's body starts, so none of them is
/// slow (`slow = "100ms"`), and the breaker stays closed (half of them
/// slow would open it): the time spent in line is not the dependency's.
#[tokio::test(start_paused = true)]
async fn time_in_line_for_a_place_is_not_the_dependencys_time() {
    #[circuit_breaker(
        max_concurrent = 1,
        max_wait = "1s",
        slow = "100ms",
        slow_rate = 0.5,
        min_calls = 4,
        name = "kit::queued"
    )]
    async fn fetch() -> Result<(), Down> {
        tokio::time::sleep(Duration::from_millis(40)).await;
        Ok(())
    }

    testing::follow_tokio_clock();
    let calls: Vec<_> = (0..10).map(|_| tokio::spawn(fetch())).collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let s = registry::get("kit::queued").unwrap().snapshot();
    assert_eq!((s.successes, s.slow), (10, 0), "{s:?}");
    assert_eq!(s.state, State::Closed);
}
