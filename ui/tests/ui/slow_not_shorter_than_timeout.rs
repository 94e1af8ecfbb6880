use failfast::circuit_breaker;

// A call is cut off at `timeout`: it can never run longer than `slow` = 5s.
#[circuit_breaker(slow = "5s", timeout = "3s")]
async fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
