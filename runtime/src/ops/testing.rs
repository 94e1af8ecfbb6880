//! A test kit for breakers you do not build yourself (feature `testing`):
//! `#[circuit_breaker]` breakers, and any breaker built without
//! [`Builder::clock`](crate::Builder::clock), on a clock the test moves,
//! resets between tests, and attribute breakers of each test's own
//! ([`isolate`]) for tests running in parallel.
//!
//! ```
//! use failfast_runtime::{registry, testing, Breaker, Config, ManualClock, State};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! // Once per test binary (again in each test is fine: the same clock).
//! let clock = ManualClock::new();
//! testing::install_clock(&clock);
//!
//! // What `#[circuit_breaker(threshold = 1, recovery = "30s")]` declares.
//! let breaker = Arc::new(Breaker::builder().name("kit").threshold(1).build()?);
//! registry::register(&breaker);
//! let _ = breaker.call(|| Err::<(), _>("down"));
//! assert_eq!(breaker.state(), State::Open);
//! clock.advance(Duration::from_secs(30));
//! assert_eq!(breaker.state(), State::HalfOpen);
//!
//! registry::get("kit").expect("registered").set_mode(failfast_runtime::Mode::Normal);
//! assert_eq!(breaker.state(), State::Closed);
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! # Which clock
//!
//! One test clock per test binary (each file in `tests/` is one): either a
//! [`ManualClock`] ([`install_clock`]) or, with the `tokio` feature, tokio's
//! clock ([`follow_tokio_clock`]), so that `tokio::time::pause()` and
//! `tokio::time::advance()` move the breakers too. From then on every breaker
//! that would read the system clock reads the test clock instead; breakers
//! given a clock with `Builder::clock` keep theirs. Install it at the start
//! of every test that needs it (installing the same clock again does
//! nothing); a different clock in the same binary panics, since breakers
//! would see time jump. Deadlines already set on the system clock are not
//! carried over: install before the breakers trip.
//!
//! # Tests in parallel
//!
//! `cargo test` runs the tests of a binary on several threads, and an
//! attribute breaker is one `static` shared by all of them: a test that
//! trips `fetch`'s breaker would trip it for the test running beside it.
//! Start each test with [`isolate`]:
//!
//! ```
//! use failfast_runtime::{registry, testing, State};
//! # use failfast_runtime::__private::{acquire, breaker, Breaker, ConstConfig};
//! # // What `#[circuit_breaker(threshold = 1, name = "doc::fetch")] fn fetch(..)` declares.
//! # static FETCH: Breaker = Breaker::from_config(ConstConfig::new("doc::fetch").threshold(1).into_config());
//! # registry::register(&FETCH);
//! # fn fetch(fail: bool) -> Result<(), failfast_runtime::Rejected> {
//! #     let permit = acquire(breaker(&FETCH))?;
//! #     if fail { permit.record(failfast_runtime::Outcome::Failure) } else { permit.record(failfast_runtime::Outcome::Success) }
//! #     Ok(())
//! # }
//!
//! let scope = testing::isolate(); // in a test: `let _scope = …` (`let _ =` ends it at once)
//! let _ = fetch(true); // a failure trips the scope's `doc::fetch`
//! assert_eq!(registry::get("doc::fetch").unwrap().state(), State::Open);
//! assert!(fetch(false).is_err());
//! drop(scope);
//!
//! // Outside it (another test), the program's `doc::fetch` never saw a call.
//! assert_eq!(registry::get("doc::fetch").unwrap().state(), State::Closed);
//! assert!(fetch(false).is_ok());
//! ```
//!
//! Until the scope is dropped, every attribute breaker the thread calls is one
//! of the scope's own: made on its first call in the scope, from the
//! settings the attribute declared (not from changes made to the program's
//! breaker), and forgotten when the scope ends. That covers
//! `#[circuit_breaker]` breakers, the families of `key = …` (each key's
//! breaker is the scope's), breakers and families declared with
//! `failfast::breaker!` (still shared, within the scope, by the functions
//! that name them), and the bulkheads of `max_concurrent`. Inside a scope,
//! [`registry::get`](crate::registry::get), [`registry::all`](crate::registry::all) and `registry::families` (and so
//! [`configure`](mod@crate::ops::configure) and, with the
//! `metrics` feature, `metrics::export`) see the scope's breakers in place
//! of the ones they stand for, made if need be, so a test can force one
//! open or reconfigure it before its first call.
//!
//! Breakers and families a test builds itself (`Breaker::builder`,
//! `Family::builder`) are its own already; registered inside a scope
//! ([`registry::register`](crate::registry::register)), they are listed in that scope alone. Two tests
//! running in parallel that each build their service, with the same names,
//! inside their own scope find, list and configure their own by name
//! (`registry::get`, `registry::families`, `configure::apply`), never the
//! other's; neither is listed outside its scope, nor in a scope entered
//! later. Registered outside any scope, a breaker is listed everywhere,
//! and several of one name are all listed and all changed by name (see
//! [`registry`](crate::registry)).
//!
//! ```
//! use failfast_runtime::{configure, registry, testing, Breaker};
//! use std::sync::Arc;
//!
//! let test = |threshold| {
//!     std::thread::spawn(move || {
//!         let _scope = testing::isolate();
//!         let client = Arc::new(Breaker::builder().name("doc::client").threshold(threshold).build()?);
//!         registry::register(&client);
//!         configure::apply("doc::client", Breaker::builder().threshold(threshold + 1))?;
//!         assert_eq!(client.config().threshold(), threshold + 1);
//!         Ok::<_, failfast_runtime::ConfigError>(client)
//!     })
//! };
//! let (a, b) = (test(2), test(5));
//! let (a, b) = (a.join().unwrap()?, b.join().unwrap()?);
//! assert_eq!((a.config().threshold(), b.config().threshold()), (3, 6));
//! assert!(registry::get("doc::client").is_none(), "each was its scope's alone");
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! Not isolated:
//!
//! - the test clock: one per binary (see [which clock](#which-clock));
//! - a `breaker!` static read or called directly (`PAYMENTS.state()`): that
//!   is the program's breaker; look it up by name instead;
//! - breakers and families you build yourself and register outside a
//!   scope (see above);
//! - everything keyed by name beyond the registry: event listeners and the
//!   transition hook see the scope's breakers' transitions under the
//!   breaker's name, and metrics count every breaker of a name together
//!   (`metrics` module, "Counters count on under a name");
//! - `#[retry]`'s budget, which stays one per function.
//!
//! A scope is the thread's, and so is what it covers:
//!
//! - a `#[test]`: calls made on the test's thread;
//! - a `#[tokio::test]` (a current-thread runtime): the test's body and
//!   every task it spawns run on the test's thread, so a scope entered at
//!   the top of the body covers them all;
//! - `#[tokio::test(flavor = "multi_thread")]`: the body still runs on the
//!   test's thread; spawned tasks run on the runtime's workers, so spawn
//!   them with [`Scope::bind`] (`tokio::spawn(scope.bind(async { … }))`);
//! - a thread the test starts (or `spawn_blocking`): give it
//!   [`Scope::wrap`] (`std::thread::spawn(scope.wrap(|| …))`).
//!
//! A call made outside its test's scope (a task spawned without `bind`)
//! goes through the program's breaker, as without a scope.
//!
//! Without scopes, give each test its own breakers (one function per
//! test, or `name = "…"` per test) and reset them by name at the start of
//! a test (`registry::get(name)` and
//! [`Breaker::set_mode`](crate::Breaker::set_mode)`(Mode::Normal)`). The running
//! totals of a [`Snapshot`](crate::Snapshot) are never reset (they feed
//! `_total` counters): compare them before and after, or read a scope's
//! breaker, whose totals start at zero.
//!
//! # Cost
//!
//! Without the feature none of this is compiled: the clock is read as
//! before, and a call finds its breaker as before. With it, each read of
//! the system clock first looks whether a test clock is installed (one
//! atomic load), and each call of an attribute breaker first reads how many
//! scopes are entered in the binary (one relaxed atomic load); while any
//! is, on any thread, the call also reads a thread-local, and inside a
//! scope it takes a lock to find the scope's breaker. A scope's breakers
//! are never freed (a call still running on a thread the test left behind
//! may hold one): about 2 KiB per breaker, each key's of a family
//! included, for each scope that used it. Enable the feature for tests
//! only: `[dev-dependencies] failfast = { version = "0.1", features =
//! ["testing"] }`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
#[cfg(feature = "tokio")]
use std::time::Duration;

