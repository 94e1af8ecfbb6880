use failfast::circuit_breaker;

fn cached(_id: u32, _error: failfast::Error<std::io::Error>) -> Option<u32> {
    None
}

#[circuit_breaker(fallback = cached)]
fn fetch(id: u32) -> Option<u32> {
    Some(id)
}

fn main() {
    let _ = fetch(1);
}
