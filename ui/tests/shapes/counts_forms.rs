use std::error::Error;
use std::fmt;

use failfast::circuit_breaker;

#[derive(Debug)]
pub enum InventoryError {
    Dependency(String),
    Timeout { after_ms: u64 },
    Status(u16),
    BadSku,
    Unavailable,
}

impl InventoryError {
    fn is_transient(&self) -> bool {
        matches!(
            self,
            InventoryError::Timeout { .. } | InventoryError::Status(500..=599)
        )
    }
}

impl From<failfast::Rejected> for InventoryError {
    fn from(_: failfast::Rejected) -> Self {
        InventoryError::Unavailable
    }
}

fn is_server_error(error: &InventoryError) -> bool {
    matches!(error, InventoryError::Status(500..=599))
}

mod errors {
    pub fn is_dependency(error: &super::InventoryError) -> bool {
        matches!(error, super::InventoryError::Dependency(_))
    }
}

// A pattern, with alternatives and ranges.
#[circuit_breaker(counts = InventoryError::Dependency(_) | InventoryError::Timeout { .. } | InventoryError::Status(500..=599))]
fn by_pattern(sku: &str) -> Result<u32, InventoryError> {
    Err(InventoryError::Dependency(sku.into()))
}

// A unit variant is a pattern too.
#[circuit_breaker(counts = InventoryError::BadSku)]
fn by_unit_variant() -> Result<u32, InventoryError> {
    Ok(1)
}

// A closure, annotated or not.
#[circuit_breaker(counts = |e: &InventoryError| e.is_transient())]
fn by_closure() -> Result<u32, InventoryError> {
    Ok(1)
}

#[circuit_breaker(counts = |e| InventoryError::is_transient(e))]
fn by_closure_inferred() -> Result<u32, InventoryError> {
    Ok(1)
}

// A predicate function, by name or by path.
#[circuit_breaker(counts = is_server_error, ignores = errors::is_dependency)]
fn by_predicate_fn() -> Result<u32, InventoryError> {
    Ok(1)
}

#[circuit_breaker(counts = InventoryError::is_transient)]
fn by_method_path() -> Result<u32, InventoryError> {
    Ok(1)
}

// A type, looked for along the source() chain of a type-erased error.
#[derive(Debug)]
pub struct DependencyDown;

impl fmt::Display for DependencyDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dependency down")
    }
}

impl Error for DependencyDown {}

#[circuit_breaker(counts = DependencyDown, ignores = std::num::ParseIntError)]
fn by_type(text: &str) -> Result<u32, Box<dyn Error + Send + Sync>> {
    Ok(text.parse()?)
}

// A type in the source() chain of a concrete error type.
#[derive(Debug)]
pub enum FetchError {
    Io(std::io::Error),
    Rejected(failfast::Rejected),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fetch failed")
    }
}

impl Error for FetchError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            FetchError::Io(e) => Some(e),
            FetchError::Rejected(r) => Some(r),
        }
    }
}

impl From<failfast::Rejected> for FetchError {
    fn from(rejected: failfast::Rejected) -> Self {
        FetchError::Rejected(rejected)
    }
}

#[circuit_breaker(counts = std::io::Error)]
fn by_type_in_concrete_error() -> Result<u32, FetchError> {
    Err(FetchError::Io(std::io::Error::other("down")))
}

#[circuit_breaker(counts = DependencyDown)]
async fn by_type_async() -> Result<u32, Box<dyn Error + Send + Sync>> {
    Err(Box::new(DependencyDown))
}

#[test]
fn main() {
    let _ = by_pattern("a");
    let _ = by_unit_variant();
    let _ = by_closure();
    let _ = by_closure_inferred();
    let _ = by_predicate_fn();
    let _ = by_method_path();
    let _ = by_type("1");
    let _ = by_type_in_concrete_error();
    let _ = by_type_async();
    let _ = InventoryError::Timeout { after_ms: 1 };
}
