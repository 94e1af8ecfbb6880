use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A duration with an unknown unit.
#[circuit_breaker(recovery = "30x")]
fn bad_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A duration written as a number, not a string.
#[circuit_breaker(recovery = 30)]
fn duration_not_string(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `recovery` of zero.
#[circuit_breaker(recovery = "0s")]
fn zero_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A growing `recovery` without its maximum.
#[circuit_breaker(recovery = "30s..")]
fn recovery_range_open(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A growing `recovery` whose maximum is shorter than its start.
#[circuit_breaker(recovery = "10m..30s")]
fn recovery_range_shrinks(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `slow` written as a number, not a string.
#[circuit_breaker(slow = 2)]
fn slow_not_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `slow` of zero.
#[circuit_breaker(slow = "0s", slow_rate = 0.5)]
fn zero_slow(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A time `window` of zero.
#[circuit_breaker(failure_rate = 0.5, window = "0ms")]
fn zero_time_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
