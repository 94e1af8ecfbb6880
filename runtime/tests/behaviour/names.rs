//! The name a rejection carries. A breaker named at run time keeps its name
//! in an `Arc<str>`; a `Rejected` made on a thread carries that thread's own
//! copy of it, so threads rejecting at once through one breaker do not all
//! write one reference count. In a test binary of its own: each thread here
//! then has a totals slot of its own.

use std::sync::Barrier;
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, ManualClock, State};

/// Two rejections on this thread, in `state`: the addresses of their names'
/// text.
fn two_rejections(b: &Breaker, state: State) -> (usize, usize) {
    let first = b.acquire().expect_err("rejecting");
    let second = b.acquire().expect_err("rejecting");
    assert_eq!(first.name(), b.name());
    assert_eq!(second.name(), b.name());
    assert_eq!((first.state(), second.state()), (state, state));
    (
        first.name().as_ptr() as usize,
        second.name().as_ptr() as usize,
    )
}

/// Rejections on two threads alive at once (a thread that exits gives its
/// slot, and the copy in it, to the next thread started): each carries its
/// thread's copy, the same for both of a thread's rejections.
fn each_thread_its_own_copy(b: &Breaker, state: State) {
    let own = b.name().as_ptr() as usize;
    let both = Barrier::new(2);
    let names: Vec<(usize, usize)> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    both.wait();
                    let names = two_rejections(b, state);
                    both.wait();
                    names
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for (first, second) in &names {
        assert_eq!(first, second, "one copy per thread, made once");
        assert_ne!(*first, own, "not the breaker's own `Arc<str>`");
    }
    assert_ne!(names[0].0, names[1].0, "each thread its own copy");
}

#[test]
fn each_thread_carries_its_own_copy_of_a_name_built_at_run_time() {
    let host = "host-3";
    let b = Breaker::builder()
        .name(format!("payments@{host}"))
        .threshold(1)
        .build()
        .unwrap();
    // Opened by a failure (a forced open refuses on another path, below).
    let _ = b.call(|| Err::<(), _>("down"));
    each_thread_its_own_copy(&b, State::Open);
    assert_eq!(b.snapshot().rejected, 4);
    b.set_mode(Mode::ForcedOpen);
    each_thread_its_own_copy(&b, State::Open);
}

#[test]
fn half_open_rejections_carry_a_copy_too() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name(format!("search@{}", "host-9"))
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    clock.advance(Duration::from_secs(2));
    let trial = b.acquire().expect("the trial");
    assert!(trial.is_trial());
    each_thread_its_own_copy(&b, State::HalfOpen);
    trial.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_static_name_is_carried_as_it_is() {
    let b = Breaker::builder()
        .name("inventory")
        .threshold(1)
        .build()
        .unwrap();
    b.set_mode(Mode::ForcedOpen);
    let own = b.name().as_ptr() as usize;
    assert_eq!(two_rejections(&b, State::Open), (own, own));
}
