use failfast::circuit_breaker;

#[circuit_breaker(threshold = 3)]
fn notify(id: u32) {
    let _ = id;
}

fn main() {
    notify(1);
}
