//! A small gRPC ledger service on loopback and a client for it, with a
//! hand-written UTF-8 codec: no `protoc`, no generated code, only tonic's
//! `Grpc` server and client over a `Codec` written here.
//!
//! `/demo.Ledger/Get` takes an account name and answers `"balance 42"`. An
//! account name that is not lower-case letters, digits and dashes is
//! `INVALID_ARGUMENT` in every state (the caller's bug); while the ledger is
//! sick, every valid request is `UNAVAILABLE`. The service counts the
//! requests it receives, so a scenario can say how many reached it.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use tonic::Status;
use tonic::client::GrpcService;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tower::Service;

/// Messages are UTF-8 strings.
#[derive(Clone, Copy, Default)]
pub struct Utf8;

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

/// The balance a healthy ledger answers.
pub const BALANCE: &str = "balance 42";

#[derive(Default)]
struct Shared {
    sick: AtomicBool,
    hits: AtomicUsize,
}

/// A running ledger service. It stops when the tokio runtime that started
/// it shuts down.
pub struct LedgerService {
    url: String,
    shared: Arc<Shared>,
}

impl LedgerService {
    /// Binds 127.0.0.1 on an ephemeral port and serves in a background task
    /// of the current tokio runtime, healthy.
    pub async fn start() -> std::io::Result<LedgerService> {
        let shared = Arc::new(Shared::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let server = tonic::transport::Server::builder()
            .add_service(Ledger(shared.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        tokio::spawn(server);
        Ok(LedgerService { url, shared })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Makes the ledger sick (every valid request is `UNAVAILABLE`) or
    /// healthy again.
    pub fn set_sick(&self, sick: bool) {
        self.shared.sick.store(sick, SeqCst);
    }

    /// How many `Get` requests reached the ledger.
    pub fn hits(&self) -> usize {
        self.shared.hits.load(SeqCst)
    }
}

/// The server side: routes `/demo.Ledger/*` to [`Get`].
#[derive(Clone)]
struct Ledger(Arc<Shared>);

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
        let get = Get(self.0.clone());
        Box::pin(async move { Ok(tonic::server::Grpc::new(Utf8).unary(get, request).await) })
    }
}

struct Get(Arc<Shared>);

impl tonic::server::UnaryService<String> for Get {
    type Response = String;
    type Future = std::future::Ready<Result<tonic::Response<String>, Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        self.0.hits.fetch_add(1, SeqCst);
        let account = request.get_ref();
        let valid = !account.is_empty()
            && account
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        std::future::ready(if !valid {
            Err(Status::invalid_argument(format!(
                "no such account {account:?}"
            )))
        } else if self.0.sick.load(SeqCst) {
            Err(Status::unavailable("ledger database down"))
        } else {
            Ok(tonic::Response::new(BALANCE.to_owned()))
        })
    }
}

/// A client of the ledger over any gRPC transport: a tonic `Channel`, or a
/// `Channel` behind tower layers. What `tonic-build` would generate.
#[derive(Clone)]
pub struct LedgerClient<T> {
    grpc: tonic::client::Grpc<T>,
}

impl<T> LedgerClient<T>
where
    T: GrpcService<tonic::body::Body>,
    T::Error: Into<tower::BoxError>,
    T::ResponseBody: hyper::body::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as hyper::body::Body>::Error: Into<tower::BoxError> + Send,
{
    /// A client calling through `transport`.
    pub fn new(transport: T) -> Self {
        LedgerClient {
            grpc: tonic::client::Grpc::new(transport),
        }
    }

    /// `/demo.Ledger/Get` for `account`: its balance, or the call's status.
    /// A transport error (or a refusal of a layer in front of the channel)
    /// becomes a status with `Status::from_error`, as generated clients do.
    pub async fn get(&mut self, account: &str) -> Result<String, Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::from_error(e.into()))?;
        let path = PathAndQuery::from_static("/demo.Ledger/Get");
        self.grpc
            .unary(tonic::Request::new(account.to_owned()), path, Utf8)
            .await
            .map(tonic::Response::into_inner)
    }
}
