use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A `failure_rate` above 1.
#[circuit_breaker(failure_rate = 1.5, window = 20)]
fn rate_above_one(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A negative `failure_rate`.
#[circuit_breaker(failure_rate = -0.5, window = 20)]
fn rate_negative(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `failure_rate` of zero.
#[circuit_breaker(failure_rate = 0.0, window = 20)]
fn rate_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `shed` multiplier below 1: a window would admit fewer calls than the
// dependency accepted.
#[circuit_breaker(shed = 0.5)]
fn shed_below_one(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `shed` multiplier above 10.
#[circuit_breaker(shed = 11)]
fn shed_above_ten(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `jitter` of the whole open time.
#[circuit_breaker(jitter = 1.0)]
fn jitter_out_of_range(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
