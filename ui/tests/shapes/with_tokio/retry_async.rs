//! `#[retry]` on every async shape, `#[async_trait]` included (each attempt
//! gets a clone of what it moves, `&mut` arguments are reborrowed).

use std::fmt::Debug;

use async_trait::async_trait;
use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[retry(attempts = 2, backoff = "1ms")]
#[circuit_breaker(threshold = 3)]
async fn free(sku: &str) -> Result<usize, DependencyError> {
    tokio::task::yield_now().await;
    Ok(sku.len())
}

#[retry(attempts = 2, backoff = "1ms")]
async fn alone(sku: String) -> Result<usize, DependencyError> {
    Ok(sku.len())
}

#[retry]
#[circuit_breaker]
async fn describe<T: Debug + Send>(value: T) -> Result<impl Debug, DependencyError> {
    Ok(format!("{value:?}"))
}

#[retry]
#[circuit_breaker]
async fn boxed() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    Err(Box::new(std::fmt::Error))
}

#[async_trait]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError>;
    async fn restock(&mut self, sku: String, by: &mut u32) -> Result<u32, DependencyError>;
}

pub struct Client {
    stock: u32,
}

#[async_trait]
impl Inventory for Client {
    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 3)]
    async fn stock(&self, sku: &str) -> Result<u32, DependencyError> {
        tokio::task::yield_now().await;
        Ok(self.stock + u32::try_from(sku.len()).unwrap_or(0))
    }

    #[retry(attempts = 3, backoff = "1ms")]
    #[circuit_breaker(threshold = 3)]
    async fn restock(&mut self, sku: String, by: &mut u32) -> Result<u32, DependencyError> {
        let _ = sku;
        self.stock += *by;
        *by = 0;
        Ok(self.stock)
    }
}

fn is_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let future = free("ab");
    is_send(&future);
    assert_eq!(future.await.unwrap(), 2);
    assert_eq!(alone("abc".into()).await.unwrap(), 3);
    let _ = describe(1).await.unwrap();
    assert!(boxed().await.is_err());
    let mut client = Client { stock: 1 };
    assert_eq!(client.stock("ab").await.unwrap(), 3);
    let mut by = 2;
    assert_eq!(client.restock("ab".into(), &mut by).await.unwrap(), 3);
}
