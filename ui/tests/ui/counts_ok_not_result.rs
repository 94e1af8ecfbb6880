use failfast::circuit_breaker;

// `counts_ok` on a function without a `Result`: the attribute's one error,
// at the return type.
#[circuit_breaker(counts_ok = |status: &u16| *status >= 500)]
fn fetch(id: u32) -> u16 {
    let _ = id;
    503
}

fn main() {
    let _ = fetch(1);
}
