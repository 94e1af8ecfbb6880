//! The state machine: the breaker, its word, clock, windows, settings,
//! permits, snapshots and errors. It imports nothing from the layers above
//! it; they watch it through the observer points of [`observe`].

pub(crate) mod body;
pub(crate) mod bound;
pub(crate) mod breaker;
pub(crate) mod clock;
pub(crate) mod config;
pub(crate) mod error;
pub(crate) mod kept;
pub(crate) mod listed;
pub(crate) mod name;
pub(crate) mod outcome;
#[cfg(feature = "testing")]
pub(crate) mod scope;
#[cfg(feature = "serde")]
pub(crate) mod serde;
pub(crate) mod shed;
pub(crate) mod timeout;
#[cfg(feature = "tokio")]
pub(crate) mod timer;
pub(crate) mod totals;
pub(crate) mod window;
pub(crate) mod word;
