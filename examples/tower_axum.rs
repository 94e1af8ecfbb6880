//! A storefront server that protects its own handler with
//! `failfast::tower::CircuitBreakerLayer`: the handler calls the flaky
//! inventory service, and when that service goes sick the storefront stops
//! sending it requests, answering `503` with `Retry-After` in microseconds
//! instead of holding a worker for every request until its timeout fires.
//!
//! The storefront's route sits behind one `tower::ServiceBuilder` stack:
//!
//! ```text
//! HandleErrorLayer      errors → responses: a refusal is 503 + Retry-After,
//!                       tower's timeout is 504
//! ConcurrencyLimitLayer at most 32 requests in the handler at once
//! CircuitBreakerLayer   threshold 3, recovery 2 s, HTTP classifier
//! TimeoutLayer          300 ms: a hang is an error the breaker counts
//! ```
//!
//! The inventory service is healthy, then sick (it hangs for a second, then
//! answers 503): three storefront requests time out after 300 ms, and the
//! breaker opens; the rest are refused at once. Malformed SKUs before that
//! are 400s, which the breaker ignores. The inventory is healed; after `recovery` the next
//! request is the trial, and the breaker closes.
//!
//! ```text
//! cargo run --example tower_axum --features tower
//! ```

pub mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::client::{InventoryClient, InventoryError};
use common::service::InventoryService;
use common::{human, state_name};
use failfast::tower::CircuitBreakerLayer;
use failfast::{Breaker, Rejected};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{BoxError, ServiceBuilder};

/// The storefront's handler: the product page needs the stock.
async fn product(State(inventory): State<InventoryClient>, Path(sku): Path<String>) -> Response {
    match inventory.stock(&sku).await {
        Ok(stock) => (StatusCode::OK, stock.to_string()).into_response(),
        Err(InventoryError::BadRequest(why)) => (StatusCode::BAD_REQUEST, why).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// The stack's errors as answers: a refusal of the breaker is a 503 with
/// `Retry-After`, tower's timeout a 504, anything else a 500.
async fn answer_error(error: BoxError) -> Response<Body> {
    let error = match error.downcast::<Rejected>() {
        Ok(rejected) => return Response::from(*rejected),
        Err(error) => error,
    };
    let (status, message) = if error.is::<tower::timeout::error::Elapsed>() {
        (
            StatusCode::GATEWAY_TIMEOUT,
            "inventory did not answer in time".to_owned(),
        )
    } else {
        (StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
    };
    (status, message).into_response()
}

fn storefront(inventory: InventoryClient, breaker: Arc<Breaker>) -> Router {
    Router::new()
        .route("/product/{sku}", get(product))
        .with_state(inventory)
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(answer_error))
                .concurrency_limit(32)
                .layer(CircuitBreakerLayer::new(breaker))
                .timeout(Duration::from_millis(300)),
        )
}

/// What a shopper's browser saw.
struct Visit {
    status: StatusCode,
    retry_after: Option<String>,
    took: Duration,
}

async fn visit(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
    url: &str,
) -> Visit {
    let began = Instant::now();
    let response = client
        .get(url.parse().expect("a url"))
        .await
        .expect("the storefront answers");
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    let _ = response.into_body().collect().await;
    Visit {
        status,
        retry_after,
        took: began.elapsed(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let inventory = InventoryService::start(Duration::from_secs(1)).await?;
    let inventory_client = InventoryClient::new(inventory.url());
    let breaker = Arc::new(
        Breaker::builder()
            .name("storefront::inventory")
            .threshold(3)
            .recovery(Duration::from_secs(2))
            .build()?,
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = storefront(inventory_client.clone(), breaker.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let browser = Client::builder(TokioExecutor::new()).build_http();
    println!("storefront at {base}, inventory at {}", inventory.url());
    println!(
        "{:>3}  {:<16} {:<24} {:>11} {:>12} {:>15}",
        "#", "inventory", "storefront answer", "Retry-After", "took", "breaker after"
    );
    let mut n = 0;
    let mut show = |health: &str, v: Visit| {
        n += 1;
        println!(
            "{n:>3}  {health:<16} {:<24} {:>11} {:>12} {:>15}",
            v.status.to_string(),
            v.retry_after.as_deref().unwrap_or("-"),
            human(v.took),
            state_name(breaker.state()),
        );
    };

    let url = |sku: &str| format!("{base}/product/{sku}");
    for _ in 0..2 {
        show("healthy", visit(&browser, &url("SKU-1")).await);
    }
    for _ in 0..3 {
        show(
            "healthy, bad SKU",
            visit(&browser, &url("lower-case-sku")).await,
        );
    }
    inventory_client.set_healthy(false).await?;
    let sick_began = Instant::now();
    for _ in 0..8 {
        show("sick", visit(&browser, &url("SKU-1")).await);
    }
    let sick_took = sick_began.elapsed();
    let hits_while_sick = inventory.hits();

    inventory_client.set_healthy(true).await?;
    show("healed", visit(&browser, &url("SKU-1")).await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "... 2 s later the breaker reads {}",
        state_name(breaker.state())
    );
    show("healed", visit(&browser, &url("SKU-1")).await);
    show("healed", visit(&browser, &url("SKU-1")).await);

    println!(
        "8 requests while the inventory was sick took {} in all; it had seen {} requests \
         (2 good + 3 bad SKUs + 3 before the breaker opened)",
        human(sick_took),
        hits_while_sick
    );
    Ok(())
}
