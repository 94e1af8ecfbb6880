use failfast::{circuit_breaker, Error};

#[derive(Debug)]
pub struct Down;

fn cached(_id: u32, _error: Error<Down>) -> Result<u32, Down> {
    Ok(0)
}

// A fallback block must end in a closure of the error alone.
#[circuit_breaker(fallback = { cached })]
fn fetch(id: u32) -> Result<u32, Down> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
