use failfast::circuit_breaker;

#[derive(Debug)]
pub enum InventoryError {
    Dependency,
    Rejected,
}

impl From<failfast::Rejected> for InventoryError {
    fn from(_: failfast::Rejected) -> Self {
        InventoryError::Rejected
    }
}

// `InventoryError` does not implement `std::error::Error`, so there is no
// `source()` chain to search: a pattern (`InventoryError::Dependency`) is what
// was meant.
#[circuit_breaker(counts = std::io::Error)]
fn fetch(id: u32) -> Result<u32, InventoryError> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
