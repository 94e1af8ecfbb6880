use failfast::{Error, Rejected, circuit_breaker};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

fn cached<T: Default>(_id: u32, _error: Error<DependencyError>) -> Result<T, DependencyError> {
    Ok(T::default())
}

fn unavailable(_: Rejected) -> DependencyError {
    DependencyError
}

// A `fallback` given as a string, not a path.
#[circuit_breaker(fallback = "stock_unknown")]
fn fallback_not_path(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `fallback` written as a call.
#[circuit_breaker(fallback = stock_unknown(id))]
fn fallback_call(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Generic arguments of a `fallback` without the turbofish.
#[circuit_breaker(fallback = cached<u32>)]
fn fallback_generic_without_turbofish(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A closure fallback is given the error alone.
#[circuit_breaker(fallback = |id, error| cached(id, error))]
fn fallback_closure_two_arguments(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `fallback` and `reject_with` both answer a refused call.
#[circuit_breaker(fallback = |error| cached(error), reject_with = unavailable)]
fn reject_with_and_fallback() -> Result<u32, DependencyError> {
    Ok(1)
}

fn main() {}
