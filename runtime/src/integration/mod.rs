//! Integrations with other crates (tower, reqwest-middleware, http,
//! tonic) and the points other crates build on (the transition hook,
//! opens imposed from outside).

#[cfg(feature = "http")]
pub mod classify;
pub mod hook;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod remote;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "tonic")]
pub(crate) mod tonic;
#[cfg(feature = "tower")]
pub mod tower;
