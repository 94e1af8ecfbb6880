// The runtime reached through another path, as a crate that re-exports
// failfast would do (here the module's own, from the test crate's root).
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

#[reexport::circuit_breaker(crate = crate::crate_path::reexport, threshold = 2)]
fn fetch(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[reexport::circuit_breaker(crate = "crate::crate_path::reexport")]
fn fetch_quoted(id: u32) -> Result<u32, DependencyError> {
    Ok(id)
}

#[test]
fn main() {
    assert_eq!(fetch(1).unwrap(), 1);
    assert_eq!(fetch_quoted(2).unwrap(), 2);
}
