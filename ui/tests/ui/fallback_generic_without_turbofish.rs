use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

fn cached<T: Default>(_id: u32, _error: failfast::Error<DependencyError>) -> Result<T, DependencyError> {
    Ok(T::default())
}

#[circuit_breaker(fallback = cached<u32>)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
