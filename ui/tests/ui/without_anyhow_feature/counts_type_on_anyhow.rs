use std::fmt;

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyDown;

impl fmt::Display for DependencyDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dependency down")
    }
}

impl std::error::Error for DependencyDown {}

// Looking inside an `anyhow::Error` takes failfast's `anyhow` feature.
#[circuit_breaker(counts = DependencyDown)]
fn fetch(id: u32) -> anyhow::Result<u32> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
}
