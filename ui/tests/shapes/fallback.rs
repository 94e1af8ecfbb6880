use failfast::{Error, circuit_breaker};

#[derive(Debug)]
pub enum InventoryError {
    Dependency,
    BadSku,
}

#[derive(Debug, PartialEq)]
pub enum Stock {
    Known(u32),
    Unknown,
}

// With a fallback the error type needs no `From<Rejected>`.
#[allow(clippy::unnecessary_wraps)]
fn stock_unknown(
    _sku: &str,
    _warehouse: u8,
    _error: Error<InventoryError>,
) -> Result<Stock, InventoryError> {
    Ok(Stock::Unknown)
}

#[circuit_breaker(threshold = 5, counts = InventoryError::Dependency, fallback = stock_unknown)]
fn check_inventory(sku: &str, warehouse: u8) -> Result<Stock, InventoryError> {
    if sku.is_empty() {
        return Err(InventoryError::BadSku);
    }
    let _ = warehouse;
    Err(InventoryError::Dependency)
}

async fn stock_unknown_async(
    _sku: String,
    error: Error<InventoryError>,
) -> Result<Stock, InventoryError> {
    tokio::task::yield_now().await;
    let _ = matches!(error, failfast::Error::Rejected(_));
    Ok(Stock::Unknown)
}

#[circuit_breaker(fallback = stock_unknown_async)]
async fn check_inventory_async(sku: String) -> Result<Stock, InventoryError> {
    if sku.is_empty() {
        return Err(InventoryError::BadSku);
    }
    Ok(Stock::Known(1))
}

mod fallbacks {
    pub fn unknown<T>(
        _id: T,
        _error: failfast::Error<super::InventoryError>,
    ) -> Result<super::Stock, super::InventoryError> {
        Ok(super::Stock::Unknown)
    }
}

// A generic fallback, by path.
#[circuit_breaker(fallback = fallbacks::unknown)]
fn generic_fallback(id: u64) -> Result<Stock, InventoryError> {
    let _ = id;
    Err(InventoryError::Dependency)
}

pub struct Client {
    cached: u32,
}

impl Client {
    #[circuit_breaker(fallback = Self::cached)]
    fn stock(&self, sku: &str) -> Result<Stock, InventoryError> {
        let _ = sku;
        Err(InventoryError::Dependency)
    }

    fn cached(&self, _sku: &str, _error: Error<InventoryError>) -> Result<Stock, InventoryError> {
        Ok(Stock::Known(self.cached))
    }

    // A borrow of `self` returned through a fallback.
    #[circuit_breaker(fallback = Self::label_unknown)]
    fn label(&self, sku: &str) -> Result<&u32, InventoryError> {
        let _ = sku;
        Ok(&self.cached)
    }

    fn label_unknown(
        &self,
        _sku: &str,
        _error: Error<InventoryError>,
    ) -> Result<&u32, InventoryError> {
        Ok(&0)
    }

    #[circuit_breaker(fallback = Self::label_unknown_async)]
    async fn label_async(&self, sku: &str) -> Result<&u32, InventoryError> {
        let _ = sku;
        Ok(&self.cached)
    }

    async fn label_unknown_async(
        &self,
        _sku: &str,
        _error: Error<InventoryError>,
    ) -> Result<&u32, InventoryError> {
        Ok(&0)
    }

    #[circuit_breaker(fallback = Self::cached_mut)]
    fn bump(&mut self, by: u32) -> Result<Stock, InventoryError> {
        self.cached += by;
        Err(InventoryError::Dependency)
    }

    fn cached_mut(
        &mut self,
        _by: u32,
        _error: Error<InventoryError>,
    ) -> Result<Stock, InventoryError> {
        Ok(Stock::Known(self.cached))
    }

    #[circuit_breaker(fallback = Self::cached_async)]
    async fn stock_async(&self, sku: &str) -> Result<Stock, InventoryError> {
        let _ = sku;
        Err(InventoryError::Dependency)
    }

    async fn cached_async(
        &self,
        _sku: &str,
        _error: Error<InventoryError>,
    ) -> Result<Stock, InventoryError> {
        Ok(Stock::Known(self.cached))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(check_inventory("a", 1).unwrap(), Stock::Unknown);
    assert!(check_inventory("", 1).is_err());
    assert_eq!(
        check_inventory_async("a".into()).await.unwrap(),
        Stock::Known(1)
    );
    assert_eq!(generic_fallback(1).unwrap(), Stock::Unknown);
    let mut client = Client { cached: 3 };
    assert_eq!(client.stock("a").unwrap(), Stock::Known(3));
    assert_eq!(*client.label("a").unwrap(), 3);
    assert_eq!(*client.label_async("a").await.unwrap(), 3);
    assert_eq!(client.bump(1).unwrap(), Stock::Known(4));
    assert_eq!(client.stock_async("a").await.unwrap(), Stock::Known(4));
}
