use async_trait::async_trait;
use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

#[async_trait]
pub trait Inventory {
    async fn restock(&mut self, sku: String) -> Result<u32, DependencyError>;
}

pub struct Client;

impl Client {
    async fn cached(
        &mut self,
        _sku: String,
        _error: failfast::Error<DependencyError>,
    ) -> Result<u32, DependencyError> {
        Ok(0)
    }
}

#[async_trait]
impl Inventory for Client {
    #[circuit_breaker(fallback = Self::cached)]
    async fn restock(&mut self, sku: String) -> Result<u32, DependencyError> {
        let _ = sku;
        Ok(1)
    }
}

fn main() {}
