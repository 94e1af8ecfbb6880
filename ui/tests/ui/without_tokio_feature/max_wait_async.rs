use failfast::circuit_breaker;

// An `async fn` waits for a place on tokio's timer: it takes failfast's
// `tokio` feature.
#[circuit_breaker(max_concurrent = 4, max_wait = "50ms", fallback = |_error| async { Ok(0) })]
async fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
