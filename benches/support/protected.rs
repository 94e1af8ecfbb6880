//! The protected functions of the `breaker` and `targets` benches, and the
//! breakers they are measured against. Each case is one call of `answer`:
//! bare (`work`), annotated with `#[circuit_breaker]`, or through a
//! breaker's closure API.

use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;

use failfast::{Breaker, circuit_breaker};
use failsafe::{backoff, failure_policy};

use crate::call::{Fault, answer};

/// The floor: a trivial function, called.
#[inline(never)]
pub fn work(x: u64) -> Result<(), Fault> {
    answer(x)
}

thread_local! {
    static NTH: Cell<u32> = const { Cell::new(0) };
}

/// Like `arg`, but `u64::MAX` (a failure) once every 64 calls on each thread:
/// a rate window then always holds a failure or two, far below its rate.
pub fn arg_1_in_64() -> u64 {
    let n = NTH.get();
    NTH.set(n.wrapping_add(1));
    black_box(if n % 64 == 0 { u64::MAX } else { 1 })
}

/// The same function as `work`, guarded.
#[inline(never)]
#[circuit_breaker(threshold = 5, recovery = "30s")]
pub fn consecutive(x: u64) -> Result<(), Fault> {
    answer(x)
}

#[inline(never)]
#[circuit_breaker(failure_rate = 0.5, window = 100, recovery = "30s")]
pub fn rate(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// As `rate`, for calls of which some fail.
#[inline(never)]
#[circuit_breaker(failure_rate = 0.5, window = 100, recovery = "30s")]
pub fn rate_some_failing(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// Tripped by the bench before it is measured: every call is refused.
#[inline(never)]
#[circuit_breaker(threshold = 1, recovery = "1h")]
pub fn open(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// `consecutive` with a bulkhead (`max_concurrent`): one slot taken and given
/// back per call.
#[inline(never)]
#[circuit_breaker(threshold = 5, recovery = "30s", max_concurrent = 64)]
pub fn bulkheaded(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// `#[retry]` above the same breaker as `consecutive`, for the path where
/// the first attempt succeeds: what retrying costs when nothing fails.
#[inline(never)]
#[failfast::retry(attempts = 3, backoff = "100ms..2s")]
#[circuit_breaker(threshold = 5, recovery = "30s")]
pub fn retried(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// `#[retry]` alone, first attempt succeeding.
#[inline(never)]
#[failfast::retry(attempts = 3, backoff = "100ms..2s")]
pub fn retried_alone(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// `consecutive` with one breaker per `host` (`key`): a call looks its
/// host's breaker up in the function's family first.
#[inline(never)]
#[circuit_breaker(key = host, threshold = 5, recovery = "30s")]
pub fn keyed(host: &str, x: u64) -> Result<(), Fault> {
    let _ = host;
    answer(x)
}

pub async fn plain_async(x: u64) -> Result<(), Fault> {
    answer(x)
}

#[circuit_breaker(threshold = 5, recovery = "30s")]
pub async fn guarded_async(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// `consecutive`'s settings, as a breaker for `Breaker::call`.
pub fn failfast_consecutive() -> Breaker {
    Breaker::builder()
        .threshold(5)
        .recovery(Duration::from_secs(30))
        .build()
        .expect("valid settings")
}

/// `rate`'s settings, as a breaker for `Breaker::call`.
pub fn failfast_rate() -> Breaker {
    Breaker::builder()
        .failure_rate(0.5)
        .window_calls(100)
        .recovery(Duration::from_secs(30))
        .build()
        .expect("valid settings")
}

pub type Failsafe =
    failsafe::StateMachine<failure_policy::ConsecutiveFailures<backoff::Constant>, ()>;

/// failsafe with its consecutive-failures policy: open after `failures`,
/// for `open_for`.
pub fn failsafe_consecutive(failures: u32, open_for: Duration) -> Failsafe {
    failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(
            failures,
            backoff::constant(open_for),
        ))
        .build()
}
