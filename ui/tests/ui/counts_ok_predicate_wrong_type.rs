use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// The predicate takes the `Ok` value, `&u32`, not the error.
#[circuit_breaker(counts_ok = |error: &DependencyError| true)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
