use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

// The fallback is given `failfast::Error<E>` of the function's own `E`, as
// without `#[retry]`: this one expects another error type.
fn cached(_id: u32, _error: failfast::Error<std::io::Error>) -> Result<u32, DependencyError> {
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
