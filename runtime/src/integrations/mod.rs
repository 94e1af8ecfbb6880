//! Integrations with other crates (tower, reqwest-middleware, http,
//! tonic) and the points other crates build on (the transition hook,
//! opens imposed from outside).

#[cfg(feature = "http")]
pub mod classify;
#[cfg(feature = "http")]
pub(crate) mod http;
pub mod integration;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "tonic")]
pub(crate) mod tonic;
#[cfg(feature = "tower")]
pub mod tower;
