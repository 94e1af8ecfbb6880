//! Operating breakers: finding them by name, listening to their
//! transitions, changing their settings at run time, exporting them to
//! `metrics` and `tracing`, and testing code that uses them.

pub mod configure;
pub mod events;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod registry;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "tracing")]
pub(crate) mod tracing;
