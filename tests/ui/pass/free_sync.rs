use failfast::circuit_breaker;

#[derive(Debug)]
pub enum InventoryError {
    Dependency(String),
    BadSku,
    Unavailable(failfast::Rejected),
}

impl From<failfast::Rejected> for InventoryError {
    fn from(rejected: failfast::Rejected) -> Self {
        InventoryError::Unavailable(rejected)
    }
}

fn lookup(sku: &str) -> Result<u32, InventoryError> {
    if sku.is_empty() {
        Err(InventoryError::BadSku)
    } else {
        Ok(7)
    }
}

/// Attributes, docs, visibility and `?` all keep working.
#[must_use = "the stock is the point"]
#[circuit_breaker(threshold = 3, recovery = "250ms", counts = InventoryError::Dependency(_))]
pub fn check_inventory(sku: &str) -> Result<u32, InventoryError> {
    let stock = lookup(sku)?;
    if stock == 0 {
        return Err(InventoryError::Dependency("empty".into()));
    }
    Ok(stock)
}

// Returned borrows of arguments keep working.
#[circuit_breaker]
fn first_word(text: &str) -> Result<&str, InventoryError> {
    text.split(' ').next().ok_or(InventoryError::BadSku)
}

// Lifetimes, where clauses and `mut` parameters are kept as written.
#[circuit_breaker]
pub(crate) fn longest<'a, 'b: 'a>(mut a: &'a str, b: &'b str) -> Result<&'a str, InventoryError>
where
    'b: 'a,
{
    if b.len() > a.len() {
        a = b;
    }
    Ok(a)
}

// Inner attributes of the body stay on the body.
#[circuit_breaker]
fn inner_attributes(x: u32) -> Result<u32, InventoryError> {
    #![allow(clippy::needless_return)]
    return Ok(x);
}

fn main() {
    assert_eq!(inner_attributes(1).unwrap(), 1);
    let _ = check_inventory("SKU-1");
    assert_eq!(first_word("a b").unwrap(), "a");
    assert_eq!(longest("a", "bb").unwrap(), "bb");
}
