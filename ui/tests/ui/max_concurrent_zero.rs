use failfast::circuit_breaker;

// No call could ever run.
#[circuit_breaker(max_concurrent = 0)]
fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
