use failfast::{circuit_breaker, Error};

#[derive(Debug)]
pub struct Down;

pub struct Request {
    pub body: String,
}

fn send(req: Request) -> Result<usize, Down> {
    Ok(req.body.len())
}

fn cached(_req: &Request, _error: Error<Down>) -> Result<usize, Down> {
    Ok(0)
}

// The body consumes `req`; the fallback closure cannot use it afterwards.
#[circuit_breaker(fallback = |error| cached(&req, error))]
fn call(req: Request) -> Result<usize, Down> {
    send(req)
}

fn main() {
    let _ = call(Request { body: String::new() });
}
