use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

pub struct Client;

impl Client {
    // The fallback forgot the receiver.
    fn cached(_id: u32, _error: failfast::Error<DependencyError>) -> Result<u32, DependencyError> {
        Ok(0)
    }

    #[circuit_breaker(fallback = Self::cached)]
    fn fetch(&self, id: u32) -> Result<u32, DependencyError> {
        Ok(id)
    }
}

fn main() {
    let _ = Client.fetch(1);
}
