//! Code shared by the examples (and by the tests that replay them): the flaky
//! inventory service, a plain HTTP client for it, a gRPC ledger service and
//! its client, and output helpers.
//! Each example uses a part of it.
#![allow(dead_code)]

pub mod client;
pub mod grpc;
pub mod service;

use std::time::Duration;

/// A duration the way a person reads it: `420 ns`, `3.1 µs`, `12.4 ms`, `301 ms`, `6.02 s`.
pub fn human(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    match ns {
        n if n < 1e3 => format!("{n:.0} ns"),
        n if n < 1e4 => format!("{:.1} µs", n / 1e3),
        n if n < 1e6 => format!("{:.0} µs", n / 1e3),
        n if n < 1e7 => format!("{:.1} ms", n / 1e6),
        n if n < 1e9 => format!("{:.0} ms", n / 1e6),
        n => format!("{:.2} s", n / 1e9),
    }
}

/// The value after `--name` on the command line, parsed, or `default`.
/// Exits with a message when the value does not parse.
pub fn flag<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    let key = format!("--{name}");
    for (i, arg) in args.iter().enumerate() {
        let value = if *arg == key {
            args.get(i + 1).cloned()
        } else {
            arg.strip_prefix(&format!("{key}=")).map(str::to_owned)
        };
        if let Some(value) = value {
            return value.parse().unwrap_or_else(|_| {
                eprintln!("error: --{name} expects a number, got {value:?}");
                std::process::exit(2)
            });
        }
    }
    default
}

/// A breaker state for a table: `closed`, `OPEN`, `half-open`.
pub fn state_name(state: failfast::State) -> &'static str {
    match state {
        failfast::State::Closed => "closed",
        failfast::State::Open => "OPEN",
        failfast::State::HalfOpen => "half-open",
    }
}
