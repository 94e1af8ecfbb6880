use failfast::circuit_breaker;

// A sync call cannot be stopped at a deadline.
#[circuit_breaker(threshold = 2, timeout = "3s")]
fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
