//! The breaker's contract through `#[circuit_breaker]`: each scenario uses its own
//! annotated function (so its own static breaker) and reads the breaker back
//! through the registry, as an operator would.

use std::panic::catch_unwind;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use failfast::{Rejected, State, circuit_breaker, registry};

#[derive(Debug, PartialEq)]
enum InventoryError {
    Dependency(u16),
    BadSku,
    Unavailable(State),
}

impl From<Rejected> for InventoryError {
    fn from(r: Rejected) -> Self {
        InventoryError::Unavailable(r.state())
    }
}

fn state(name: &str) -> State {
    registry::get(name)
        .expect("registered on first call")
        .state()
}

/// Waits until the breaker `name` admits its half-open trial. The deadline is
/// checked against a clock the breaker refreshes from a background thread,
/// which a loaded machine can run late: poll instead of sleeping a fixed
/// margin past `recovery`.
fn until_half_open(name: &str) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while state(name) != State::HalfOpen {
        assert!(Instant::now() < give_up, "`{name}` never left Open");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn wait_for(counter: &AtomicUsize, target: usize) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while counter.load(SeqCst) < target && Instant::now() < give_up {
        std::thread::yield_now();
    }
}

#[test]
fn opens_after_exactly_threshold_consecutive_failures() {
    static BODY_RAN: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(threshold = 3, recovery = "1h", name = "exact_threshold")]
    fn check(ok: bool) -> Result<u32, InventoryError> {
        BODY_RAN.fetch_add(1, SeqCst);
        if ok {
            Ok(42)
        } else {
            Err(InventoryError::Dependency(503))
        }
    }

    check(false).unwrap_err();
    check(false).unwrap_err();
    assert_eq!(state("exact_threshold"), State::Closed);
    assert_eq!(check(true), Ok(42), "a success resets the count");
    check(false).unwrap_err();
    check(false).unwrap_err();
    assert_eq!(state("exact_threshold"), State::Closed);
    assert_eq!(check(false), Err(InventoryError::Dependency(503)));
    assert_eq!(state("exact_threshold"), State::Open);

    let ran_before = BODY_RAN.load(SeqCst);
    for _ in 0..50 {
        assert_eq!(check(true), Err(InventoryError::Unavailable(State::Open)));
    }
    assert_eq!(
        BODY_RAN.load(SeqCst),
        ran_before,
        "the body never runs while open"
    );
}

#[test]
fn bad_requests_never_move_the_breaker() {
    #[circuit_breaker(threshold = 2, counts = InventoryError::Dependency(_), name = "bad_requests")]
    fn check(sku: &str) -> Result<u32, InventoryError> {
        if sku.chars().any(char::is_lowercase) {
            Err(InventoryError::BadSku)
        } else {
            Ok(7)
        }
    }

    for _ in 0..100 {
        assert_eq!(check("sku-1"), Err(InventoryError::BadSku));
    }
    assert_eq!(state("bad_requests"), State::Closed);
    assert_eq!(
        registry::get("bad_requests")
            .unwrap()
            .snapshot()
            .consecutive_failures,
        0
    );
    assert_eq!(check("SKU-1"), Ok(7));
}

#[test]
fn recovers_in_real_time_without_restart() {
    static HEALTHY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    // Long enough that a busy machine cannot deschedule this thread past it
    // between the trip and the next line's check that the breaker is open.
    #[circuit_breaker(threshold = 2, recovery = "300ms", name = "real_time_recovery")]
    fn check() -> Result<&'static str, InventoryError> {
        if HEALTHY.load(SeqCst) {
            Ok("in stock")
        } else {
            Err(InventoryError::Dependency(503))
        }
    }

    check().unwrap_err();
    check().unwrap_err();
    assert_eq!(state("real_time_recovery"), State::Open);
    HEALTHY.store(true, SeqCst); // the dependency heals while the breaker is open
    assert_eq!(check(), Err(InventoryError::Unavailable(State::Open)));
    std::thread::sleep(Duration::from_millis(300));
    until_half_open("real_time_recovery");
    assert_eq!(state("real_time_recovery"), State::HalfOpen);
    assert_eq!(
        check(),
        Ok("in stock"),
        "the first call after recovery is the trial"
    );
    assert_eq!(state("real_time_recovery"), State::Closed);
}

