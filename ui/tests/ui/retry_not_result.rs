use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[retry]
fn alone(id: u32) -> u32 {
    id
}

// One error, not one per attribute.
#[retry]
#[circuit_breaker]
fn guarded(id: u32) -> u32 {
    id
}

fn main() {
    let _ = (alone(1), guarded(1));
}
