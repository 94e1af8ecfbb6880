use failfast::{circuit_breaker, Error};

#[derive(Debug)]
pub struct Down;

fn cached(_id: u32, _error: Error<Down>) -> Result<u32, Down> {
    Ok(0)
}

// A closure fallback is given the error alone.
#[circuit_breaker(fallback = |id, error| cached(id, error))]
fn fetch(id: u32) -> Result<u32, Down> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
