use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const SHED: f64 = 2.0 * 6.0;

#[circuit_breaker(shed = SHED, shed_window = "30s")]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    let _ = Duration::ZERO;
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
