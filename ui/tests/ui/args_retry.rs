use failfast::{circuit_breaker, retry};

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// No attempt at all.
#[retry(attempts = 0)]
#[circuit_breaker]
fn attempts_zero(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `backoff` whose maximum is shorter than its start.
#[retry(backoff = "2s..100ms")]
#[circuit_breaker]
fn backoff_shrinks(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `backoff` with an unknown unit.
#[retry(backoff = "100x..2s")]
#[circuit_breaker]
fn backoff_not_a_duration(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `backoff` written as a number, not a string.
#[retry(backoff = 100)]
fn backoff_not_a_string(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `budget` of zero.
#[retry(budget = 0)]
#[circuit_breaker]
fn budget_none(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `budget` above 1.
#[retry(budget = 1.5)]
#[circuit_breaker]
fn budget_above_one(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `jitter` above 1.
#[retry(jitter = 1.5)]
#[circuit_breaker]
fn jitter_out_of_range(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A misspelt key.
#[retry(attemps = 3)]
#[circuit_breaker]
fn unknown_key_typo(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A breaker key given to `#[retry]`.
#[retry(threshold = 3)]
#[circuit_breaker]
fn unknown_key_breaker_key(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `#[retry]` below `#[circuit_breaker]`.
#[circuit_breaker(threshold = 3)]
#[retry(attempts = 3)]
fn retry_below_breaker(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
