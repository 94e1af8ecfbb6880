use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

fn send(_body: String) -> Result<u32, DependencyError> {
    Ok(1)
}

// Each attempt runs the body again, so it cannot consume `body`.
#[retry(attempts = 3)]
#[circuit_breaker]
fn post(body: String) -> Result<u32, DependencyError> {
    send(body)
}

fn main() {
    let _ = post(String::new());
}
