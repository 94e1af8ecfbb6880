use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

pub trait Inventory {
    #[circuit_breaker(threshold = 3)]
    fn fetch(&self, id: u32) -> Result<u32, DependencyError>;
}

fn main() {}
