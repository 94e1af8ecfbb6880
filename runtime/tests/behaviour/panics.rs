//! Only a panic raised by the protected code is the dependency's failure.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, State};

fn breaker() -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_secs(60))
            .build()
            .unwrap(),
    )
}

/// A protected call waiting on a healthy dependency is dropped while its
/// sibling in `join!` panics: the unwind drops the protected future, but the
/// panic is not the dependency's.
#[test]
fn a_sibling_panic_in_join_is_not_a_failure() {
    let b = breaker();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async {
            tokio::join!(
                b.call_async(async {
                    std::future::pending::<()>().await;
                    Ok::<(), &str>(())
                }),
                async {
                    tokio::task::yield_now().await;
                    panic!("a bug elsewhere");
                }
            )
        })
    }));
    assert!(unwound.is_err());
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.consecutive_failures),
        (State::Closed, 0),
        "a healthy dependency was blamed for someone else's panic"
    );
}

/// The same sibling panic inside a spawned task.
#[tokio::test]
async fn a_sibling_panic_in_a_spawned_task_is_not_a_failure() {
    let b = breaker();
    let b2 = b.clone();
    let task = tokio::spawn(async move {
        tokio::join!(
            b2.call_async(async {
                std::future::pending::<()>().await;
                Ok::<(), &str>(())
            }),
            async {
                tokio::task::yield_now().await;
                panic!("a bug elsewhere");
            }
        )
    });
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(b.state(), State::Closed);
}

/// The protected future's own panic counts, even when the runtime catches it
/// and drops the future later, outside the unwind.
#[tokio::test]
async fn a_panic_in_the_protected_future_is_a_failure_inside_a_task() {
    let b = breaker();
    let b2 = b.clone();
    let task = tokio::spawn(async move {
        b2.call_async(async {
            tokio::task::yield_now().await;
            if true {
                panic!("the dependency's client panicked");
            }
            Ok::<(), &str>(())
        })
        .await
    });
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(b.state(), State::Open);
}

/// A sync call's panic is the protected code's, as before.
#[test]
fn a_panic_in_a_sync_call_is_a_failure() {
    let b = breaker();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        b.call(|| -> Result<(), &str> { panic!("boom") })
    }));
    assert!(unwound.is_err());
    assert_eq!(b.state(), State::Open);
}

/// A permit taken by hand and dropped by a panic unwinding through the code
/// that holds it: still a failure (the code that panicked is the protected
/// code as far as the breaker can tell).
#[test]
fn a_manual_permit_dropped_by_a_panic_is_a_failure() {
    let b = breaker();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let _permit = b.acquire().unwrap();
        panic!("boom");
    }));
    assert!(unwound.is_err());
    assert_eq!(b.state(), State::Open);
}

/// Observe-only mode records a panic like any other failure.
#[test]
fn a_panic_under_disable_is_recorded() {
    let b = Breaker::builder().threshold(5).build().unwrap();
    b.set_mode(Mode::ObserveOnly);
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        b.call(|| -> Result<(), &str> { panic!("boom") })
    }));
    assert!(unwound.is_err());
    assert_eq!(b.snapshot().consecutive_failures, 1);
}
