use failfast::circuit_breaker;

// A budget of no breaker at all.
#[circuit_breaker(key = replica, max_ejection_percent = 0)]
fn fetch(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// More than every breaker.
#[circuit_breaker(key = replica, max_ejection_percent = 150)]
fn read(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

// A share of the breakers, not a fraction.
#[circuit_breaker(key = replica, max_ejection_percent = 0.5)]
fn write(replica: &str) -> std::io::Result<u32> {
    Ok(replica.len() as u32)
}

fn main() {
    let _ = (fetch("a"), read("a"), write("a"));
}
