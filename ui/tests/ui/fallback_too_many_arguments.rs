use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

// The fallback takes an argument the function does not have.
fn cached(_id: u32, _region: &str, _error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(0)
}

#[circuit_breaker(fallback = cached)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
