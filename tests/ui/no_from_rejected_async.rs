use failfast::circuit_breaker;

// An alias that does not name the error type, as `std::io::Result` does (a
// local one: the list of `From` impls of a std type depends on the crates
// that happen to be linked).
mod api {
    #[derive(Debug)]
    pub struct Error;
    pub type Result<T> = std::result::Result<T, Error>;
}

#[circuit_breaker(threshold = 3)]
async fn fetch(id: u32) -> api::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
