// A one-line async body is the user's block as written: no lint about its
// braces may fire (`unused_braces` did, with a `cargo fix` that broke the code).
#![deny(warnings)]

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

#[rustfmt::skip]
#[circuit_breaker(threshold = 2)]
async fn one_line(x: u32) -> Result<u32, Down> { Ok(x) }

async fn cached(x: u32, _error: failfast::Error<Down>) -> Result<u32, Down> {
    Ok(x)
}

#[rustfmt::skip]
#[circuit_breaker(threshold = 2, fallback = cached)]
async fn one_line_with_fallback(x: u32) -> Result<u32, Down> { Ok(x) }

#[rustfmt::skip]
#[circuit_breaker(threshold = 2, counts = |_: &Down| true)]
async fn one_line_unit() -> Result<(), Down> { Ok(()) }

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(one_line(1).await.unwrap(), 1);
    assert_eq!(one_line_with_fallback(2).await.unwrap(), 2);
    one_line_unit().await.unwrap();
}
