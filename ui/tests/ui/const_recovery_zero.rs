use failfast::circuit_breaker;
use std::time::Duration;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const RECOVERY: Duration = Duration::from_secs(0);

#[circuit_breaker(recovery = RECOVERY)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
