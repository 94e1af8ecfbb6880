use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[retry(attemps = 3)]
#[circuit_breaker]
fn typo(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A breaker key given to `#[retry]`.
#[retry(threshold = 3)]
#[circuit_breaker]
fn breaker_key(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = (typo(1), breaker_key(1));
}
