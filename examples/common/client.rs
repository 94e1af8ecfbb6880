//! A plain HTTP client for the inventory service: no breaker, no retries. This is
//! the "naive client"; the scenarios wrap it in `#[circuit_breaker]` functions.

use std::fmt;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

/// What a caller learns about a SKU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stock {
    pub sku: String,
    /// `None` when the answer came from a fallback, not from the service.
    pub quantity: Option<u32>,
    /// Why a fallback answered instead of the service.
    pub fallback: Option<String>,
}

impl Stock {
    /// The answer a fallback gives: we don't know, but the page still renders.
    pub fn unknown(sku: &str, why: impl Into<String>) -> Stock {
        Stock {
            sku: sku.to_owned(),
            quantity: None,
            fallback: Some(why.into()),
        }
    }
}

impl fmt::Display for Stock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.quantity, &self.fallback) {
            (Some(q), _) => write!(f, "{q} in stock"),
            (None, Some(why)) => write!(f, "stock unknown ({why})"),
            (None, None) => f.write_str("stock unknown"),
        }
    }
}

/// Why a call to the inventory service did not give a [`Stock`].
#[derive(Debug, Clone)]
pub enum InventoryError {
    /// 4xx: the request was wrong. The caller's bug, not a sign that the
    /// service is sick, so breakers are told not to count it.
    BadRequest(String),
    /// 5xx, a refused connection or no answer in time: the service is sick.
    Dependency(String),
    /// The breaker refused the call; the service was not contacted.
    Rejected(failfast::Rejected),
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryError::BadRequest(m) => write!(f, "bad request: {m}"),
            InventoryError::Dependency(m) => write!(f, "inventory unavailable: {m}"),
            InventoryError::Rejected(r) => write!(f, "{r}"),
        }
    }
}

impl std::error::Error for InventoryError {}

impl InventoryError {
    /// A few words for a table: `503 Service Unavailable`, `rejected (open)`.
    pub fn brief(&self) -> String {
        match self {
            InventoryError::BadRequest(m) | InventoryError::Dependency(m) => {
                m.split(" (").next().unwrap_or(m).to_owned()
            }
            InventoryError::Rejected(r) => format!("rejected ({})", r.state()),
        }
    }
}

impl From<failfast::Rejected> for InventoryError {
    fn from(r: failfast::Rejected) -> Self {
        InventoryError::Rejected(r)
    }
}

#[derive(Deserialize)]
struct StockBody {
    sku: String,
    quantity: u32,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
}

/// A naive inventory client over hyper: it waits as long as the service makes it
/// wait (up to `timeout`, 10 s by default).
#[derive(Clone)]
pub struct InventoryClient {
    base: String,
    http: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
}

impl InventoryClient {
    /// `base` is the service's URL, e.g. `http://127.0.0.1:4000`.
    pub fn new(base: impl Into<String>) -> InventoryClient {
        InventoryClient {
            base: base.into(),
            http: Client::builder(TokioExecutor::new()).build_http(),
            timeout: Duration::from_secs(10),
        }
    }

    /// The same client, waiting at most `timeout` for an answer.
    pub fn with_timeout(mut self, timeout: Duration) -> InventoryClient {
        self.timeout = timeout;
        self
    }

    /// `GET /inventory/{sku}`
    pub async fn stock(&self, sku: &str) -> Result<Stock, InventoryError> {
        let url = format!("{}/inventory/{}", self.base, sku);
        let (status, body) = self.send(Method::GET, &url).await?;
        match status {
            StatusCode::OK => {
                let s: StockBody = serde_json::from_slice(&body)
                    .map_err(|e| InventoryError::Dependency(format!("unreadable answer: {e}")))?;
                Ok(Stock {
                    sku: s.sku,
                    quantity: Some(s.quantity),
                    fallback: None,
                })
            }
            s if s.is_client_error() => Err(InventoryError::BadRequest(describe(s, &body))),
            s => Err(InventoryError::Dependency(describe(s, &body))),
        }
    }

    /// `POST /admin/healthy/{healthy}`
    pub async fn set_healthy(&self, healthy: bool) -> Result<(), InventoryError> {
        let url = format!("{}/admin/healthy/{}", self.base, healthy);
        match self.send(Method::POST, &url).await? {
            (StatusCode::OK, _) => Ok(()),
            (s, body) => Err(InventoryError::Dependency(describe(s, &body))),
        }
    }

    /// `POST /admin/silent/{silent}`
    pub async fn set_silent(&self, silent: bool) -> Result<(), InventoryError> {
        let url = format!("{}/admin/silent/{}", self.base, silent);
        match self.send(Method::POST, &url).await? {
            (StatusCode::OK, _) => Ok(()),
            (s, body) => Err(InventoryError::Dependency(describe(s, &body))),
        }
    }

    async fn send(&self, method: Method, url: &str) -> Result<(StatusCode, Bytes), InventoryError> {
        let request = Request::builder()
            .method(method)
            .uri(url)
            .body(Empty::new())
            .map_err(|e| InventoryError::BadRequest(e.to_string()))?;
        let exchange = async {
            let response = self.http.request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((status, body))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(InventoryError::Dependency(e.to_string())),
            Err(_) => Err(InventoryError::Dependency(format!(
                "no answer after {:?}",
                self.timeout
            ))),
        }
    }
}

fn describe(status: StatusCode, body: &[u8]) -> String {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(b) => format!("{} ({})", status, b.error),
        Err(_) => status.to_string(),
    }
}
