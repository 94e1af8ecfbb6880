//! `testing::isolate`: tests of one binary running at the same time call
//! the same attribute functions, each in its own scope, and each sees only
//! its own breakers. The two tests of a pair meet at a rendezvous between
//! their steps, so that they really overlap: run the file's tests together
//! on two test threads or more (`cargo test`'s default on a machine with
//! two cores or more); a test whose partner never comes fails after 30 s.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::support::{Down, outcome};

use failfast::{Breaker, Snapshot, State, circuit_breaker, registry, testing};

#[circuit_breaker(threshold = 2, recovery = "1h", name = "isolate::lookup")]
fn lookup(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

#[circuit_breaker(key = replica, threshold = 1, recovery = "1h", name = "isolate::replica")]
fn replica(replica: &str, fail: bool) -> Result<(), Down> {
    let _ = replica;
    outcome(fail)
}

/// A generic function whose key type is its type parameter's: one family
/// per key type.
#[circuit_breaker(key = id, threshold = 1, recovery = "1h", name = "isolate::generic")]
fn generic<K: failfast::Key>(id: K) -> Result<(), Down> {
    let _ = id;
    outcome(false)
}

/// Tells `inside` once it runs, then waits for `until`.
#[circuit_breaker(max_concurrent = 1, name = "isolate::held")]
fn held(inside: &Sender<()>, until: &Receiver<()>) -> Result<(), Down> {
    inside.send(()).unwrap();
    until.recv().unwrap();
    Ok(())
}

failfast::breaker!(static GATEWAY = threshold = 1, recovery = "1h", name = "isolate::gateway");

#[circuit_breaker(breaker = GATEWAY)]
async fn charge(fail: bool) -> Result<(), Down> {
    tokio::task::yield_now().await;
    outcome(fail)
}

#[circuit_breaker(breaker = GATEWAY)]
async fn refund(fail: bool) -> Result<(), Down> {
    tokio::task::yield_now().await;
    outcome(fail)
}

#[circuit_breaker(threshold = 2, recovery = "1h", name = "isolate::wrapped")]
fn wrapped(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

fn state(name: &str) -> State {
    registry::get(name).unwrap().state()
}

fn snapshot(name: &str) -> Snapshot {
    registry::get(name).unwrap().snapshot()
}

/// Two tests meeting step after step, each on a thread of its own: a
/// `Barrier` of two that gives up after 30 s, so that a half whose partner
/// failed fails too instead of hanging.
struct Pair {
    /// Arrived at the current step, and the steps completed.
    steps: Mutex<(u32, u32)>,
    met: Condvar,
}

impl Pair {
    const fn new() -> Self {
        Pair {
            steps: Mutex::new((0, 0)),
            met: Condvar::new(),
        }
    }

    fn meet(&self) {
        let mut steps = self.steps.lock().unwrap();
        let step = steps.1;
        steps.0 += 1;
        if steps.0 == 2 {
            *steps = (0, step + 1);
            self.met.notify_all();
            return;
        }
        let (steps, waited) = self
            .met
            .wait_timeout_while(steps, Duration::from_secs(30), |s| s.1 == step)
            .unwrap();
        drop(steps);
        assert!(
            !waited.timed_out(),
            "the other half of the pair did not come: it failed"
        );
    }
}

static SYNC: Pair = Pair::new();
static TOKIO: Pair = Pair::new();

/// A call held in one scope takes the place of its `max_concurrent = 1`,
/// and only its own: another scope's call goes through.
#[test]
fn scopes_have_their_own_max_concurrent_places() {
    let first = testing::isolate();
    let (inside, entered) = channel();
    let (release, until) = channel();
    let holder = std::thread::spawn(first.wrap(move || held(&inside, &until)));
    entered.recv().unwrap();
    {
        let _second = testing::isolate();
        let (inside, _entered) = channel();
        let (release, until) = channel();
        release.send(()).unwrap();
        assert_eq!(held(&inside, &until), Ok(()));
    }
    let (inside, _entered) = channel();
    let (_release, until) = channel();
    assert!(matches!(held(&inside, &until), Err(Down::Refused(_))));
    release.send(()).unwrap();
    assert_eq!(holder.join().unwrap(), Ok(()));
}

/// Scopes nest, the innermost in force; calls made in a scope never reach
/// the program's breaker.
#[test]
fn scopes_nest_and_calls_in_them_never_reach_the_program_s_breaker() {
    let outer = testing::isolate();
    assert_eq!(lookup(true), Err(Down::Failed));
    {
        let _inner = testing::isolate();
        assert_eq!(snapshot("isolate::lookup").failures, 0);
        assert_eq!(lookup(true), Err(Down::Failed));
        assert_eq!(lookup(true), Err(Down::Failed));
        assert_eq!(state("isolate::lookup"), State::Open);
    }
    let s = snapshot("isolate::lookup");
    assert_eq!((s.failures, s.state), (1, State::Closed));
    drop(outer);
    // Every test of this file calls `lookup` in a scope.
    assert_eq!(snapshot("isolate::lookup").calls, 0);
}

/// In a scope, a declared breaker found by name before its first call
/// there is already the scope's: forced open by name, it refuses the
/// scope's next call, and the program's breaker stays as it was.
#[test]
fn a_breaker_found_by_name_before_its_first_call_is_the_scope_s() {
    {
        let _scope = testing::isolate();
        registry::get("isolate::lookup")
            .unwrap()
            .set_mode(failfast::Mode::ForcedOpen);
        assert!(matches!(lookup(false), Err(Down::Refused(_))));
    }
    assert_eq!(state("isolate::lookup"), State::Closed);
}

/// In a scope, a breaker built in code and kept in a `static` is not one the
/// scope stands in for: found by name there, it is the program's own, and
/// forcing it open by name opens the program's breaker.
#[test]
fn a_static_built_in_code_found_by_name_in_a_scope_is_the_program_s() {
    static BUILT: std::sync::LazyLock<Breaker> = std::sync::LazyLock::new(|| {
        Breaker::builder()
            .name("isolate::built_in_code")
            .build()
            .unwrap()
    });
    registry::register(&*BUILT);
    {
        let _scope = testing::isolate();
        let found = registry::get("isolate::built_in_code").unwrap();
        assert!(std::ptr::eq(&*found, &*BUILT), "the scope stood in for it");
        found.set_mode(failfast::Mode::ForcedOpen);
    }
    assert!(
        BUILT.acquire().is_err(),
        "the program's breaker was not forced open"
    );
}

/// A closure `wrap` hands to another thread runs in the scope, and the
/// thread leaves the scope when it returns: that thread's later calls are
/// the program's.
#[test]
fn a_thread_leaves_the_scope_when_its_wrapped_closure_returns() {
    let scope = testing::isolate();
    let in_scope = scope.wrap(|| wrapped(false));
    std::thread::spawn(move || {
        assert_eq!(in_scope(), Ok(()));
        assert_eq!(wrapped(false), Ok(()));
    })
    .join()
    .unwrap();
    assert_eq!(snapshot("isolate::wrapped").calls, 1, "the scope's");
    drop(scope);
    assert_eq!(snapshot("isolate::wrapped").calls, 1, "the program's");
}

/// A scope shows as a scope, without the breakers it holds.
#[test]
fn a_scope_debugs_as_a_scope() {
    let scope = testing::isolate();
    assert_eq!(format!("{scope:?}"), "Scope { .. }");
}

/// Runs `one` and `two` at the same time, each on a thread of its own, as
/// two tests of one binary run; a panic in either fails the test.
fn at_once(one: impl FnOnce() + Send, two: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        let one = s.spawn(one);
        let two = s.spawn(two);
        let (one, two) = (one.join(), two.join());
        if let Err(panic) = one.and(two) {
            std::panic::resume_unwind(panic);
        }
    });
}

