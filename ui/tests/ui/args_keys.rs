use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// A misspelt key: the closest one is suggested.
#[circuit_breaker(treshold = 5)]
fn unknown_key(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// An unknown key close to none.
#[circuit_breaker(retries = 3)]
fn unknown_key_unrelated(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A key given twice.
#[circuit_breaker(threshold = 5, recovery = "30s", threshold = 3)]
fn duplicate_key(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A key without a value.
#[circuit_breaker(threshold, recovery = "1s")]
fn missing_value(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// Two arguments without a comma between them.
#[circuit_breaker(threshold = 5 recovery = "1s")]
fn missing_comma(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `name` that is not a string.
#[circuit_breaker(name = inventory)]
fn name_not_string(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// An empty `name`.
#[circuit_breaker(name = "")]
fn name_empty(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// A `crate` that is not a path.
#[circuit_breaker(crate = 5)]
fn crate_not_path(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

// `counts_ok` given twice.
#[circuit_breaker(counts_ok = |id: &u32| *id == 0, counts_ok = |id: &u32| *id > 9)]
fn counts_ok_twice(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {}
