use failfast::circuit_breaker;

#[derive(Debug)]
pub enum ApiError {
    Down,
    BadRequest,
    Rejected,
}

impl From<failfast::Rejected> for ApiError {
    fn from(_: failfast::Rejected) -> Self {
        ApiError::Rejected
    }
}

use ApiError::Down;

// A bare UpperCamelCase name is a type to look for in the error's chain; an
// imported variant is not one.
#[circuit_breaker(counts = Down)]
fn fetch(id: u32) -> Result<u32, ApiError> {
    if id == 0 {
        return Err(ApiError::BadRequest);
    }
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
