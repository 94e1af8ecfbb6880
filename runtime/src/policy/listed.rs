//! The keyed families the program declares, gathered by the linker: what
//! the registry lists from program start beside the declared breakers of
//! `core::listed`.

use crate::policy::keyed::Slot;

/// A keyed family declared by `#[circuit_breaker(key = …)]` or
/// `breaker!(… max_keys = …)`, and where.
#[doc(hidden)]
#[derive(Debug)]
pub struct DeclaredFamily {
    /// The family's slot.
    pub slot: &'static Slot,
    /// `file:line` of the declaration.
    pub at: &'static str,
}

/// Every keyed family declared in the program, gathered by the linker.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static DECLARED_FAMILIES: [DeclaredFamily];
