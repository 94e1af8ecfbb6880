use failfast::circuit_breaker;

#[derive(Debug)]
pub enum Reply {
    Stock(u32),
    Unavailable,
}

#[derive(Debug)]
pub enum DependencyError {
    Unavailable,
    Refused,
}

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError::Refused
    }
}

// A pattern of the error type, where `counts_ok` matches the `Ok` value.
#[circuit_breaker(counts_ok = DependencyError::Unavailable)]
fn fetch(id: u32) -> Result<Reply, DependencyError> {
    Ok(Reply::Stock(id))
}

fn main() {
    let _ = fetch(1);
    let _ = Reply::Unavailable;
}
