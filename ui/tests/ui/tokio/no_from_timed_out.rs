use failfast::circuit_breaker;

#[derive(Debug)]
pub struct Down;

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down
    }
}

// Without a fallback, a timed-out call returns `Err(Down::from(timed_out))`.
#[circuit_breaker(timeout = "3s")]
async fn fetch(id: u32) -> Result<u32, Down> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
