//! A `Result` alias of any name, with one or two parameters.
use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

pub type Outcome<T> = Result<T, Down>;
pub type Either<T, E> = Result<T, E>;

#[circuit_breaker(threshold = 3)]
fn lookup(id: u32) -> Outcome<u32> {
    Ok(id)
}

#[circuit_breaker(threshold = 3, fallback = zero)]
fn fetch(id: u32) -> Either<u32, Down> {
    Ok(id)
}

fn zero(_id: u32, _error: failfast::Error<Down>) -> Either<u32, Down> {
    Ok(0)
}

#[test]
fn main() {
    assert_eq!(lookup(1).unwrap() + fetch(2).unwrap(), 3);
}
