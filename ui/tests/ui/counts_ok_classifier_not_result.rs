use failfast::circuit_breaker;

#[derive(Default)]
pub struct Classifier;

// Two mistakes, one error each: no `Result` (at the return type), and a
// `counts_ok` type that classifies nothing (at the type).
#[circuit_breaker(counts_ok = Classifier)]
fn fetch(id: u32) -> u16 {
    let _ = id;
    503
}

fn main() {
    let _ = fetch(1);
}
