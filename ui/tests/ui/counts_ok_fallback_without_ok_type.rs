use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

// With `counts_ok`, the fallback is given the counted `Ok` too: its error
// is `failfast::Error<DependencyError, u32>`, not `failfast::Error<DependencyError>`.
fn cached(id: u32, error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
    let _ = error;
    Ok(id)
}

#[circuit_breaker(counts_ok = |id: &u32| *id == 0, fallback = cached)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
