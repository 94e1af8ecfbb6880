use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A type in `counts_ok` is a classifier of the `Result`, and `String` is
// none.
#[circuit_breaker(counts_ok = String)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
