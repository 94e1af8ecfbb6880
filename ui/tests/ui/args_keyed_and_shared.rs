use failfast::circuit_breaker;

// A bound on a family, but no key to pick a breaker with.
#[circuit_breaker(max_keys = 64, threshold = 3)]
fn max_keys_without_key(tenant: u32) -> std::io::Result<u32> {
    Ok(tenant)
}

// A family that could hold no breaker.
#[circuit_breaker(key = tenant, max_keys = 0)]
fn max_keys_zero(tenant: u32) -> std::io::Result<u32> {
    Ok(tenant)
}

// An ejection budget, but no family: one breaker for every call.
#[circuit_breaker(max_ejection_percent = 50, threshold = 3)]
fn ejection_without_key(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// A budget of no breaker at all.
#[circuit_breaker(key = replica, max_ejection_percent = 0)]
fn ejection_zero(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// More than every breaker.
#[circuit_breaker(key = replica, max_ejection_percent = 150)]
fn ejection_above_all(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// A share of the breakers, not a fraction.
#[circuit_breaker(key = replica, max_ejection_percent = 0.5)]
fn ejection_fraction(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// A budget for a single shared breaker: no family to eject from.
failfast::breaker!(static SINGLE = threshold = 3, max_ejection_percent = 50);

// The family's budget is set where it is declared, not by a function.
failfast::breaker!(static REPLICAS = max_keys = 8, threshold = 3);

#[circuit_breaker(breaker = REPLICAS, key = replica, max_ejection_percent = 50)]
fn shared_ejection_on_function(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// Settings of the breaker belong where it is declared.
failfast::breaker!(static PAYMENTS = threshold = 5, recovery = "30s");

#[circuit_breaker(breaker = PAYMENTS, threshold = 3, counts = std::io::ErrorKind::TimedOut)]
fn shared_breaker_with_breaker_keys(cents: u64) -> std::io::Result<u64> {
    Ok(cents)
}

// An adaptive limit is kept by the breaker, and this one is shared.
#[circuit_breaker(breaker = PAYMENTS, max_concurrent = 2..=8)]
fn shared_breaker_with_adaptive_limit(cents: u64) -> std::io::Result<u64> {
    Ok(cents)
}

fn main() {}
