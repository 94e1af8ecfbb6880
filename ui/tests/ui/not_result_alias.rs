use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

// Named like a `Result`, but it is not one.
pub type LookupResult = Option<u32>;

#[circuit_breaker(threshold = 3)]
fn lookup(id: u32) -> LookupResult {
    Some(id)
}

fn main() {
    let _ = lookup(1);
}
