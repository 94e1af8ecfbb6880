use failfast::circuit_breaker;

#[circuit_breaker(threshold = 3)]
fn fetch(id: u32) -> u32 {
    id
}

fn main() {
    let _ = fetch(1);
}
