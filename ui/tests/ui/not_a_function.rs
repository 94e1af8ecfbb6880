use failfast::circuit_breaker;

#[circuit_breaker(threshold = 3)]
pub struct Inventory;

fn main() {}
