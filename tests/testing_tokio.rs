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

/// A fresh `shed = 2` breaker: bursts of 20, 50 and 100 calls at once to a
/// dependency that answers each in 300 ms, then 100 again after 10 s of
/// quiet. A call counts when it ends, and one still running is no evidence
/// before it has outlived the calls the dependency answered: none is shed.
#[tokio::test(start_paused = true)]
async fn a_burst_to_a_healthy_dependency_is_never_shed() {
    #[circuit_breaker(shed = 2, name = "kit::burst")]
    async fn fetch() -> Result<(), Down> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(())
    }

    async fn burst(n: usize) -> usize {
        let calls: Vec<_> = (0..n).map(|_| tokio::spawn(fetch())).collect();
        let mut shed = 0;
        for call in calls {
            match call.await.unwrap() {
                Ok(()) => {}
                Err(Down::Refused(_)) => shed += 1,
                Err(Down::Failed) => unreachable!(),
            }
        }
        shed
    }

    testing::follow_tokio_clock();
    for n in [20, 50, 100] {
        assert_eq!(burst(n).await, 0, "{n} at once");
    }
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(burst(100).await, 0, "100 at once after 10 s of quiet");
    let s = registry::get("kit::burst").unwrap().snapshot();
    assert_eq!((s.successes, s.shed), (270, 0), "{s:?}");
}
