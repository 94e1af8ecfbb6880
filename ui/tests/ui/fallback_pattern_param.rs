use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

fn cached(
    _point: (u32, u32),
    _error: failfast::Error<DependencyError>,
) -> Result<u32, DependencyError> {
    Ok(0)
}

#[circuit_breaker(fallback = cached)]
fn fetch((x, y): (u32, u32)) -> Result<u32, DependencyError> {
    Ok(x + y)
}

fn main() {
    let _ = fetch((1, 2));
}