use crate::core::breaker::Breaker;
use crate::core::clock::ManualClock;
use crate::core::clock::{SOURCE, Source};
use crate::core::scope::{Own, StandIn, enter, leave};
use crate::policy::bulkhead::Bulkhead;
#[cfg(feature = "keyed")]
use crate::policy::keyed::Slot as KeyedSlot;

const TWICE: &str = "a test clock is installed once per test binary, and this one already \
                     has another: give every test of the binary the same `ManualClock` (a \
                     `static` behind a `LazyLock`), or put tests that need another clock in \
                     their own file under `tests/`";

/// Runs every breaker that reads the system clock on `clock` instead, for
/// the rest of the test binary.
///
/// # Panics
///
/// When another clock (another `ManualClock`, or tokio's) is already
/// installed.
pub fn install_clock(clock: &ManualClock) {
    let installed = SOURCE.get_or_init(|| Source::Manual(clock.clone()));
    match installed {
        Source::Manual(c) if c.same(clock) => {}
        _ => panic!("{TWICE}"),
    }
}

/// Runs every breaker that reads the system clock on tokio's clock, for the
/// rest of the test binary: under `tokio::time::pause()`, time moves for the
/// breakers only with `tokio::time::advance()` (or tokio's auto-advance).
/// Outside a paused runtime tokio's clock is the system's.
///
/// ```
/// # #[cfg(feature = "tokio")] {
/// use failfast_runtime::{testing, Breaker, State};
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// testing::follow_tokio_clock();
/// let breaker = Breaker::builder().threshold(1).build().unwrap();
/// let _ = breaker.call(|| Err::<(), _>("down"));
/// tokio::time::advance(Duration::from_secs(30)).await;
/// assert_eq!(breaker.state(), State::HalfOpen);
/// # });
/// # }
/// ```
///
/// # Panics
///
/// When a `ManualClock` is already installed.
#[cfg(feature = "tokio")]
pub fn follow_tokio_clock() {
    let installed = SOURCE.get_or_init(|| {
        // Well before any runtime's paused clock (which starts at the time
        // the runtime was built), so readings never fall below it.
        let now = std::time::Instant::now();
        let origin = [86_400, 3_600, 60, 1]
            .into_iter()
            .find_map(|secs| now.checked_sub(Duration::from_secs(secs)))
            .unwrap_or(now);
        Source::Tokio { origin }
    });
    if !matches!(installed, Source::Tokio { .. }) {
        panic!("{TWICE}");
    }
}

