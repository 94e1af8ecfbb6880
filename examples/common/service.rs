//! A flaky inventory service on loopback, the dependency every scenario calls.
//!
//! Routes:
//! - `GET /inventory/{sku}`: `{"sku": "...", "quantity": 42}` when healthy. When
//!   sick, the request hangs for the configured time and then gets a 503. When
//!   silent, the request hangs and is never answered at all: the connection
//!   stays open until the client gives up. A SKU that is not upper-case
//!   letters, digits and dashes is a 400 in every state, answered at once: it is
//!   the caller's bug, not the service's sickness.
//! - `POST /admin/healthy/{true|false}`: makes the service healthy or sick.
//! - `POST /admin/silent/{true|false}`: makes the service silent (it hangs
//!   without answering) or answer again.
//!
//! The service counts the inventory requests it receives, so a scenario can say
//! how many calls really reached it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

/// The answer of a healthy service to `GET /inventory/{sku}`.
pub const QUANTITY: u32 = 42;

struct Shared {
    healthy: AtomicBool,
    silent: AtomicBool,
    hang: Duration,
    hits: AtomicU64,
}

/// A running inventory service. It stops when the tokio runtime that started it
/// shuts down.
pub struct InventoryService {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl InventoryService {
    /// Binds 127.0.0.1 on an ephemeral port and serves in a background task of the
    /// current tokio runtime. `hang` is how long a sick service holds a request
    /// before it answers 503.
    pub async fn start(hang: Duration) -> std::io::Result<InventoryService> {
        let shared = Arc::new(Shared {
            healthy: AtomicBool::new(true),
            silent: AtomicBool::new(false),
            hang,
            hits: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/inventory/{sku}", get(inventory))
            .route("/admin/healthy/{healthy}", post(set_healthy))
            .route("/admin/silent/{silent}", post(set_silent))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("inventory service stopped: {e}");
            }
        });
        Ok(InventoryService { addr, shared })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many `GET /inventory/…` requests have reached the service so far.
    pub fn hits(&self) -> u64 {
        self.shared.hits.load(Ordering::SeqCst)
    }

    pub fn is_healthy(&self) -> bool {
        self.shared.healthy.load(Ordering::SeqCst)
    }

    /// Makes the service hang without answering (`true`), or answer again.
    pub fn set_silent(&self, silent: bool) {
        self.shared.silent.store(silent, Ordering::SeqCst);
    }

    pub fn hang(&self) -> Duration {
        self.shared.hang
    }
}

fn well_formed(sku: &str) -> bool {
    !sku.is_empty()
        && sku
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
}

async fn inventory(State(shared): State<Arc<Shared>>, Path(sku): Path<String>) -> Response {
    shared.hits.fetch_add(1, Ordering::SeqCst);
    if !well_formed(&sku) {
        let error =
            format!("malformed SKU {sku:?}: expected upper-case letters, digits and dashes");
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
    }
    if shared.silent.load(Ordering::SeqCst) {
        return std::future::pending().await;
    }
    if shared.healthy.load(Ordering::SeqCst) {
        return Json(json!({ "sku": sku, "quantity": QUANTITY })).into_response();
    }
    tokio::time::sleep(shared.hang).await;
    let error = "inventory database unavailable";
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "error": error })),
    )
        .into_response()
}

async fn set_healthy(State(shared): State<Arc<Shared>>, Path(healthy): Path<bool>) -> Response {
    shared.healthy.store(healthy, Ordering::SeqCst);
    Json(json!({ "healthy": healthy })).into_response()
}

async fn set_silent(State(shared): State<Arc<Shared>>, Path(silent): Path<bool>) -> Response {
    shared.silent.store(silent, Ordering::SeqCst);
    Json(json!({ "silent": silent })).into_response()
}
