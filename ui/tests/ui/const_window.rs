use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const WINDOW: u32 = 20;

#[circuit_breaker(failure_rate = 0.5, window = WINDOW)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    let _ = Duration::ZERO;
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
