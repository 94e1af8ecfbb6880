//! A test kit for breakers you do not build yourself (feature `testing`):
//! `#[circuit_breaker]` breakers, and any breaker built without
//! [`Builder::clock`](crate::Builder::clock), on a clock the test moves, and
//! resets between tests.
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
//! assert!(testing::reset("kit"));
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
//! attribute breaker is one `static` shared by all of them. Give each test
//! its own breakers (one function per test, or `name = "…"` per test),
//! and reset by name ([`reset`]) at the start of a test. [`reset_all`] resets
//! every breaker of the program, those of tests running beside it included:
//! use it in binaries whose tests run one at a time (`--test-threads=1`, or a
//! shared `Mutex` each test holds). The running totals of a
//! [`Snapshot`](crate::Snapshot) are never reset (they feed `_total`
//! counters): compare them before and after.
//!
//! # Cost
//!
//! Without the feature none of this is compiled, and the clock is read as
//! before. With it, each read of the system clock first looks whether a test
//! clock is installed (one atomic load). Enable it for tests only:
//! `[dev-dependencies] failfast = { version = "0.1", features = ["testing"] }`.

use std::sync::OnceLock;
#[cfg(feature = "tokio")]
use std::time::Duration;

use crate::clock::{duration_nanos, ManualClock};
use crate::registry;

enum Source {
    Manual(ManualClock),
    /// tokio's clock, in nanoseconds since `origin`.
    #[cfg(feature = "tokio")]
    Tokio {
        origin: std::time::Instant,
    },
}

static SOURCE: OnceLock<Source> = OnceLock::new();

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

/// The test clock's time in nanoseconds, when one is installed.
#[inline]
pub(crate) fn now() -> Option<u64> {
    match SOURCE.get()? {
        Source::Manual(clock) => Some(duration_nanos(clock.now())),
        #[cfg(feature = "tokio")]
        Source::Tokio { origin } => {
            let now = ::tokio::time::Instant::now().into_std();
            Some(duration_nanos(now.saturating_duration_since(*origin)).max(1))
        }
    }
}

/// Resets every registered breaker ([`Breaker::reset`](crate::Breaker::reset)):
/// closed, counters cleared, manual modes lifted. For binaries whose tests
/// run one at a time; see [tests in parallel](self#tests-in-parallel).
pub fn reset_all() {
    for breaker in registry::all() {
        breaker.reset();
    }
}

/// Resets the breaker registered under `name`, if there is one: whether
/// there was.
pub fn reset(name: &str) -> bool {
    registry::get(name).map(|b| b.reset()).is_some()
}
