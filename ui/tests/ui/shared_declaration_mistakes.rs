// The declaration has the attribute's checks: one error per mistake, and
// keys of a function (`fallback`) are not keys of a breaker.
failfast::breaker!(static PAYMENTS = threshold = 0, recovery = "30x", fallback = cached);

// A fixed `max_concurrent` is a bulkhead of each function's calls, not the
// breaker's (an adaptive `MIN..=MAX` is).
failfast::breaker!(static LEDGER = max_concurrent = 8);

#[failfast::circuit_breaker(breaker = PAYMENTS)]
fn charge(cents: u64) -> std::io::Result<u64> {
    Ok(cents)
}

fn main() {
    let _ = charge(1);
}
