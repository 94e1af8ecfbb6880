use async_trait::async_trait;
use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

pub struct Order {
    pub sku: String,
}

#[async_trait]
pub trait Orders {
    async fn place(&self, order: Order) -> Result<u32, DependencyError>;
}

pub struct Client;

#[async_trait]
impl Orders for Client {
    // `#[async_trait]` moves `order` into the future of each attempt.
    #[retry(attempts = 3)]
    #[circuit_breaker]
    async fn place(&self, order: Order) -> Result<u32, DependencyError> {
        Ok(order.sku.len() as u32)
    }
}

fn main() {}
