use failfast::{circuit_breaker, Error, Rejected};

fn unavailable(_: Rejected) -> String {
    String::from("unavailable")
}

fn cached(_: Error<String>) -> Result<u32, String> {
    Ok(0)
}

#[circuit_breaker(fallback = |error| cached(error), reject_with = unavailable)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