#[test]
fn thundering_herd_of_threads_sends_one_trial() {
    static REACHED: AtomicUsize = AtomicUsize::new(0);
    static REJECTED: AtomicUsize = AtomicUsize::new(0);
    static TRIPPING: AtomicUsize = AtomicUsize::new(1);

    #[circuit_breaker(threshold = 1, recovery = "100ms", name = "herd_threads")]
    fn check() -> Result<(), InventoryError> {
        if TRIPPING.swap(0, SeqCst) == 1 {
            return Err(InventoryError::Dependency(503));
        }
        REACHED.fetch_add(1, SeqCst);
        wait_for(&REJECTED, 9); // still down: hold the trial while the herd arrives
        Err(InventoryError::Dependency(503))
    }

    check().unwrap_err();
    assert_eq!(state("herd_threads"), State::Open);
    until_half_open("herd_threads");
    let start = Arc::new(Barrier::new(10));
    let herd: Vec<_> = (0..10)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                if check() == Err(InventoryError::Unavailable(State::HalfOpen)) {
                    REJECTED.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    for t in herd {
        t.join().unwrap();
    }
    assert_eq!(REACHED.load(SeqCst), 1);
    assert_eq!(REJECTED.load(SeqCst), 9);
    assert_eq!(state("herd_threads"), State::Open);
}

#[test]
fn thundering_herd_of_tasks_sends_one_trial() {
    static REACHED: AtomicUsize = AtomicUsize::new(0);
    static REJECTED: AtomicUsize = AtomicUsize::new(0);
    static TRIPPING: AtomicUsize = AtomicUsize::new(1);

    #[circuit_breaker(threshold = 1, recovery = "100ms", name = "herd_tasks")]
    async fn check() -> Result<(), InventoryError> {
        if TRIPPING.swap(0, SeqCst) == 1 {
            return Err(InventoryError::Dependency(503));
        }
        REACHED.fetch_add(1, SeqCst);
        let give_up = Instant::now() + Duration::from_secs(10);
        while REJECTED.load(SeqCst) < 9 && Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Err(InventoryError::Dependency(503))
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        check().await.unwrap_err();
        let give_up = Instant::now() + Duration::from_secs(10);
        while state("herd_tasks") != State::HalfOpen {
            assert!(Instant::now() < give_up, "`herd_tasks` never left Open");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let start = Arc::new(tokio::sync::Barrier::new(10));
        let herd: Vec<_> = (0..10)
            .map(|_| {
                let start = start.clone();
                tokio::spawn(async move {
                    start.wait().await;
                    if check().await == Err(InventoryError::Unavailable(State::HalfOpen)) {
                        REJECTED.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        for t in herd {
            t.await.unwrap();
        }
    });
    assert_eq!(REACHED.load(SeqCst), 1);
    assert_eq!(REJECTED.load(SeqCst), 9);
}

#[test]
fn panicking_trial_does_not_wedge() {
    static MODE: AtomicUsize = AtomicUsize::new(0); // 0 fail, 1 panic, 2 ok

    #[circuit_breaker(threshold = 1, recovery = "20ms", name = "panicking_trial")]
    fn check() -> Result<(), InventoryError> {
        match MODE.load(SeqCst) {
            0 => Err(InventoryError::Dependency(503)),
            1 => panic!("client bug"),
            _ => Ok(()),
        }
    }

    check().unwrap_err();
    until_half_open("panicking_trial");
    MODE.store(1, SeqCst);
    assert!(catch_unwind(check).is_err(), "the panic resumes unwinding");
    assert_eq!(
        state("panicking_trial"),
        State::Open,
        "a panic is a failed trial"
    );
    MODE.store(2, SeqCst);
    until_half_open("panicking_trial");
    check().expect("a new trial runs");
    assert_eq!(state("panicking_trial"), State::Closed);
}

#[test]
fn neutral_trial_does_not_wedge() {
    static MODE: AtomicUsize = AtomicUsize::new(0); // 0 fail, 1 bad request, 2 ok

    #[circuit_breaker(threshold = 1, recovery = "20ms", counts = InventoryError::Dependency(_), name = "neutral_trial")]
    fn check() -> Result<(), InventoryError> {
        match MODE.load(SeqCst) {
            0 => Err(InventoryError::Dependency(503)),
            1 => Err(InventoryError::BadSku),
            _ => Ok(()),
        }
    }

    check().unwrap_err();
    until_half_open("neutral_trial");
    MODE.store(1, SeqCst);
    assert_eq!(check(), Err(InventoryError::BadSku));
    assert_eq!(state("neutral_trial"), State::HalfOpen);
    MODE.store(2, SeqCst);
    check().expect("the permit came back");
    assert_eq!(state("neutral_trial"), State::Closed);
}

#[tokio::test]
async fn cancelled_trial_does_not_wedge() {
    static MODE: AtomicUsize = AtomicUsize::new(0); // 0 fail, 1 hang, 2 ok

    #[circuit_breaker(threshold = 1, recovery = "20ms", name = "cancelled_trial")]
    async fn check() -> Result<(), InventoryError> {
        match MODE.load(SeqCst) {
            0 => Err(InventoryError::Dependency(503)),
            1 => std::future::pending().await,
            _ => Ok(()),
        }
    }

    check().await.unwrap_err();
    until_half_open("cancelled_trial");
    MODE.store(1, SeqCst);
    assert!(
        tokio::time::timeout(Duration::from_millis(10), check())
            .await
            .is_err()
    );
    assert_eq!(state("cancelled_trial"), State::HalfOpen);
    tokio::select! {
        _ = check() => unreachable!("hangs"),
        () = tokio::task::yield_now() => {}
    }
    MODE.store(2, SeqCst);
    check()
        .await
        .expect("the dropped trials gave their permits back");
    assert_eq!(state("cancelled_trial"), State::Closed);
}

#[test]
fn reading_state_never_consumes_the_trial() {
    static HOLD: AtomicUsize = AtomicUsize::new(0);
    static TRIPPED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(threshold = 1, recovery = "20ms", name = "state_reads")]
    fn check() -> Result<(), InventoryError> {
        if TRIPPED.swap(1, SeqCst) == 0 {
            return Err(InventoryError::Dependency(503));
        }
        HOLD.fetch_add(1, SeqCst);
        Ok(())
    }

    check().unwrap_err();
    until_half_open("state_reads");
    let breaker = registry::get("state_reads").unwrap();
    for _ in 0..10_000 {
        assert_eq!(breaker.state(), State::HalfOpen);
        let _ = breaker.snapshot();
    }
    check().expect("the trial was still available");
    assert_eq!(HOLD.load(SeqCst), 1);
    assert_eq!(breaker.state(), State::Closed);
}

/// A panic elsewhere is not the dependency's failure: a protected future
/// dropped while a sibling future's panic unwinds leaves the breaker alone,
/// while a panic of the protected body itself still counts.
mod panics_elsewhere {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::time::Duration;

    use super::{InventoryError, state};
    use failfast::{State, circuit_breaker};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// Runs `protected` next to a sibling that panics while `protected` is
    /// still pending, so `protected` is dropped during the unwinding.
    fn join_with_panicking_sibling<F: std::future::Future>(protected: F) {
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            runtime().block_on(async {
                tokio::join!(protected, async {
                    tokio::task::yield_now().await;
                    panic!("the sibling's own bug");
                })
            })
        }));
        assert!(unwound.is_err(), "the sibling's panic reaches the caller");
    }

    #[test]
    fn sibling_panic_under_join_is_not_a_failure() {
        #[circuit_breaker(threshold = 1, name = "panics_elsewhere::join")]
        async fn healthy() -> Result<(), InventoryError> {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(())
        }

        join_with_panicking_sibling(healthy());
        assert_eq!(state("panics_elsewhere::join"), State::Closed);
    }

    #[test]
    fn sibling_panic_is_not_a_failure_under_async_trait() {
        #[async_trait::async_trait]
        trait Inventory {
            async fn stock(&self) -> Result<u32, InventoryError>;
        }

        struct Client;

        #[async_trait::async_trait]
        impl Inventory for Client {
            #[circuit_breaker(threshold = 1, name = "panics_elsewhere::async_trait")]
            async fn stock(&self) -> Result<u32, InventoryError> {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(1)
            }
        }

        join_with_panicking_sibling(Client.stock());
        assert_eq!(state("panics_elsewhere::async_trait"), State::Closed);
    }

    #[test]
    fn panic_of_the_async_body_itself_is_a_failure() {
        #[circuit_breaker(threshold = 1, name = "panics_elsewhere::own")]
        async fn buggy() -> Result<(), InventoryError> {
            tokio::task::yield_now().await;
            panic!("the body's own bug");
        }

        let unwound = catch_unwind(|| runtime().block_on(buggy()));
        assert!(unwound.is_err(), "the panic resumes unwinding");
        assert_eq!(state("panics_elsewhere::own"), State::Open);
    }
}

/// `fallback = |error| ..`: the fallback of the error alone, for bodies that
/// consume their arguments. Called on rejections and counted failures, never
/// on neutral errors, sync and async.
mod error_only_fallback {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use super::{InventoryError, state};
    use failfast::{Error, State, circuit_breaker};

    pub struct Request {
        status: u16,
    }

    fn send(req: Request) -> Result<u32, InventoryError> {
        match req.status {
            200 => Ok(1),
            400 => Err(InventoryError::BadSku),
            status => Err(InventoryError::Dependency(status)),
        }
    }

    static SYNC_CALLS: AtomicUsize = AtomicUsize::new(0);

    fn cached(error: &Error<InventoryError>) -> Result<u32, InventoryError> {
        SYNC_CALLS.fetch_add(1, SeqCst);
        Ok(if matches!(error, failfast::Error::Rejected(_)) {
            100
        } else {
            200
        })
    }

    #[circuit_breaker(
        threshold = 2,
        recovery = "60s",
        counts = InventoryError::Dependency(_),
        fallback = |error| cached(&error),
        name = "error_only_fallback::sync"
    )]
    fn call(req: Request) -> Result<u32, InventoryError> {
        send(req)
    }

    #[test]
    fn called_on_rejection_and_counted_failure_not_on_neutral_errors() {
        assert_eq!(call(Request { status: 400 }), Err(InventoryError::BadSku));
        assert_eq!(
            SYNC_CALLS.load(SeqCst),
            0,
            "a neutral error reaches the caller"
        );
        assert_eq!(call(Request { status: 503 }), Ok(200), "a counted failure");
        assert_eq!(call(Request { status: 503 }), Ok(200));
        assert_eq!(state("error_only_fallback::sync"), State::Open);
        assert_eq!(call(Request { status: 200 }), Ok(100), "a rejection");
        assert_eq!(SYNC_CALLS.load(SeqCst), 3);
    }

    pub struct Order {
        sku: &'static str,
        req: Request,
    }

    fn cached_for(sku: &str, error: &Error<InventoryError>) -> Result<u32, InventoryError> {
        let len = u32::try_from(sku.len()).unwrap();
        Ok(if matches!(error, failfast::Error::Rejected(_)) {
            len
        } else {
            len * 10
        })
    }

    #[circuit_breaker(
        threshold = 1,
        recovery = "60s",
        counts = InventoryError::Dependency(_),
        fallback = {
            let sku = order.sku.to_owned();
            move |error| cached_for(&sku, &error)
        },
        name = "error_only_fallback::kept"
    )]
    fn place(order: Order) -> Result<u32, InventoryError> {
        send(order.req)
    }

    #[test]
    fn a_kept_part_of_a_consumed_argument_reaches_the_fallback() {
        let order = |sku, status| Order {
            sku,
            req: Request { status },
        };
        assert_eq!(place(order("ab", 400)), Err(InventoryError::BadSku));
        assert_eq!(place(order("ab", 503)), Ok(20), "a counted failure");
        assert_eq!(state("error_only_fallback::kept"), State::Open);
        assert_eq!(place(order("abc", 200)), Ok(3), "a rejection");
    }

    static ASYNC_CALLS: AtomicUsize = AtomicUsize::new(0);

    async fn cached_async(error: Error<InventoryError>) -> Result<u32, InventoryError> {
        tokio::task::yield_now().await;
        ASYNC_CALLS.fetch_add(1, SeqCst);
        Ok(if matches!(error, failfast::Error::Rejected(_)) {
            100
        } else {
            200
        })
    }

    #[circuit_breaker(
        threshold = 1,
        recovery = "60s",
        counts = InventoryError::Dependency(_),
        fallback = |error| cached_async(error),
        name = "error_only_fallback::async"
    )]
    async fn call_async(req: Request) -> Result<u32, InventoryError> {
        tokio::task::yield_now().await;
        send(req)
    }

    #[tokio::test]
    async fn async_fallback_is_awaited_on_rejection_and_counted_failure() {
        assert_eq!(
            call_async(Request { status: 400 }).await,
            Err(InventoryError::BadSku)
        );
        assert_eq!(call_async(Request { status: 503 }).await, Ok(200));
        assert_eq!(state("error_only_fallback::async"), State::Open);
        assert_eq!(call_async(Request { status: 200 }).await, Ok(100));
        assert_eq!(ASYNC_CALLS.load(SeqCst), 2);
    }

    /// A client consumed by its own call: `self` by value.
    pub struct OneShot {
        req: Request,
    }

    impl OneShot {
        #[circuit_breaker(
            threshold = 1,
            recovery = "60s",
            counts = InventoryError::Dependency(_),
            fallback = |error| {
                SELF_CALLS.fetch_add(1, SeqCst);
                Ok(if matches!(error, failfast::Error::Rejected(_)) { 100 } else { 200 })
            },
            name = "error_only_fallback::self_by_value"
        )]
        fn send(self) -> Result<u32, InventoryError> {
            send(self.req)
        }
    }

    #[test]
    fn a_method_taking_self_by_value_answers_from_the_fallback() {
        let one = |status| OneShot {
            req: Request { status },
        };
        assert_eq!(one(400).send(), Err(InventoryError::BadSku));
        assert_eq!(one(503).send(), Ok(200), "a counted failure");
        assert_eq!(state("error_only_fallback::self_by_value"), State::Open);
        assert_eq!(one(200).send(), Ok(100), "a rejection");
        assert_eq!(
            SELF_CALLS.load(SeqCst),
            2,
            "not called on the neutral error"
        );
    }

    static SELF_CALLS: AtomicUsize = AtomicUsize::new(0);

    /// A generic payload taken by value; the block form keeps its length.
    #[circuit_breaker(
        threshold = 1,
        recovery = "60s",
        counts = InventoryError::Dependency(_),
        fallback = {
            let len = payload.as_ref().len();
            move |error: Error<InventoryError>| async move {
                Ok(if matches!(error, failfast::Error::Rejected(_)) { len as u32 } else { len as u32 * 10 })
            }
        },
        name = "error_only_fallback::generic"
    )]
    async fn upload<T: AsRef<[u8]> + Send>(payload: T, status: u16) -> Result<u32, InventoryError> {
        tokio::task::yield_now().await;
        drop(payload);
        send(Request { status })
    }

    #[tokio::test]
    async fn a_generic_argument_by_value_keeps_a_part_for_the_fallback() {
        assert_eq!(upload(vec![0u8; 3], 400).await, Err(InventoryError::BadSku));
        assert_eq!(upload(vec![0u8; 3], 503).await, Ok(30), "a counted failure");
        assert_eq!(state("error_only_fallback::generic"), State::Open);
        assert_eq!(upload(*b"abcd", 200).await, Ok(4), "a rejection");
    }
}
