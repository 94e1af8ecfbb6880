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

// `window` is a trip rule's: graded shedding's window is `shed_window`.
#[circuit_breaker(shed = 2, window = "5s")]
fn window_for_shedding(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Beside `shed`, `window` would silently turn "10 in a row" into "10
// within 5 s": refused, with both fixes.
#[circuit_breaker(threshold = 10, shed = 2, window = "5s")]
fn window_turning_the_threshold(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `shed_window` without `shed`.
#[circuit_breaker(threshold = 10, shed_window = "5s")]
fn shed_window_without_shed(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `shed_window` is a duration, not a count of calls.
#[circuit_breaker(shed = 2, shed_window = 100)]
fn shed_window_of_calls(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Nor zero.
#[circuit_breaker(shed = 2, shed_window = "0s")]
fn shed_window_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `slow_rate` without `slow`.
#[circuit_breaker(slow_rate = 0.5)]
fn slow_rate_without_slow(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
