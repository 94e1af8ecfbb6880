use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

fn cached(_id: u32, _error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(0)
}

#[retry(attempts = 3)]
#[circuit_breaker(threshold = 3, fallback = cached)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
