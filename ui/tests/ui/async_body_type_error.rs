use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

// Type errors in an async body are reported at the user's tokens.
#[circuit_breaker(threshold = 2)]
async fn tail_not_wrapped(x: u32) -> Result<u32, Down> {
    x
}

#[circuit_breaker(threshold = 2)]
async fn empty_body(_x: u32) -> Result<u32, Down> {}

fn main() {
    let _ = tail_not_wrapped(1);
    let _ = empty_body(1);
}
