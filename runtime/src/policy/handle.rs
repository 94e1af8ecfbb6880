//! [`BreakerRef`]: a handle to one breaker, however it is held, and the
//! one a keyed family's handle hands out for a key
//! ([`FamilyRef::member`]).

use std::ops::Deref;
use std::sync::Arc;

use crate::core::breaker::Breaker;
#[cfg(feature = "keyed")]
use crate::policy::keyed::{FamilyRef, Member};

/// A handle to a registered breaker: derefs to [`Breaker`], so it has
/// `name()`, `state()`, `snapshot()` and `set_mode(…)`.
#[derive(Clone, Debug)]
pub enum BreakerRef {
    /// A breaker in a `static`, as `#[circuit_breaker]` declares them.
    Static(&'static Breaker),
    /// A breaker built at run time and [`register`](crate::registry::register)ed.
    Shared(Arc<Breaker>),
    /// One key's breaker in a keyed family.
    #[cfg(feature = "keyed")]
    Member(Arc<Member>),
}

impl Deref for BreakerRef {
    type Target = Breaker;

    fn deref(&self) -> &Breaker {
        match self {
            BreakerRef::Static(b) => b,
            BreakerRef::Shared(b) => b,
            #[cfg(feature = "keyed")]
            BreakerRef::Member(m) => m.breaker(),
        }
    }
}

impl From<Breaker> for BreakerRef {
    /// A breaker put in an `Arc` (not registered: see
    /// [`registry::register`](crate::registry::register)).
    fn from(breaker: Breaker) -> Self {
        BreakerRef::Shared(Arc::new(breaker))
    }
}

impl From<&BreakerRef> for BreakerRef {
    fn from(breaker: &BreakerRef) -> Self {
        breaker.clone()
    }
}

impl From<&Arc<Breaker>> for BreakerRef {
    fn from(breaker: &Arc<Breaker>) -> Self {
        BreakerRef::Shared(Arc::clone(breaker))
    }
}

impl From<Arc<Breaker>> for BreakerRef {
    /// The shared breaker itself.
    fn from(breaker: Arc<Breaker>) -> Self {
        BreakerRef::Shared(breaker)
    }
}

impl From<&'static Breaker> for BreakerRef {
    /// The breaker in a `static` (or leaked).
    fn from(breaker: &'static Breaker) -> Self {
        BreakerRef::Static(breaker)
    }
}

#[cfg(feature = "keyed")]
impl FamilyRef {
    /// The breaker of the key labelled `label` (its name is
    /// `family[label]`): the member if the key has one, else a breaker that
    /// the key's first call adopts, so that a key can be forced open or
    /// reconfigured before any traffic. `None` for `*` (the overflow
    /// breaker's label) and once `max_keys` breakers wait so.
    #[must_use]
    pub fn member(&self, label: &str) -> Option<BreakerRef> {
        self.0.labelled(label, true).map(BreakerRef::Member)
    }
}
