use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

// The fallback forgot the `id` argument.
fn cached(_error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(0)
}

#[circuit_breaker(fallback = cached)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
