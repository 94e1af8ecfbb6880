use failfast::circuit_breaker;

failfast::breaker!(static PAYMENTS = threshold = 5);

// A single breaker, given a key.
#[circuit_breaker(breaker = PAYMENTS, key = merchant)]
fn charge(merchant: u32) -> std::io::Result<u32> {
    Ok(merchant)
}

fn main() {
    let _ = charge(1);
}
