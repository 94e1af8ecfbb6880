use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

fn cached(_id: u32, _error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(0)
}

#[circuit_breaker(fallback = cached)]
async fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
