use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A `window` with no rule to measure over it.
#[circuit_breaker(window = 20)]
fn window_without_rate(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Two trip rules at once.
#[circuit_breaker(threshold = 5, failure_rate = 0.5, window = 20)]
fn threshold_with_failure_rate(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Eleven failures can never be found among the last ten calls.
#[circuit_breaker(threshold = 11, window = 10)]
fn threshold_above_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `min_calls` with a consecutive-failures `threshold`.
#[circuit_breaker(threshold = 3, min_calls = 10)]
fn min_calls_without_rate(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Failures within a window are a count: there is no rate to wait for.
#[circuit_breaker(threshold = 5, window = "10s", min_calls = 20)]
fn min_calls_with_threshold_within(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// More `min_calls` than the `window` holds.
#[circuit_breaker(failure_rate = 0.5, window = 10, min_calls = 20)]
fn min_calls_above_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// More `min_calls` than the default `window` holds.
#[circuit_breaker(failure_rate = 0.5, min_calls = 200)]
fn min_calls_above_default_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// The same for the slow-call rate.
#[circuit_breaker(slow = "1ns", min_calls = 101)]
fn min_calls_above_default_window_slow(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Graded shedding measures over a time, not a count of calls.
#[circuit_breaker(shed = 2, window = 100)]
fn shed_over_count_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `slow_rate` without `slow`.
#[circuit_breaker(slow_rate = 0.5)]
fn slow_rate_without_slow(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
