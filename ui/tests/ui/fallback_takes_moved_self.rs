use failfast::{circuit_breaker, Error};

#[derive(Debug)]
pub struct Down;

pub struct Client {
    pub base: String,
}

fn send(client: Client) -> Result<usize, Down> {
    Ok(client.base.len())
}

impl Client {
    async fn cached(self, _error: Error<Down>) -> Result<usize, Down> {
        Ok(self.base.len())
    }

    // The body consumes `self`, and `fallback = Self::cached` is given it too.
    #[circuit_breaker(fallback = Self::cached)]
    async fn call(self) -> Result<usize, Down> {
        send(self)
    }
}

fn main() {
    let _ = Client { base: String::new() }.call();
}
