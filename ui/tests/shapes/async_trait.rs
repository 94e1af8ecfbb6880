use async_trait::async_trait;
use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[async_trait]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError>;
    async fn restock(&mut self, sku: String, by: u32) -> Result<u32, DependencyError>;
    async fn cached_stock(&self, sku: &str, by: u32) -> Result<u32, DependencyError>;
}

pub struct Client {
    stock: u32,
}

impl Client {
    async fn cached(
        &self,
        _sku: &str,
        _by: u32,
        _error: failfast::Error<DependencyError>,
    ) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }
}

#[async_trait]
impl Inventory for Client {
    // `#[async_trait]` turns this into `Box::pin(async move { .. })`; the
    // breaker measures the future it returns, not the creation of the box.
    #[circuit_breaker(threshold = 3)]
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError> {
        tokio::task::yield_now().await;
        Ok(self.stock + u32::try_from(sku.len()).unwrap_or(0))
    }

    #[circuit_breaker(threshold = 3)]
    async fn restock(&mut self, sku: String, by: u32) -> Result<u32, DependencyError> {
        let _ = sku;
        self.stock += by;
        Ok(self.stock)
    }

    // A fallback under `#[async_trait]` gets `Copy` arguments (`&self`,
    // `&str`, integers): async_trait moves the others into its future.
    #[circuit_breaker(fallback = Self::cached)]
    async fn cached_stock(&self, sku: &str, by: u32) -> Result<u32, DependencyError> {
        let _ = sku;
        Err(DependencyError).or(Ok(by))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let mut client = Client { stock: 1 };
    assert_eq!(client.stock("ab").await.unwrap(), 3);
    assert_eq!(client.restock("ab".into(), 2).await.unwrap(), 3);
    assert_eq!(client.cached_stock("ab", 2).await.unwrap(), 2);
}
