use failfast::circuit_breaker;

// A budget for a single shared breaker: no family to eject from.
failfast::breaker!(static SINGLE = threshold = 3, max_ejection_percent = 50);

// The family's budget is set where it is declared, not by a function.
failfast::breaker!(static REPLICAS = max_keys = 8, threshold = 3);

#[circuit_breaker(breaker = REPLICAS, key = replica, max_ejection_percent = 50)]
fn fetch(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

fn main() {
    let _ = fetch("a");
}
