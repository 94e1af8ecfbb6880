//! Calls through the attribute, the tower layer and the reqwest middleware,
//! as one test binary: each module is the tests of one concern. Tests that
//! need a process of their own (a counting allocator, a test clock for the
//! whole process, the list of every breaker the binary declares, lint
//! levels for the whole crate, the examples that start servers) are
//! binaries of their own beside this one.

#[path = "../support/mod.rs"]
mod support;

/// The examples' inventory service and client, and their gRPC ledger.
#[path = "../../examples/common/mod.rs"]
mod common;

/// The cascade simulation of `examples/cascade.rs` (its shedding draws
/// seeded with `failfast::testing`).
#[cfg(feature = "testing")]
#[allow(dead_code)]
#[path = "../../examples/cascade.rs"]
mod cascade_example;

/// The capacity simulation of `examples/capacity.rs`.
#[cfg(feature = "testing")]
#[allow(dead_code)]
#[path = "../../examples/capacity.rs"]
mod capacity_example;

/// The metastable-failure simulation of `examples/metastable.rs`.
#[cfg(feature = "testing")]
#[allow(dead_code)]
#[path = "../../examples/metastable.rs"]
mod metastable_example;

mod attribute_scenarios;
#[cfg(feature = "tokio")]
mod bulkhead;
#[cfg(feature = "testing")]
mod capacity;
#[cfg(feature = "testing")]
mod cascade;
mod classify;
mod const_values;
#[cfg(feature = "tokio")]
mod foreign_errors;
#[cfg(feature = "tokio")]
mod hangs;
#[cfg(feature = "keyed")]
mod keyed;
#[cfg(feature = "testing")]
mod metastable;
#[cfg(feature = "reqwest-middleware")]
mod reqwest_client;
mod retry;
mod shapes;
#[cfg(all(feature = "tonic", feature = "tokio"))]
mod tonic_status;
#[cfg(all(feature = "tower", feature = "tonic"))]
mod tower_grpc;
#[cfg(all(feature = "tower", feature = "tokio", feature = "keyed"))]
mod tower_layer;
