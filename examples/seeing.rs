//! Seeing breakers: transition events as they happen, and running totals in
//! snapshots. `cargo run --example seeing` (add `--features tracing` and a
//! subscriber to get the same transitions as log lines).

use std::time::Duration;

use failfast::{Rejected, circuit_breaker, events, registry};

#[derive(Debug)]
enum InventoryError {
    Down,
    Unavailable(Rejected),
}

impl From<Rejected> for InventoryError {
    fn from(rejected: Rejected) -> Self {
        InventoryError::Unavailable(rejected)
    }
}

#[circuit_breaker(name = "inventory", threshold = 2, recovery = "500ms")]
fn check_inventory(healthy: bool) -> Result<u32, InventoryError> {
    if healthy {
        Ok(42)
    } else {
        Err(InventoryError::Down)
    }
}

fn main() {
    // Every transition of the breakers named "inventory", from now on: this
    // works before the breaker's first call. Keep the subscription alive for
    // as long as you want the events.
    let _events = events::subscribe("inventory", |t| {
        println!(
            "#{} {}: {} -> {} ({}), open for {:?}",
            t.seq, t.name, t.from, t.to, t.reason, t.open_for
        );
    });

    for healthy in [true, false, false, false] {
        if let Err(InventoryError::Unavailable(rejected)) = check_inventory(healthy) {
            println!("{rejected}"); // the last call
        }
    }
    std::thread::sleep(Duration::from_millis(600));
    let _ = check_inventory(true); // the trial: half-open, then closed

    let s = registry::get("inventory").expect("registered").snapshot();
    println!(
        "{}: {} calls: {} ok, {} failed, {} rejected; {} transitions",
        s.name, s.calls, s.successes, s.failures, s.rejected, s.transitions
    );
}
