//! `#[retry]` on every sync shape, alone and above `#[circuit_breaker]`,
//! with every key and every `retry_on` form.

use std::fmt;

use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub enum DependencyError {
    Down,
    Busy(u16),
    Rejected,
}

impl fmt::Display for DependencyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DependencyError {}

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError::Rejected
    }
}

impl DependencyError {
    fn is_transient(&self) -> bool {
        matches!(self, DependencyError::Busy(_))
    }
}

#[retry(attempts = 4, backoff = "1ms..5ms", jitter = 0.5, retry_on = DependencyError::Down | DependencyError::Busy(503), budget = 0.1, crate = ::failfast)]
#[circuit_breaker(threshold = 3, counts = DependencyError::Down)]
fn every_key(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(retry_on = |e: &DependencyError| e.is_transient())]
fn closure(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(retry_on = DependencyError::is_transient)]
fn predicate_fn(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(retry_on = DependencyError)]
fn by_type(id: u32) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    Ok(id)
}

#[failfast::retry]
#[failfast::circuit_breaker]
fn qualified(name: String) -> Result<usize, DependencyError> {
    Ok(name.len())
}

#[retry]
#[circuit_breaker]
fn generic<T: fmt::Debug>(items: &[T]) -> Result<String, DependencyError> {
    Ok(format!("{items:?}"))
}

#[retry]
#[circuit_breaker]
fn evens(items: &[u32]) -> Result<impl Iterator<Item = &u32> + '_, DependencyError> {
    Ok(items.iter().filter(|n| *n % 2 == 0))
}

#[retry]
fn io() -> std::io::Result<u32> {
    Ok(1)
}

pub struct Client {
    stock: u32,
}

impl Client {
    #[retry]
    #[circuit_breaker]
    fn shared(&self) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }

    #[retry]
    #[circuit_breaker]
    fn unique(&mut self) -> Result<u32, DependencyError> {
        self.stock += 1;
        Ok(self.stock)
    }

    #[retry]
    #[circuit_breaker]
    fn owned(self) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }
}

#[test]
fn main() {
    let _ = (every_key(1), closure(1), predicate_fn(1), by_type(1), io());
    let _ = (
        qualified("a".into()),
        generic(&[1]),
        evens(&[1, 2]).map(Iterator::count),
    );
    let mut client = Client { stock: 1 };
    let _ = (client.shared(), client.unique());
    let _ = client.owned();
}
