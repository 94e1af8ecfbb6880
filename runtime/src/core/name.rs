//! A breaker's name, stored once and shared without allocating.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A breaker's name: a `&'static str` (what `#[circuit_breaker]` and literal
/// names give, usable in `const` context) or a name built at run time
/// (`format!("payments@{host}")`), stored once in an `Arc<str>`.
///
/// Cloning it never allocates: a static name is copied, an owned one costs one
/// reference-count increment. [`Rejected`](crate::Rejected),
/// [`Snapshot`](crate::Snapshot) and [`Transition`](crate::ops::events::Transition)
/// carry it this way. It derefs to `str` and compares with strings:
///
/// ```
/// use failfast_runtime::Breaker;
///
/// let host = "host-3";
/// let breaker = Breaker::builder().name(format!("payments@{host}")).build()?;
/// assert_eq!(breaker.snapshot().name, "payments@host-3");
/// assert!(breaker.name().starts_with("payments@"));
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    /// A name known at compile time.
    #[must_use]
    pub(crate) const fn new_static(name: &'static str) -> Self {
        Name(Repr::Static(name))
    }

    /// The name, when it is a `&'static str`.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn as_static(&self) -> Option<&'static str> {
        match self.0 {
            Repr::Static(s) => Some(s),
            Repr::Shared(_) => None,
        }
    }

    /// The name's text when it was built at run time: its `Arc<str>`.
    #[inline]
    pub(crate) fn as_shared(&self) -> Option<&Arc<str>> {
        match &self.0 {
            Repr::Static(_) => None,
            Repr::Shared(s) => Some(s),
        }
    }

    /// A name built at run time, from its `Arc<str>`.
    #[inline]
    pub(crate) fn from_shared(name: Arc<str>) -> Self {
        Name(Repr::Shared(name))
    }

    /// The name as a string slice.
    #[must_use]
    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Shared(s) => s,
        }
    }
}

impl From<Cow<'static, str>> for Name {
    fn from(name: Cow<'static, str>) -> Self {
        match name {
            Cow::Borrowed(s) => Name(Repr::Static(s)),
            Cow::Owned(s) => Name(Repr::Shared(s.into())),
        }
    }
}

impl From<&'static str> for Name {
    fn from(name: &'static str) -> Self {
        Name(Repr::Static(name))
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Name(Repr::Shared(name.into()))
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_owned_names_read_and_compare_alike() {
        let fixed = Name::new_static("payments[host-3]");
        let owned = Name::from(String::from("payments[host-3]"));
        assert_eq!(fixed.as_static(), Some("payments[host-3]"));
        assert_eq!(owned.as_static(), None);
        for name in [&fixed, &owned] {
            assert_eq!(AsRef::<str>::as_ref(name), "payments[host-3]");
            assert!(*name == *"payments[host-3]");
            assert!(*name != *"payments[host-4]");
            assert!(*name == "payments[host-3]");
            assert!(*name != "payments[host-4]");
            assert!("payments[host-3]" == *name);
            assert!("payments[host-4]" != *name);
            assert!(*"payments[host-3]" == *name);
            assert!(*"payments[host-4]" != *name);
        }
        assert_eq!(fixed, owned);
    }
}
