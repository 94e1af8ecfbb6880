use failfast::circuit_breaker;

#[derive(Debug)]
pub enum InventoryError {
    Dependency,
    BadSku,
}

impl From<failfast::Rejected> for InventoryError {
    fn from(_: failfast::Rejected) -> Self {
        InventoryError::Dependency
    }
}

fn fallback(_sku: &str, _error: failfast::Error<InventoryError>) -> Result<u32, InventoryError> {
    Ok(0)
}

#[circuit_breaker(
    failure_rate = 0.5,
    window = 20,
    min_calls = 10,
    slow = "2s",
    slow_rate = 0.8,
    recovery = "30s..10m",
    jitter = 0.2,
    trial_calls = 3,
    success_threshold = 2,
    counts = InventoryError::Dependency,
    ignores = InventoryError::BadSku,
    fallback = fallback,
    name = "inventory",
    crate = ::failfast,
)]
fn check_inventory(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

#[test]
fn main() {
    let _ = check_inventory("a");
}

#[circuit_breaker(
    failure_rate = 1,
    window = "1m 30s",
    slow = "250ms",
    recovery = "1h 30m",
    jitter = 0
)]
fn time_window(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

fn _use() {
    let _ = time_window("a");
}

#[circuit_breaker(shed = 2, shed_window = "30s", min_calls = 20, threshold = 5)]
fn graded_shedding(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

#[circuit_breaker(shed = 1.5)]
fn graded_shedding_alone(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

// Ten failures within 5 s open it; shedding measures over 30 s.
#[circuit_breaker(threshold = 10, window = "5s", shed = 2, shed_window = "30s")]
fn graded_shedding_beside_failures_within(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

fn _use_shedding() {
    let _ = graded_shedding("a");
    let _ = graded_shedding_alone("a");
    let _ = graded_shedding_beside_failures_within("a");
}

#[circuit_breaker(max_concurrent = 2..=8, threshold = 100)]
fn adaptive_limit(sku: &str) -> Result<u32, InventoryError> {
    let _ = sku;
    Ok(1)
}

#[circuit_breaker(key = sku, max_concurrent = 1..=65535)]
async fn adaptive_limit_per_key(sku: &str) -> Result<u32, InventoryError> {
    Ok(sku.len() as u32)
}

fn _use_adaptive() {
    let _ = adaptive_limit("a");
    let _ = adaptive_limit_per_key("a");
}
