use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const RECOVERY_SECS: u64 = 30;

#[circuit_breaker(recovery = RECOVERY_SECS)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    let _ = Duration::ZERO;
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
