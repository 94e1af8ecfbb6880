use std::sync::Arc;

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

pub struct Client {
    base: String,
    calls: u32,
}

impl Client {
    #[circuit_breaker(threshold = 3)]
    pub fn base(&self) -> Result<&str, DependencyError> {
        Ok(&self.base)
    }

    #[circuit_breaker(threshold = 3)]
    pub fn count(&mut self) -> Result<&mut u32, DependencyError> {
        self.calls += 1;
        Ok(&mut self.calls)
    }

    #[circuit_breaker(threshold = 3)]
    pub fn into_base(self) -> Result<String, DependencyError> {
        Ok(self.base)
    }

    #[circuit_breaker(threshold = 3)]
    pub fn shared(self: Arc<Self>) -> Result<usize, DependencyError> {
        Ok(Arc::strong_count(&self))
    }

    #[circuit_breaker(threshold = 3)]
    pub async fn fetch(&self, path: &str) -> Result<String, DependencyError> {
        Ok(format!("{}{path}", self.base))
    }

    #[circuit_breaker(threshold = 3)]
    pub async fn bump(&mut self) -> Result<u32, DependencyError> {
        self.calls += 1;
        Ok(self.calls)
    }

    #[circuit_breaker]
    pub fn new_checked(base: &str) -> Result<Self, DependencyError> {
        Ok(Client {
            base: base.into(),
            calls: 0,
        })
    }
}

pub trait Inventory {
    fn stock(&self, sku: &str) -> Result<u32, DependencyError>;

    // A provided method: one breaker for every implementor.
    #[circuit_breaker(threshold = 3)]
    fn total(&self, skus: &[&str]) -> Result<u32, DependencyError> {
        skus.iter().map(|sku| self.stock(sku)).sum()
    }
}

impl Inventory for Client {
    #[circuit_breaker(threshold = 3)]
    fn stock(&self, sku: &str) -> Result<u32, DependencyError> {
        Ok(u32::try_from(sku.len() + self.base.len()).unwrap_or(0))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let mut client = Client::new_checked("http://inventory").unwrap();
    assert_eq!(client.base().unwrap(), "http://inventory");
    *client.count().unwrap() += 1;
    assert_eq!(client.fetch("/a").await.unwrap(), "http://inventory/a");
    assert_eq!(client.bump().await.unwrap(), 3);
    assert!(client.stock("a").is_ok());
    assert!(client.total(&["a", "b"]).is_ok());
    assert_eq!(
        Arc::new(Client::new_checked("x").unwrap())
            .shared()
            .unwrap(),
        1
    );
    assert_eq!(client.into_base().unwrap(), "http://inventory");
}
