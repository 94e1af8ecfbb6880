// A fallback given the arguments after a body that moved them: fine when
// they are `Copy`, concrete or generic.
use failfast::{Error, circuit_breaker};

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

#[derive(Clone, Copy)]
pub struct Id(u32);

fn send(id: Id, attempt: u8) -> Result<u32, Down> {
    Ok(id.0 + u32::from(attempt))
}

fn cached(id: Id, _attempt: u8, _error: Error<Down>) -> Result<u32, Down> {
    Ok(id.0)
}

#[circuit_breaker(fallback = cached)]
fn call(id: Id, attempt: u8) -> Result<u32, Down> {
    let again = id;
    send(again, attempt)?;
    send(id, attempt)
}

async fn cached_generic<T: Copy + Into<u32>>(value: T, _error: Error<Down>) -> Result<u32, Down> {
    Ok(value.into())
}

#[circuit_breaker(fallback = cached_generic)]
async fn call_generic<T: Copy + Into<u32>>(value: T) -> Result<u32, Down> {
    tokio::task::yield_now().await;
    Ok(value.into())
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(call(Id(3), 1).unwrap(), 4);
    assert_eq!(call_generic(7u8).await.unwrap(), 7);
}
