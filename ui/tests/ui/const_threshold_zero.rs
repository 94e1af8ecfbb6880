use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

mod limits {
    pub const THRESHOLD: u32 = 0;
}

#[circuit_breaker(threshold = limits::THRESHOLD)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    let _ = Duration::ZERO;
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