/// Seeds the calling thread's draws for graded shedding (`shed = …`),
/// which decide which calls a shedding breaker refuses: from here on, the
/// same seed gives the same refusals for the same calls on this thread.
/// Each thread draws on its own generator, so seed the thread that makes
/// the calls (each of them, in a simulation run on several threads), and
/// seed it again at the start of each run.
///
/// ```
/// use failfast_runtime::testing;
///
/// testing::seed_shedding(7);
/// // … calls through a shedding breaker on this thread: the refusals of
/// // seed 7, in every run.
/// ```
///
/// Unseeded, a thread's draws start from the process's random keys.
/// Seeding costs nothing on the call path: a draw reads the same
/// per-thread state either way.
pub fn seed_shedding(seed: u64) {
    crate::core::shed::seed(seed);
}

/// How a scope makes its own of each `static` it stands in for: a breaker
/// fresh from its declared settings, a bulkhead of the same places and
/// wait, a keyed family's slot with no family built yet.
impl StandIn for Breaker {
    fn fresh(shared: &Breaker) -> Breaker {
        let fresh = shared.fresh_copy();
        // Marked so that its first call does not list it in the program's
        // registry; the registry finds it through the scope.
        fresh.mark_registered();
        fresh
    }
}

impl StandIn for Bulkhead {
    fn fresh(shared: &Bulkhead) -> Bulkhead {
        Bulkhead::new(shared.max()).max_wait(shared.wait())
    }
}

#[cfg(feature = "keyed")]
impl StandIn for KeyedSlot {
    fn fresh(shared: &KeyedSlot) -> KeyedSlot {
        shared.fresh()
    }
}

/// `own`, entered on this thread while this lives.
struct Entered<'a>(&'a Arc<Own>);

impl<'a> Entered<'a> {
    fn new(own: &'a Arc<Own>) -> Self {
        enter(own);
        Entered(own)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        leave(self.0);
    }
}

/// A test's own breakers, from [`isolate`] until dropped; see [tests in
/// parallel](self#tests-in-parallel). Entered on the thread that made it,
/// it cannot be sent to another: hand [`bind`](Self::bind) futures and
/// [`wrap`](Self::wrap) closures to other threads instead.
///
/// ```
/// use failfast_runtime::testing;
///
/// let test = testing::isolate();
/// {
///     let _inner = testing::isolate(); // in force until the end of the block
/// }
/// // `test`'s breakers again, until it is dropped: then the program's.
/// drop(test);
/// ```
#[must_use = "the scope ends when this value is dropped: keep it, `let _scope = testing::isolate();`"]
pub struct Scope {
    own: Arc<Own>,
    /// Left on the thread it was entered on.
    _here: PhantomData<*const ()>,
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        leave(&self.own);
    }
}

