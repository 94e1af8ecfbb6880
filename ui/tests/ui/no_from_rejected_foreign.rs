use failfast::circuit_breaker;
use std::num::ParseIntError;

// Another crate's error type: `impl From<Rejected> for ParseIntError` is
// not allowed here, and a `ParseIntError` cannot be built from a refusal.
#[circuit_breaker(threshold = 3)]
async fn quantity(text: &str) -> Result<u32, ParseIntError> {
    text.trim().parse()
}

fn main() {
    let _ = quantity(" 12 ");
}
