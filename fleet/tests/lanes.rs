//! Transitions reach the fleet's task without the breaker's thread ever waiting:
//! a storm of transitions on real threads while the task cannot run (its
//! runtime is not driven) completes, and once the task runs again every
//! transition is accounted for, read in order per breaker or counted as
//! dropped. No store is needed: lanes are read whether or not it answers.

use failfast_fleet::{Breakers, FleetConfig, FleetStats};
use failfast_runtime::Breaker;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const THREADS: usize = 4;

fn breaker(name: &str) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name(name.to_owned())
            .threshold(1)
            .build()
            .unwrap(),
    )
}

/// Drives `rt` until `cond` holds on the fleet's stats (or panics after a
/// minute: a hang would otherwise be the failure).
fn until(
    rt: &tokio::runtime::Runtime,
    fleet: &failfast_fleet::Fleet,
    what: &str,
    cond: impl Fn(&FleetStats) -> bool,
) -> FleetStats {
    rt.block_on(async {
        let limit = Instant::now() + Duration::from_secs(60);
        loop {
            let stats = fleet.stats();
            if cond(&stats) {
                return stats;
            }
            assert!(Instant::now() < limit, "waiting for {what}: {stats:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// `cycles` trips and resets of each breaker, one thread per breaker, while
/// nobody drives the fleet's runtime; returns the transitions made and the
/// slowest one seen. Fails (rather than hangs) if a thread does not finish.
fn storm(breakers: &[Arc<Breaker>], cycles: usize) -> (u64, Duration) {
    let (done, finished) = mpsc::channel();
    for b in breakers {
        let (b, done) = (b.clone(), done.clone());
        std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            for _ in 0..cycles {
                let t = Instant::now();
                let _ = b.call(|| Err::<(), _>("refused"));
                worst = worst.max(t.elapsed());
                let t = Instant::now();
                b.set_mode(failfast_runtime::Mode::Normal);
                worst = worst.max(t.elapsed());
            }
            done.send(worst).unwrap();
        });
    }
    let mut worst = Duration::ZERO;
    for _ in breakers {
        let slowest = finished
            .recv_timeout(Duration::from_secs(60))
            .expect("a transitioning thread is stuck while the fleet's task is stalled");
        worst = worst.max(slowest);
    }
    ((breakers.len() * cycles * 2) as u64, worst)
}

#[test]
fn a_transition_storm_never_waits_for_a_stalled_task_and_arrives_in_order() {
    // A current-thread runtime runs its tasks only inside `block_on`: between
    // two `block_on`s the fleet's task is stalled.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cfg = FleetConfig::new("redis://127.0.0.1:1/", "test/lanes");
    cfg.breakers = Breakers::Explicit;
    let fleet = rt.block_on(async { failfast_fleet::join(cfg).unwrap() });
    let breakers: Vec<_> = (0..THREADS)
        .map(|i| breaker(&format!("lane-{i}")))
        .collect();
    for b in &breakers {
        fleet.attach_breaker(b.clone()).unwrap();
    }
    // Through the runtime's transition hook, not an events listener.
    static OTHER: &(dyn Fn(&failfast_runtime::integration::Change<'_>) + Send + Sync) = &|_| {};
    assert!(!failfast_runtime::integration::install_hook(OTHER));

    // Fewer transitions per breaker than a lane holds: all of them are read,
    // none dropped, each one starting where the previous one ended.
    let (made, worst) = storm(&breakers, 10);
    assert_eq!(fleet.stats().transitions, 0, "the task was stalled");
    let stats = until(&rt, &fleet, "every transition read", |s| {
        s.transitions == made
    });
    assert_eq!(stats.transitions_dropped, 0, "{stats:?}");
    assert_eq!(stats.transitions_unordered, 0, "{stats:?}");
    println!("{made} transitions, slowest {worst:?}");

    // Far more than a lane holds: the storm still never waits; the oldest are
    // dropped and counted, the rest read in order.
    let (more, worst) = storm(&breakers, 5_000);
    let stats = until(&rt, &fleet, "every transition accounted for", |s| {
        s.transitions + s.transitions_dropped == made + more
    });
    assert!(stats.transitions_dropped > 0, "{stats:?}");
    assert!(stats.transitions > made, "{stats:?}");
    assert_eq!(stats.transitions_unordered, 0, "{stats:?}");
    println!("{more} more transitions, slowest {worst:?}: {stats:?}");
}