/// Two tests at once: one trips `lookup` and replica `a` in its scope while
/// the other finds them closed in its own.
#[test]
fn two_tests_at_once_each_see_only_their_own_breakers() {
    at_once(
        sync_one_trips_lookup_and_a_replica,
        sync_two_finds_them_closed,
    );
}

/// Two tokio tests at once, on a current-thread and a multi-thread runtime:
/// one trips the shared gateway from a task, the other finds it closed and
/// binds its tasks to its scope.
#[test]
fn two_tokio_tests_at_once_each_see_only_their_own_shared_breaker() {
    at_once(
        || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(tokio_one_trips_the_shared_gateway_from_a_task());
        },
        || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(tokio_two_binds_its_tasks_on_a_multi_thread_runtime());
        },
    );
}

/// Trips `lookup` and replica `a` in its scope while the other half of the
/// pair uses them in its own; afterwards, nothing the other did shows here.
fn sync_one_trips_lookup_and_a_replica() {
    let _scope = testing::isolate();
    SYNC.meet();
    assert_eq!(lookup(true), Err(Down::Failed));
    assert_eq!(lookup(true), Err(Down::Failed));
    assert_eq!(replica("a", true), Err(Down::Failed));
    assert_eq!(state("isolate::lookup"), State::Open);
    assert_eq!(state("isolate::replica[a]"), State::Open);
    SYNC.meet(); // the other half calls them now
    SYNC.meet(); // ...and has called, reconfigured and reset its own
    let s = snapshot("isolate::lookup");
    assert_eq!((s.failures, s.successes, s.rejected), (2, 0, 0));
    assert_eq!(s.state, State::Open);
    assert_eq!(
        registry::get("isolate::lookup")
            .unwrap()
            .config()
            .threshold(),
        2
    );
    assert!(matches!(lookup(false), Err(Down::Refused(_))));
    let family = registry::family("isolate::replica").unwrap();
    assert_eq!(
        family.failover(&["a", "b"]).copied().collect::<Vec<_>>(),
        ["b"]
    );
}

