use async_trait::async_trait;
use failfast::{Error, Rejected, TimedOut, circuit_breaker};

#[derive(Debug)]
pub enum InventoryError {
    Dependency,
    BadSku,
    Unavailable(Rejected),
    TimedOut(TimedOut),
}

impl From<Rejected> for InventoryError {
    fn from(rejected: Rejected) -> Self {
        InventoryError::Unavailable(rejected)
    }
}

impl From<TimedOut> for InventoryError {
    fn from(timed_out: TimedOut) -> Self {
        InventoryError::TimedOut(timed_out)
    }
}

async fn cached(_sku: &str, _error: Error<InventoryError>) -> Result<u32, InventoryError> {
    Ok(0)
}

// Every key together, on an async fn.
#[circuit_breaker(
    failure_rate = 0.5,
    window = 20,
    slow = "2s",
    timeout = "3s",
    max_concurrent = 8,
    counts = InventoryError::Dependency,
    ignores = InventoryError::BadSku,
    fallback = cached,
)]
async fn check_inventory(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

// `max_concurrent` on a sync fn; `timeout` with no fallback needs `From<TimedOut>`.
#[circuit_breaker(max_concurrent = 1)]
fn sync_fetch(id: u32) -> Result<u32, InventoryError> {
    Ok(id)
}

#[circuit_breaker(timeout = "250ms", max_concurrent = 2)]
async fn generic_fetch<T: Send>(value: T) -> Result<T, InventoryError> {
    Ok(value)
}

#[circuit_breaker(timeout = "100ms", fallback = |_error| async { Ok(0) })]
async fn closure_fallback(id: u32) -> Result<u32, InventoryError> {
    Ok(id)
}

pub struct Request {
    pub sku: String,
}

async fn send(req: Request) -> Result<u32, InventoryError> {
    Ok(u32::try_from(req.sku.len()).unwrap_or(0))
}

// A body that consumes its request, with the fallback forms that allow it.
#[circuit_breaker(timeout = "1s", max_concurrent = 4, fallback = |_error| async { Ok(0) })]
async fn by_value(req: Request) -> Result<u32, InventoryError> {
    send(req).await
}

#[circuit_breaker(timeout = "1s", max_concurrent = 4, fallback = {
    let sku = req.sku.clone();
    move |_error| async move { Ok(u32::try_from(sku.len()).unwrap_or(0)) }
})]
async fn by_value_kept(req: Request) -> Result<u32, InventoryError> {
    send(req).await
}

#[circuit_breaker(max_concurrent = 1, fallback = |_error| Ok(0))]
fn by_value_sync(req: Request) -> Result<u32, InventoryError> {
    Ok(u32::try_from(req.sku.len()).unwrap_or(0))
}

pub struct Client;

impl Client {
    #[circuit_breaker(timeout = "1s", max_concurrent = 4)]
    async fn by_ref(&self, sku: &str) -> Result<usize, InventoryError> {
        Ok(sku.len())
    }
}

#[async_trait]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> Result<u32, InventoryError>;
}

#[async_trait]
impl Inventory for Client {
    #[circuit_breaker(timeout = "1s", max_concurrent = 4)]
    async fn stock(&self, sku: &str) -> Result<u32, InventoryError> {
        let _ = sku;
        Ok(1)
    }
}

#[test]
fn main() {
    let _ = check_inventory("a");
    let _ = sync_fetch(1);
    let _ = generic_fetch(1u8);
    let _ = closure_fallback(1);
    let _ = Client.by_ref("a");
    let _ = by_value(Request { sku: "a".into() });
    let _ = by_value_kept(Request { sku: "a".into() });
    let _ = by_value_sync(Request { sku: "a".into() });
    let _ = Client.stock("a");
}
