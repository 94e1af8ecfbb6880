use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

#[circuit_breaker(fallback = |_error| Ok(0))]
async fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
