use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[retry(budget = 0)]
#[circuit_breaker]
fn none(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(budget = 1.5)]
#[circuit_breaker]
fn above_one(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = (none(1), above_one(1));
}
