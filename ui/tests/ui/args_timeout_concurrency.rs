use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A `timeout` written as a number, not a string.
#[circuit_breaker(timeout = 3)]
async fn timeout_not_duration(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// A sync call cannot be stopped at a deadline.
#[circuit_breaker(threshold = 2, timeout = "3s")]
fn timeout_on_sync_fn(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// A call is cut off at `timeout`: it can never run longer than `slow` = 5s.
#[circuit_breaker(slow = "5s", timeout = "3s")]
async fn slow_not_shorter_than_timeout(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// Under `shed`, a call may run longer than the window it was admitted in.
#[circuit_breaker(shed = 2, shed_window = "1s", timeout = "3s")]
async fn shed_window_shorter_than_timeout(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// The same with `shed`'s default window of 10 seconds.
#[circuit_breaker(shed = 2, timeout = "30s")]
async fn shed_default_window_shorter_than_timeout(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// No call could ever run.
#[circuit_breaker(max_concurrent = 0)]
fn max_concurrent_zero(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// A `max_wait` without places to wait for.
#[circuit_breaker(max_wait = "50ms")]
fn max_wait_without_max_concurrent(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `max_wait` written as a number, not a string.
#[circuit_breaker(max_concurrent = 4, max_wait = 50)]
fn max_wait_not_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `max_wait` of zero.
#[circuit_breaker(max_concurrent = 4, max_wait = "0s")]
fn max_wait_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// An adaptive limit of no place at all.
#[circuit_breaker(max_concurrent = 0..=10)]
fn adaptive_from_zero(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// An empty range: the least above the most.
#[circuit_breaker(max_concurrent = 20..=10)]
fn adaptive_empty(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// More places than the breaker counts (65535 at most).
#[circuit_breaker(max_concurrent = 1..=70000)]
fn adaptive_too_large(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// A half-open range: the most places are written with `..=`.
#[circuit_breaker(max_concurrent = 10..200)]
fn adaptive_half_open(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

// An adaptive limit refuses at once: nothing waits for its places.
#[circuit_breaker(max_concurrent = 1..=8, max_wait = "10ms")]
fn adaptive_with_max_wait(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// The ends are literals, not constants.
const MOST: u32 = 8;

#[circuit_breaker(max_concurrent = 1..=MOST)]
fn adaptive_constant_end(id: u32) -> std::io::Result<u32> {
    Ok(id + MOST)
}

fn main() {}
