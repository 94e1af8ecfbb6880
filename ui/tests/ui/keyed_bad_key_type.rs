use failfast::circuit_breaker;

pub struct Request {
    pub host: String,
}

// The request itself is no key: its host is.
#[circuit_breaker(key = request, threshold = 3)]
fn send(request: &Request) -> std::io::Result<usize> {
    Ok(request.host.len())
}

fn main() {
    let _ = send(&Request { host: "a".into() });
}
