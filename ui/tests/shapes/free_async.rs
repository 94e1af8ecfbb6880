use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

async fn call(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[circuit_breaker(threshold = 2, recovery = "1s")]
pub async fn fetch(id: u32, label: String) -> Result<String, DependencyError> {
    let n = call(id).await?;
    Ok(format!("{label}{n}"))
}

#[circuit_breaker]
async fn borrowed(text: &str) -> Result<&str, DependencyError> {
    Ok(text.trim())
}

fn assert_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let future = fetch(1, "id".into());
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "id1");
    assert_eq!(borrowed(" x ").await.unwrap(), "x");
}
