//! A tonic client through the layer on its `Channel`, against a small gRPC
//! service on loopback that answers each request with the status its body
//! names. The service and the client use a hand-written UTF-8 codec, so no
//! `protoc` and no generated code are needed.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut};
use failfast::tower::{CircuitBreakerLayer, GrpcClassifier};
use failfast::{Breaker, State};
use http::uri::PathAndQuery;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};
use tower::{Service, ServiceBuilder};

/// Messages are UTF-8 strings.
#[derive(Clone, Copy, Default)]
struct Utf8;

impl Codec for Utf8 {
    type Encode = String;
    type Decode = String;
    type Encoder = Utf8;
    type Decoder = Utf8;

    fn encoder(&mut self) -> Utf8 {
        Utf8
    }

    fn decoder(&mut self) -> Utf8 {
        Utf8
    }
}

impl Encoder for Utf8 {
    type Item = String;
    type Error = Status;

    fn encode(&mut self, item: String, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(item.as_bytes());
        Ok(())
    }
}

impl Decoder for Utf8 {
    type Item = String;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<String>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// The ledger service: `/demo.Ledger/Get` answers `"balance 42"`, or fails
/// with `UNAVAILABLE` for the body `"unavailable"` and `INVALID_ARGUMENT`
/// for `"invalid"`. Counts the requests it receives.
#[derive(Clone)]
struct Ledger {
    hits: Arc<AtomicUsize>,
}

impl tonic::server::NamedService for Ledger {
    const NAME: &'static str = "demo.Ledger";
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Service<http::Request<tonic::body::Body>> for Ledger {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let get = Get(self.hits.clone());
        Box::pin(async move { Ok(tonic::server::Grpc::new(Utf8).unary(get, request).await) })
    }
}

struct Get(Arc<AtomicUsize>);

impl tonic::server::UnaryService<String> for Get {
    type Response = String;
    type Future = std::future::Ready<Result<tonic::Response<String>, Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        self.0.fetch_add(1, SeqCst);
        std::future::ready(match request.get_ref().as_str() {
            "unavailable" => Err(Status::unavailable("ledger database down")),
            "invalid" => Err(Status::invalid_argument("no such account")),
            _ => Ok(tonic::Response::new("balance 42".to_owned())),
        })
    }
}

/// Starts the ledger on a loopback port; returns its URL and hit counter.
async fn start_ledger() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tonic::transport::Server::builder()
        .add_service(Ledger { hits: hits.clone() })
        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
    tokio::spawn(server);
    (url, hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tonic_client_trips_on_unavailable_not_on_invalid_argument() {
    let (url, hits) = start_ledger().await;
    let channel = tonic::transport::Endpoint::from_shared(url)
        .unwrap()
        .connect()
        .await
        .expect("the ledger accepts connections");
    let breaker = Arc::new(
        Breaker::builder()
            .name("tower-grpc-ledger")
            .threshold(2)
            .recovery(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    let channel = ServiceBuilder::new()
        .layer(
            CircuitBreakerLayer::new(breaker.clone())
                .classifier(GrpcClassifier)
                .refuse_with_status(),
        )
        .service(channel);
    let client = tonic::client::Grpc::new(channel);
    let get = |body: &'static str| {
        let mut client = client.clone();
        async move {
            client.ready().await.map_err(Status::from_error)?;
            let path = PathAndQuery::from_static("/demo.Ledger/Get");
            let request = tonic::Request::new(body.to_owned());
            client
                .unary(request, path, Utf8)
                .await
                .map(tonic::Response::into_inner)
        }
    };

    assert_eq!(get("account-1").await.unwrap(), "balance 42");
    for _ in 0..5 {
        assert_eq!(
            get("invalid").await.unwrap_err().code(),
            Code::InvalidArgument
        );
    }
    assert_eq!(
        breaker.state(),
        State::Closed,
        "INVALID_ARGUMENT is neutral"
    );
    assert_eq!(breaker.snapshot().consecutive_failures, 0);

    for _ in 0..2 {
        assert_eq!(
            get("unavailable").await.unwrap_err().code(),
            Code::Unavailable
        );
    }
    assert_eq!(breaker.state(), State::Open, "two UNAVAILABLE trip it");
    assert_eq!(hits.load(SeqCst), 8);

    let refused = get("account-1").await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert!(
        refused.message().contains("tower-grpc-ledger"),
        "{refused:?}"
    );
    let pushback = refused
        .metadata()
        .get("grpc-retry-pushback-ms")
        .expect("pushback");
    let pushback: u64 = pushback.to_str().unwrap().parse().unwrap();
    assert!(pushback > 0 && pushback <= 30_000, "{pushback}");
    assert_eq!(
        hits.load(SeqCst),
        8,
        "the refused call never left the client"
    );
}
