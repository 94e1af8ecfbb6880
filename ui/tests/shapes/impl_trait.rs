use std::fmt::Debug;

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

#[circuit_breaker]
fn evens(items: &[u32]) -> Result<impl Iterator<Item = &u32> + '_, DependencyError> {
    Ok(items.iter().filter(|n| *n % 2 == 0))
}

#[circuit_breaker]
async fn describe(n: u32) -> Result<impl Debug, DependencyError> {
    Ok(n)
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(evens(&[1, 2, 4]).unwrap().count(), 2);
    assert_eq!(format!("{:?}", describe(1).await.unwrap()), "1");
}
