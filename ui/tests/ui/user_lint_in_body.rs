// The attribute silences lints only on its own statements: the user's lints
// still fire inside an annotated body, sync and async, at the user's token.
#![deny(unused_variables, unused_braces)]

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

#[circuit_breaker(threshold = 2)]
fn sync_body(id: u32) -> Result<u32, Down> {
    let unused = id + 1;
    Ok(id)
}

#[circuit_breaker(threshold = 2)]
async fn async_body(id: u32) -> Result<u32, Down> {
    let forgotten = id * 2;
    Ok({ id })
}

fn main() {
    let _ = sync_body(1);
    let _ = async_body(1);
}