/// Gives the calling thread breakers of its own until the returned
/// [`Scope`] is dropped: every attribute breaker (and `key = …` family,
/// `breaker!` breaker, `max_concurrent` bulkhead) called on this thread in
/// the meantime is the scope's, fresh from its declared settings, and the
/// registry finds the scope's; see [tests in
/// parallel](self#tests-in-parallel) for what is covered. Scopes nest: the
/// innermost is in force.
///
/// ```
/// use failfast_runtime::{registry, testing, State};
/// # use failfast_runtime::__private::{acquire, breaker, Breaker, ConstConfig};
/// # // What `#[circuit_breaker(threshold = 1, name = "doc::charge")] fn charge()` declares.
/// # static CHARGE: Breaker = Breaker::from_config(ConstConfig::new("doc::charge").threshold(1).into_config());
/// # registry::register(&CHARGE);
/// # fn charge() { let _ = acquire(breaker(&CHARGE)).map(|permit| permit.record(failfast_runtime::Outcome::Failure)); }
///
/// # let test = || {
/// // #[test]
/// // fn a_declined_charge_opens_the_breaker() {
///     let _scope = testing::isolate();
///     charge();
///     assert_eq!(registry::get("doc::charge").unwrap().state(), State::Open);
///     assert_eq!(registry::get("doc::charge").unwrap().snapshot().failures, 1);
/// // }
/// # };
/// # let (a, b) = (std::thread::spawn(test), std::thread::spawn(test));
/// # a.join().unwrap();
/// # b.join().unwrap();
/// ```
pub fn isolate() -> Scope {
    let own = Arc::new(Own::default());
    enter(&own);
    Scope {
        own,
        _here: PhantomData,
    }
}

impl Scope {
    /// `future`, run in this scope wherever it is polled: for tasks spawned
    /// on a multi-thread runtime (`tokio::spawn(scope.bind(async { … }))`).
    /// It keeps the scope's breakers after the `Scope` is dropped.
    ///
    /// ```
    /// use failfast_runtime::{registry, testing, State};
    /// # use failfast_runtime::__private::{acquire, breaker, Breaker, ConstConfig};
    /// # static STOCK: Breaker = Breaker::from_config(ConstConfig::new("doc::stock").threshold(1).into_config());
    /// # registry::register(&STOCK);
    /// # async fn stock() { let _ = acquire(breaker(&STOCK)).map(|permit| permit.record(failfast_runtime::Outcome::Failure)); }
    ///
    /// # tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap().block_on(async {
    /// let scope = testing::isolate();
    /// tokio::spawn(scope.bind(async { stock().await })).await.unwrap();
    /// assert_eq!(registry::get("doc::stock").unwrap().state(), State::Open);
    /// # });
    /// ```
    pub fn bind<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        Bound {
            future,
            own: Arc::clone(&self.own),
        }
    }

    /// `f`, run in this scope on whichever thread calls it: for threads the
    /// test starts (`std::thread::spawn(scope.wrap(|| …))`).
    ///
    /// ```
    /// use failfast_runtime::{registry, testing, State};
    /// # use failfast_runtime::__private::{acquire, breaker, Breaker, ConstConfig};
    /// # static LOOKUP: Breaker = Breaker::from_config(ConstConfig::new("doc::lookup").threshold(1).into_config());
    /// # registry::register(&LOOKUP);
    /// # fn lookup() { let _ = acquire(breaker(&LOOKUP)).map(|permit| permit.record(failfast_runtime::Outcome::Failure)); }
    ///
    /// let scope = testing::isolate();
    /// std::thread::spawn(scope.wrap(lookup)).join().unwrap();
    /// assert_eq!(registry::get("doc::lookup").unwrap().state(), State::Open);
    /// ```
    pub fn wrap<F: FnOnce() -> R, R>(&self, f: F) -> impl FnOnce() -> R + use<F, R> {
        let own = Arc::clone(&self.own);
        move || {
            let _entered = Entered::new(&own);
            f()
        }
    }
}

pin_project_lite::pin_project! {
    /// A future polled in a scope.
    struct Bound<F> {
        #[pin]
        future: F,
        own: Arc<Own>,
    }
}

impl<F: Future> Future for Bound<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = Entered::new(this.own);
        this.future.poll(cx)
    }
}
