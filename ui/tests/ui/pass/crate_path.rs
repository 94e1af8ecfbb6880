// The runtime reached through another path, as a crate that re-exports
// failfast would do.
mod reexport {
    pub use ::failfast::*;
}

#[derive(Debug)]
pub struct DependencyError;

impl From<reexport::Rejected> for DependencyError {
    fn from(_: reexport::Rejected) -> Self {
        DependencyError
    }
}

#[reexport::circuit_breaker(crate = crate::reexport, threshold = 2)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[reexport::circuit_breaker(crate = "crate::reexport")]
fn fetch_quoted(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

fn main() {
    assert_eq!(fetch(1).unwrap(), 1);
    assert_eq!(fetch_quoted(2).unwrap(), 2);
}