/// While the other half of the pair has tripped `lookup` and replica `a`
/// in its scope, finds them closed in its own, from a thread it starts
/// too; its `configure` and resets change its own breakers only.
fn sync_two_finds_them_closed() {
    let scope = testing::isolate();
    SYNC.meet();
    SYNC.meet(); // the other half has tripped its own
    assert_eq!(state("isolate::lookup"), State::Closed);
    assert_eq!(lookup(false), Ok(()));
    assert_eq!(replica("a", false), Ok(()));
    let family = registry::family("isolate::replica").unwrap();
    let mut up: Vec<&str> = family.failover(&["a", "b"]).copied().collect();
    up.sort_unstable();
    assert_eq!(up, ["a", "b"]);
    assert_eq!(
        std::thread::spawn(scope.wrap(|| lookup(true)))
            .join()
            .unwrap(),
        Err(Down::Failed)
    );
    let s = snapshot("isolate::lookup");
    assert_eq!((s.successes, s.failures, s.state), (1, 1, State::Closed));

    failfast::configure::apply("isolate::lookup", Breaker::builder().threshold(1)).unwrap();
    assert_eq!(lookup(true), Err(Down::Failed));
    assert_eq!(state("isolate::lookup"), State::Open);
    assert_eq!(replica("c", true), Err(Down::Failed));
    assert_eq!(state("isolate::replica[c]"), State::Open);
    for name in ["isolate::lookup", "isolate::replica[c]"] {
        registry::get(name)
            .unwrap()
            .set_mode(failfast::Mode::Normal);
    }
    assert_eq!(state("isolate::lookup"), State::Closed);
    assert_eq!(state("isolate::replica[c]"), State::Closed);
    SYNC.meet();
}

/// On a current-thread runtime, a task the test spawns runs on the test's
/// thread, in its scope: it trips the shared gateway, which refuses the
/// other function sharing it.
async fn tokio_one_trips_the_shared_gateway_from_a_task() {
    let _scope = testing::isolate();
    TOKIO.meet();
    assert_eq!(tokio::spawn(charge(true)).await.unwrap(), Err(Down::Failed));
    assert_eq!(state("isolate::gateway"), State::Open);
    assert!(matches!(refund(false).await, Err(Down::Refused(_))));
    TOKIO.meet(); // the other half calls the gateway now
    TOKIO.meet();
    let s = snapshot("isolate::gateway");
    assert_eq!((s.failures, s.rejected, s.successes), (1, 1, 0));
    assert_eq!(s.state, State::Open);
}

/// On a multi-thread runtime, the test's body runs on the test's thread,
/// in its scope, and tasks bound to the scope run in it on the workers; a
/// task spawned without `bind` uses the program's breaker.
async fn tokio_two_binds_its_tasks_on_a_multi_thread_runtime() {
    let scope = testing::isolate();
    TOKIO.meet();
    TOKIO.meet(); // the other half has tripped its gateway
    assert_eq!(charge(false).await, Ok(()));
    let tasks: Vec<_> = (0..4)
        .map(|_| tokio::spawn(scope.bind(refund(false))))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), Ok(()));
    }
    let s = snapshot("isolate::gateway");
    assert_eq!((s.successes, s.failures, s.state), (5, 0, State::Closed));

    assert_eq!(tokio::spawn(charge(true)).await.unwrap(), Err(Down::Failed));
    assert_eq!(state("isolate::gateway"), State::Closed);
    assert_eq!(
        GATEWAY.state(),
        State::Open,
        "the program's, outside the scope"
    );
    TOKIO.meet();
}

/// In a scope, a generic keyed function's family of a second key type is
/// listed beside its first, as it is outside one; once the scope is over,
/// neither is: the program's declared family is, without members.
#[test]
fn a_scope_lists_a_generic_functions_family_of_each_key_type() {
    let generic_families = || {
        registry::families()
            .into_iter()
            .filter(|f| f.name() == "isolate::generic")
            .map(|f| f.members().len())
            .collect::<Vec<_>>()
    };
    {
        let _scope = testing::isolate();
        assert_eq!(generic(7u32), Ok(()));
        assert_eq!(generic("seven"), Ok(()));
        assert_eq!(generic("eight"), Ok(()));
        let mut members = generic_families();
        members.sort_unstable();
        assert_eq!(members, [1, 2]);
    }
    assert_eq!(generic_families(), [0]);
}
