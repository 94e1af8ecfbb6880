//! Every key that is a breaker setting takes a constant: a path, a const
//! fn call, an arithmetic expression.
use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

mod limits {
    use std::time::Duration;

    pub const THRESHOLD: u32 = 3;
    pub const RATE: f64 = 0.25;
    pub const SHED: f64 = 2.0;
    pub const SLOW: Duration = Duration::from_millis(500);
    pub const fn trials() -> u32 {
        2
    }
}

const RECOVERY: Duration = Duration::from_secs(30);

#[circuit_breaker(
    threshold = limits::THRESHOLD,
    recovery = RECOVERY,
    jitter = limits::RATE / 2.0,
    trial_calls = limits::trials(),
    success_threshold = limits::trials() + 1
)]
fn consecutive(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[circuit_breaker(
    failure_rate = limits::RATE,
    window = 20,
    min_calls = limits::THRESHOLD * 2,
    slow = limits::SLOW,
    slow_rate = { limits::RATE * 2.0 },
    recovery = Duration::from_secs(2 * 60)
)]
fn rates(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[circuit_breaker(threshold = limits::THRESHOLD, window = 3)]
fn within_calls(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[circuit_breaker(threshold = limits::THRESHOLD * 2, window = "10s")]
fn within_time(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[circuit_breaker(shed = limits::SHED * 1.5, min_calls = limits::THRESHOLD * 10)]
fn shedding(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[test]
fn main() {
    let _ = consecutive(1);
    let _ = rates(1);
    let _ = within_calls(1);
    let _ = within_time(1);
    let _ = shedding(1);
}
