use failfast::circuit_breaker;

#[circuit_breaker(timeout = 3)]
async fn fetch(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
