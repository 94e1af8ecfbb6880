use failfast::circuit_breaker;

// A bound on a family, but no key to pick a breaker with.
#[circuit_breaker(max_keys = 64, threshold = 3)]
fn fetch(tenant: u32) -> std::io::Result<u32> {
    Ok(tenant)
}

fn main() {
    let _ = fetch(1);
}
