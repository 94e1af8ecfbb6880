use failfast::circuit_breaker;

fn unavailable(_: u32) -> String {
    String::from("unavailable")
}

#[circuit_breaker(reject_with = unavailable)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

#[circuit_breaker(reject_with = "unavailable")]
fn fetch_str() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
    let _ = fetch_str();
}
