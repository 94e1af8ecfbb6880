use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[retry(backoff = "2s..100ms")]
#[circuit_breaker]
fn shrinks(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(backoff = "100x..2s")]
#[circuit_breaker]
fn not_a_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(backoff = 100)]
fn not_a_string(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = (shrinks(1), not_a_duration(1), not_a_string(1));
}
