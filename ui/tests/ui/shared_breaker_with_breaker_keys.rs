use failfast::circuit_breaker;

failfast::breaker!(static PAYMENTS = threshold = 5, recovery = "30s");

// Settings of the breaker belong where it is declared.
#[circuit_breaker(breaker = PAYMENTS, threshold = 3, counts = std::io::ErrorKind::TimedOut)]
fn charge(cents: u64) -> std::io::Result<u64> {
    Ok(cents)
}

fn main() {
    let _ = charge(1);
}
