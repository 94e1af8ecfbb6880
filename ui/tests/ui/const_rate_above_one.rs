use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const RATE: f64 = 0.5 * 3.0;

#[circuit_breaker(failure_rate = RATE, window = 10)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    let _ = Duration::ZERO;
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
