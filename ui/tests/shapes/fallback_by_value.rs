// Bodies that consume their arguments, with a fallback of the error alone:
// the body takes its arguments by move, as the function would without the
// attribute.
use failfast::{Error, circuit_breaker};

#[derive(Debug)]
pub enum Down {
    Unreachable,
    Rejected,
}

impl From<failfast::Rejected> for Down {
    fn from(_: failfast::Rejected) -> Self {
        Down::Rejected
    }
}

pub struct Request {
    pub body: String,
}

fn send(req: Request) -> Result<usize, Down> {
    if req.body.is_empty() {
        return Err(Down::Unreachable);
    }
    Ok(req.body.len())
}

fn cached(_error: Error<Down>) -> Result<usize, Down> {
    Ok(0)
}

async fn cached_async(_error: Error<Down>) -> Result<usize, Down> {
    Ok(0)
}

#[circuit_breaker(threshold = 2, fallback = |error| cached(error))]
fn call(req: Request) -> Result<usize, Down> {
    send(req)
}

#[circuit_breaker(threshold = 2, fallback = |error| cached_async(error))]
async fn call_async(req: Request) -> Result<usize, Down> {
    tokio::task::yield_now().await;
    send(req)
}

// A `Copy` argument is still there for the fallback after the body moved
// its copy; the closure's parameter can be annotated.
#[circuit_breaker(threshold = 2, fallback = |error: Error<Down>| if matches!(error, failfast::Error::Rejected(_)) { Ok(id as usize) } else { Err(Down::Unreachable) })]
fn call_with_id(id: u32, req: Request) -> Result<usize, Down> {
    send(req)
}

#[circuit_breaker(threshold = 2, fallback = |_| Ok(0))]
fn call_generic<T: Send + Into<String>>(value: T) -> Result<usize, Down> {
    send(Request { body: value.into() })
}

pub struct Order {
    pub sku: String,
    pub body: String,
}

fn cached_for(sku: &str, _error: Error<Down>) -> Result<usize, Down> {
    Ok(sku.len())
}

// A block run before the body keeps a cheap part of an argument the body
// consumes.
#[circuit_breaker(threshold = 2, fallback = {
    let sku = order.sku.clone();
    move |error| cached_for(&sku, error)
})]
fn place(order: Order) -> Result<usize, Down> {
    send(Request { body: order.body })
}

#[circuit_breaker(threshold = 2, fallback = {
    let sku = order.sku.clone();
    move |error| async move { cached_for(&sku, error) }
})]
async fn place_async(order: Order) -> Result<usize, Down> {
    tokio::task::yield_now().await;
    send(Request { body: order.body })
}

pub struct Client {
    pub base: String,
}

impl Client {
    fn cached(error: Error<Down>) -> Result<usize, Down> {
        cached(error)
    }

    #[circuit_breaker(threshold = 2, fallback = |error| Self::cached(error))]
    fn into_call(self) -> Result<usize, Down> {
        send(Request { body: self.base })
    }
}

#[async_trait::async_trait]
pub trait Sender {
    async fn send_owned(&self, req: Request) -> Result<usize, Down>;
}

#[async_trait::async_trait]
impl Sender for Client {
    #[circuit_breaker(threshold = 2, fallback = |error| cached_async(error))]
    async fn send_owned(&self, req: Request) -> Result<usize, Down> {
        tokio::task::yield_now().await;
        send(req)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    let req = || Request {
        body: "abc".to_owned(),
    };
    assert_eq!(call(req()).unwrap(), 3);
    assert_eq!(call_async(req()).await.unwrap(), 3);
    assert_eq!(call_with_id(7, req()).unwrap(), 3);
    assert_eq!(call_generic("ab").unwrap(), 2);
    assert_eq!(Client { base: "x".into() }.into_call().unwrap(), 1);
    let client = Client {
        base: String::new(),
    };
    assert_eq!(client.send_owned(req()).await.unwrap(), 3);
    let order = |body: &str| Order {
        sku: "sku-1".to_owned(),
        body: body.to_owned(),
    };
    assert_eq!(place(order("abcd")).unwrap(), 4);
    assert_eq!(place(order("")).unwrap(), 5, "the fallback kept the sku");
    assert_eq!(place_async(order("")).await.unwrap(), 5);
    // Counted failures answer from the fallback.
    assert_eq!(
        call(Request {
            body: String::new()
        })
        .unwrap(),
        0
    );
}
