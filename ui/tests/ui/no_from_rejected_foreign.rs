use failfast::circuit_breaker;

// Another crate's error type: `impl From<Rejected> for reqwest::Error` is
// not allowed here, and a `reqwest::Error` cannot be built from a refusal.
#[circuit_breaker(threshold = 3)]
async fn fetch(url: &str) -> Result<String, reqwest::Error> {
    reqwest::get(url).await?.text().await
}

fn main() {
    let _ = fetch("http://127.0.0.1:1/");
}
