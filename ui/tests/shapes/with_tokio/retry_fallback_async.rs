//! `#[retry]` above a breaker with a `fallback` on async shapes,
//! `#[async_trait]` included; the fallback is awaited once.

use async_trait::async_trait;
use failfast::{Error, circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::TimedOut> for DependencyError {
    fn from(_: failfast::TimedOut) -> Self {
        DependencyError
    }
}

async fn cached(sku: &str, _error: Error<DependencyError>) -> Result<usize, DependencyError> {
    Ok(sku.len())
}

#[retry(attempts = 2, backoff = "1ms")]
#[circuit_breaker(threshold = 3, timeout = "1s", fallback = cached)]
async fn by_path(sku: &str) -> Result<usize, DependencyError> {
    tokio::task::yield_now().await;
    Ok(sku.len())
}

#[retry(attempts = 2, backoff = "1ms", retry_on = |_: &DependencyError| true)]
#[circuit_breaker(max_concurrent = 4, fallback = |_error| async { Ok(0) })]
async fn by_closure(sku: String) -> Result<usize, DependencyError> {
    Ok(sku.len())
}

#[async_trait]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError>;
    async fn restock(&mut self, sku: String) -> Result<u32, DependencyError>;
}

pub struct Client {
    stock: u32,
}

impl Client {
    async fn cached(
        &self,
        _sku: &str,
        _error: Error<DependencyError>,
    ) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }
}

#[async_trait]
impl Inventory for Client {
    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 3, fallback = Self::cached)]
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError> {
        tokio::task::yield_now().await;
        Ok(self.stock + u32::try_from(sku.len()).unwrap_or(0))
    }

    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 3, fallback = |_error| async { Ok(0) })]
    async fn restock(&mut self, sku: String) -> Result<u32, DependencyError> {
        self.stock += u32::try_from(sku.len()).unwrap_or(0);
        Ok(self.stock)
    }
}

fn is_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let future = by_path("ab");
    is_send(&future);
    assert_eq!(future.await.unwrap(), 2);
    assert_eq!(by_closure("abc".into()).await.unwrap(), 3);
    let mut client = Client { stock: 1 };
    assert_eq!(client.stock("ab").await.unwrap(), 3);
    assert_eq!(client.restock("abc".into()).await.unwrap(), 4);
}
