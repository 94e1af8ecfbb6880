use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// Failures within a window are a count: there is no rate to wait for.
#[circuit_breaker(threshold = 5, window = "10s", min_calls = 20)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
