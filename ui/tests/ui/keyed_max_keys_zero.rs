use failfast::circuit_breaker;

// A family that could hold no breaker.
#[circuit_breaker(key = tenant, max_keys = 0)]
fn fetch(tenant: u32) -> std::io::Result<u32> {
    Ok(tenant)
}

fn main() {
    let _ = fetch(1);
}
