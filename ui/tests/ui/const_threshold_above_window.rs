use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

const THRESHOLD: u32 = 11;

#[circuit_breaker(threshold = THRESHOLD, window = 10)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
