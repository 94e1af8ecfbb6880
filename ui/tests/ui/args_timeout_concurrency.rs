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
#[circuit_breaker(shed = 2, window = "1s", timeout = "3s")]
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

fn main() {}
