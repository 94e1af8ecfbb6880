//! The facade's tests, as one test binary: each module is the tests of one
//! concern (calls through the attribute, the tower layer and the reqwest
//! middleware; overrides and live changes; the registry's declarations; the
//! lint guards, whose lint levels are their modules'; the examples' scenarios).
//! Tests that need a process of their own are binaries of their own beside
//! this one: a counting allocator (`alloc`), a test clock installed for the
//! whole process (`counts_ok`, `testing_manual`), tokio's clock followed by
//! every breaker of the process (`testing_tokio`), a metrics recorder
//! installed for the process (`examples_admin`, `examples_service`), two
//! breakers declared under one name, which make every use of the registry
//! panic (`duplicate_names`), and a totals slot for each of a few threads
//! (`carried_names`).

// The examples' scenarios are included as they are, each with its own
// `mod common` (the inventory service and client), as is this binary.
#![allow(clippy::duplicate_mod)]

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
#[cfg(feature = "serde")]
mod configure;
mod const_values;
mod declared;
mod examples_bad_requests;
#[cfg(all(feature = "keyed", feature = "tokio"))]
mod examples_failover;
mod examples_herd;
#[cfg(all(feature = "keyed", feature = "tokio"))]
mod examples_per_host;
mod examples_recovery;
#[cfg(feature = "tokio")]
mod foreign_errors;
#[cfg(feature = "tokio")]
mod hangs;
#[cfg(feature = "keyed")]
mod keyed;
mod lint_guard;
mod lint_guard_gen;
mod lints;
#[cfg(all(feature = "serde", feature = "tokio", feature = "keyed"))]
mod live;
#[cfg(all(feature = "serde", feature = "keyed"))]
mod live_bounds;
#[cfg(all(feature = "serde", feature = "tokio", feature = "keyed"))]
mod live_limits;
#[cfg(feature = "testing")]
mod metastable;
#[cfg(feature = "reqwest-middleware")]
mod reqwest_client;
mod retry;
mod shapes;
#[cfg(all(feature = "testing", feature = "keyed"))]
mod testing_isolate;
#[cfg(all(feature = "tonic", feature = "tokio"))]
mod tonic_status;
#[cfg(all(feature = "tower", feature = "tonic"))]
mod tower_grpc;
#[cfg(all(feature = "tower", feature = "tokio", feature = "keyed"))]
mod tower_layer;
