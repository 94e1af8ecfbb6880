use failfast::circuit_breaker;

// An ejection budget, but no family: one breaker for every call.
#[circuit_breaker(max_ejection_percent = 50, threshold = 3)]
fn fetch(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

fn main() {
    let _ = fetch("a");
}
