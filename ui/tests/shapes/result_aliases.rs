use std::error::Error;
use std::fmt;

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyDown;

impl fmt::Display for DependencyDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dependency down")
    }
}

impl Error for DependencyDown {}

// `anyhow::Error` takes a rejection through its blanket `From<E: Error>`.
#[circuit_breaker(threshold = 3)]
fn with_anyhow(id: u32) -> anyhow::Result<u32> {
    Ok(id)
}

#[circuit_breaker(threshold = 3)]
async fn with_anyhow_async(id: u32) -> anyhow::Result<u32> {
    anyhow::ensure!(id > 0, "id must be positive");
    Ok(id)
}

fn io_fallback(_path: &str, error: failfast::Error<std::io::Error>) -> std::io::Result<String> {
    Err(std::io::Error::other(error.to_string()))
}

// `std::io::Error` has no `From<Rejected>`: a fallback answers instead.
#[circuit_breaker(counts = std::io::Error, fallback = io_fallback)]
fn with_io(path: &str) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

pub type Result<T, E = Box<dyn Error + Send + Sync>> = std::result::Result<T, E>;

#[circuit_breaker(counts = DependencyDown)]
fn with_local_alias() -> Result<u32> {
    Err(Box::new(DependencyDown))
}

#[circuit_breaker]
fn with_fmt_result(out: &mut String) -> std::result::Result<(), Box<dyn Error + Send + Sync>> {
    use std::fmt::Write;
    write!(out, "x")?;
    Ok(())
}

#[derive(Debug)]
pub enum ApiError {
    Down,
    Rejected,
}

impl From<failfast::Rejected> for ApiError {
    fn from(_: failfast::Rejected) -> Self {
        ApiError::Rejected
    }
}

// A crate's own alias, named after its error.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[circuit_breaker(threshold = 3, counts = ApiError::Down)]
fn with_api_result(id: u32) -> ApiResult<u32> {
    if id == 0 {
        return Err(ApiError::Down);
    }
    Ok(id)
}

#[circuit_breaker(threshold = 3)]
async fn with_api_result_async(id: u32) -> ApiResult<u32> {
    Ok(id)
}

// An alias whose name says nothing of `Result`: the compiler checks that it is one.
type Res<T> = std::result::Result<T, ApiError>;

fn cached(_id: u32, _error: failfast::Error<ApiError>) -> Res<u32> {
    Ok(0)
}

#[circuit_breaker(threshold = 3, fallback = cached)]
fn with_short_alias(id: u32) -> Res<u32> {
    Err(ApiError::Down).or(Ok(id))
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(with_anyhow(1).unwrap(), 1);
    assert!(with_anyhow_async(0).await.is_err());
    assert!(with_io("/nonexistent/failfast").is_err());
    assert!(with_local_alias().is_err());
    let mut out = String::new();
    with_fmt_result(&mut out).unwrap();
    assert!(matches!(with_api_result(0), Err(ApiError::Down)));
    assert_eq!(with_api_result_async(2).await.unwrap(), 2);
    assert_eq!(with_short_alias(3).unwrap(), 3);
}
