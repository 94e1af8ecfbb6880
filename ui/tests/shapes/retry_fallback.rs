//! `#[retry]` above a breaker with a `fallback`, on every sync shape and in
//! every fallback form. The error types have no `From<failfast::Rejected>`:
//! the fallback answers refusals.

use failfast::{Error, circuit_breaker, retry};

#[derive(Debug)]
pub enum DependencyError {
    Down,
    Busy(u16),
}

fn cached(id: u32, _error: Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(id)
}

fn stale(_error: Error<DependencyError>) -> Result<u32, DependencyError> {
    Ok(0)
}

#[retry(attempts = 4, backoff = "1ms..5ms", jitter = 0.5, retry_on = DependencyError::Busy(503), budget = 0.1)]
#[circuit_breaker(threshold = 3, counts = DependencyError::Down | DependencyError::Busy(_), fallback = cached)]
fn by_path(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry(retry_on = |e: &DependencyError| matches!(e, DependencyError::Busy(_)))]
#[circuit_breaker(fallback = |error| stale(error))]
fn by_closure(name: String) -> Result<u32, DependencyError> {
    // The body may consume what the closure does not use.
    Ok(u32::try_from(String::into_bytes(name.clone()).len()).unwrap_or(0))
}

#[retry]
#[circuit_breaker(fallback = { let kept = id; move |error| cached(kept, error) })]
fn by_block(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[retry]
#[circuit_breaker(max_concurrent = 2, ignores = DependencyError::Busy(404), fallback = |_| Ok(vec![]))]
fn generic<T: Clone>(items: &[T]) -> Result<Vec<T>, DependencyError> {
    Ok(items.to_vec())
}

fn read_cached(_error: Error<std::io::Error>) -> std::io::Result<u32> {
    Ok(0)
}

#[retry]
#[circuit_breaker(fallback = |error| read_cached(error))]
fn io() -> std::io::Result<u32> {
    Ok(1)
}

pub struct Client {
    stock: u32,
}

impl Client {
    #[retry]
    #[circuit_breaker(fallback = Self::cached)]
    fn shared(&self, sku: &str) -> Result<u32, DependencyError> {
        Ok(self.stock + u32::try_from(sku.len()).unwrap_or(0))
    }

    fn cached(&self, _sku: &str, _error: Error<DependencyError>) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }

    #[retry]
    #[circuit_breaker(fallback = Self::reset)]
    fn unique(&mut self) -> Result<u32, DependencyError> {
        self.stock += 1;
        Ok(self.stock)
    }

    fn reset(&mut self, _error: Error<DependencyError>) -> Result<u32, DependencyError> {
        self.stock = 0;
        Ok(0)
    }

    #[retry]
    #[circuit_breaker(fallback = Self::last)]
    fn owned(self) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }

    fn last(self, _error: Error<DependencyError>) -> Result<u32, DependencyError> {
        Ok(self.stock)
    }
}

#[test]
fn main() {
    let _ = (
        by_path(1),
        by_closure("a".into()),
        by_block(2),
        generic(&[1]),
        io(),
    );
    let mut client = Client { stock: 1 };
    let _ = (client.shared("a"), client.unique());
    let _ = client.owned();
}
