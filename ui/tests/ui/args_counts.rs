use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A `threshold` of zero.
#[circuit_breaker(threshold = 0)]
fn zero_threshold(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A negative `threshold`.
#[circuit_breaker(threshold = -3)]
fn negative_threshold(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `threshold` that is not a whole number.
#[circuit_breaker(threshold = 2.5)]
fn threshold_not_integer(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `threshold` above the largest one.
#[circuit_breaker(threshold = 20000000)]
fn threshold_too_large(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `window` of zero calls.
#[circuit_breaker(failure_rate = 0.5, window = 0)]
fn zero_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `window` above the largest one.
#[circuit_breaker(failure_rate = 0.5, window = 2000000)]
fn window_too_large(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `window` given as a constant: it must be a literal.
const WINDOW: u32 = 20;

#[circuit_breaker(failure_rate = 0.5, window = WINDOW)]
fn const_window(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// No trial call at all.
#[circuit_breaker(trial_calls = 0)]
fn trial_calls_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// More trial calls than the largest number.
#[circuit_breaker(trial_calls = 300)]
fn trial_calls_too_large(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `success_threshold` of zero.
#[circuit_breaker(success_threshold = 0)]
fn success_threshold_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
