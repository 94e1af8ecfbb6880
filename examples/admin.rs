//! An admin service for breakers, as an operator would run it beside the
//! application: `cargo run --example admin --features metrics,serde`.
//!
//! - `GET /breakers`: a JSON snapshot of every breaker, those whose function
//!   has never run included;
//! - `POST /breakers/{name}/force-open`, `/force-closed`, `/reset`: manual
//!   control, answering with the breaker's new snapshot;
//! - `GET /metrics`: every breaker in Prometheus' text format, through the
//!   `metrics` facade and `metrics-exporter-prometheus`.
//!
//! The program trips `payments::charge`, then asks its own service for the
//! three views over loopback and prints the answers.

use std::net::SocketAddr;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use failfast::Mode;
use failfast::{Rejected, Snapshot, circuit_breaker, registry};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug)]
pub enum PaymentError {
    Declined,
    Unavailable(Rejected),
}

impl From<Rejected> for PaymentError {
    fn from(rejected: Rejected) -> Self {
        PaymentError::Unavailable(rejected)
    }
}

/// The dependency the application calls.
#[circuit_breaker(threshold = 3, recovery = "30s", name = "payments::charge")]
pub fn charge(gateway_up: bool) -> Result<u32, PaymentError> {
    if gateway_up {
        Ok(1)
    } else {
        Err(PaymentError::Declined)
    }
}

/// A breaker nothing has called yet: listed all the same.
#[circuit_breaker(name = "inventory::lookup")]
pub fn lookup() -> Result<u32, PaymentError> {
    Ok(7)
}

/// The admin routes; `metrics` renders what the recorder holds.
pub fn router(metrics: PrometheusHandle) -> Router {
    Router::new()
        .route("/breakers", get(list))
        .route("/breakers/{name}/{action}", post(control))
        .route(
            "/metrics",
            get(move || async move {
                // Call totals are folded from per-thread counters on read.
                failfast::metrics::export();
                metrics.render()
            }),
        )
}

async fn list() -> Json<Vec<Snapshot>> {
    Json(registry::all().iter().map(|b| b.snapshot()).collect())
}

async fn control(
    Path((name, action)): Path<(String, String)>,
) -> Result<Json<Snapshot>, (StatusCode, String)> {
    let breaker = registry::get(&name).ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("no breaker named `{name}`\n"),
        )
    })?;
    match action.as_str() {
        "force-open" => breaker.set_mode(Mode::ForcedOpen),
        "force-closed" => breaker.set_mode(Mode::ForcedClosed),
        "reset" => breaker.set_mode(Mode::Normal),
        _ => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("`{action}` is not an action: force-open, force-closed or reset\n"),
            ));
        }
    }
    Ok(Json(breaker.snapshot()))
}

/// Serves the admin routes on a loopback port; returns its address.
pub async fn start(metrics: PrometheusHandle) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router(metrics)).await });
    Ok(addr)
}

/// One HTTP/1.1 request over a fresh connection: the status and the body.
pub async fn request(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// Installs the Prometheus recorder, with every declared breaker's series
/// in it from the start.
pub fn install_recorder() -> PrometheusHandle {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .expect("no other recorder is installed");
    // Breakers registered before the recorder existed report now.
    failfast::metrics::export();
    handle
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = start(install_recorder()).await?;
    println!("admin service on http://{addr}\n");

    for _ in 0..3 {
        let _ = charge(false);
    }
    let refused = charge(true);
    println!("after three declined charges: {refused:?}\n");

    for (method, path) in [
        ("GET", "/breakers"),
        ("POST", "/breakers/inventory::lookup/force-open"),
        ("GET", "/metrics"),
    ] {
        let (status, body) = request(addr, method, path).await?;
        println!("$ curl -X {method} http://{addr}{path}   # {status}\n{body}\n");
    }
    Ok(())
}
