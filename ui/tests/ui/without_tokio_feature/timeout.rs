use failfast::circuit_breaker;

// The time limit is a tokio timer: it takes failfast's `tokio` feature.
#[circuit_breaker(timeout = "3s", fallback = |_error| async { Ok(0) })]
async fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
