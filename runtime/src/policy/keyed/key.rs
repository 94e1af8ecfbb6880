//! What a family is keyed by, and how a key is written in its member's
//! name: the [`Key`] trait and its implementations, the borrowed lookup of
//! an owned key, and the labels of `family[label]`.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// A value a [`Family`](super::Family) can be keyed by: hashed and compared as it is,
/// turned into an owned key ([`Key::Owned`]) only when its breaker is
/// created.
///
/// Implemented for `str` and `String` (owned as `String`), the integers,
/// `bool`, `char`, `IpAddr`, `SocketAddr`, references to any of them, and
/// tuples of up to four of them (`(&str, u16)` is owned as `(String, u16)`).
/// A type of your own implements it in a few lines:
///
/// ```
/// use failfast_runtime::Key;
///
/// #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
/// enum Region { Eu, Us }
///
/// impl Key for Region {
///     type Owned = Region;
///     fn to_key(&self) -> Region { *self }
///     fn matches(&self, owned: &Region) -> bool { self == owned }
///     fn label(&self, out: &mut String) { out.push_str(match self { Region::Eu => "eu", Region::Us => "us" }) }
/// }
/// ```
///
/// The one rule: a value and its owned key hash alike (as `str` and
/// `String` do), since the family looks up the value without turning it
/// into an owned key.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot key a family of breakers",
    label = "this key has type `{Self}`",
    note = "a key is a string, an integer, a `bool`, a `char`, an `IpAddr`/`SocketAddr`, a reference to one or a tuple of them, e.g. `key = self.host.as_str()`; for a type of your own, implement `failfast::Key`"
)]
pub trait Key: Hash {
    /// What the family stores: `String` for a `str`, the value itself for
    /// an integer.
    type Owned: Clone + Hash + Eq + Send + Sync + 'static;
    /// The owned key, made once per key, when its breaker is created.
    fn to_key(&self) -> Self::Owned;
    /// Whether `self` is the key `owned`.
    fn matches(&self, owned: &Self::Owned) -> bool;
    /// Writes the key as it appears in the breaker's name, `family[label]`.
    fn label(&self, out: &mut String);
}

impl Key for str {
    type Owned = String;
    fn to_key(&self) -> String {
        self.to_owned()
    }
    fn matches(&self, owned: &String) -> bool {
        self == owned
    }
    fn label(&self, out: &mut String) {
        out.push_str(self);
    }
}

/// Hashes as `str` does, so a `String` finds the key a `&str` made.
impl Key for String {
    type Owned = String;
    fn to_key(&self) -> String {
        self.clone()
    }
    fn matches(&self, owned: &String) -> bool {
        Key::matches(self.as_str(), owned)
    }
    fn label(&self, out: &mut String) {
        Key::label(self.as_str(), out);
    }
}

impl<T: Key + ?Sized> Key for &T {
    type Owned = T::Owned;
    fn to_key(&self) -> T::Owned {
        (**self).to_key()
    }
    fn matches(&self, owned: &T::Owned) -> bool {
        (**self).matches(owned)
    }
    fn label(&self, out: &mut String) {
        (**self).label(out);
    }
}

macro_rules! owned_as_itself {
    ($($t:ty),*) => {$(
        impl Key for $t {
            type Owned = $t;
            fn to_key(&self) -> $t {
                *self
            }
            fn matches(&self, owned: &$t) -> bool {
                self == owned
            }
            fn label(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}

owned_as_itself!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    bool,
    char,
    std::net::IpAddr,
    std::net::Ipv4Addr,
    std::net::Ipv6Addr,
    std::net::SocketAddr
);

macro_rules! tuples {
    ($(($($t:ident $i:tt),+)),*) => {$(
        impl<$($t: Key),+> Key for ($($t,)+) {
            type Owned = ($($t::Owned,)+);
            fn to_key(&self) -> Self::Owned {
                ($(self.$i.to_key(),)+)
            }
            fn matches(&self, owned: &Self::Owned) -> bool {
                $(self.$i.matches(&owned.$i))&&+
            }
            fn label(&self, out: &mut String) {
                let mut part = String::new();
                $(
                    if $i > 0 {
                        out.push_str(", ");
                    }
                    part.clear();
                    self.$i.label(&mut part);
                    escape_part(&part, out);
                )+
            }
        }
    )*};
}

tuples!((A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3));

/// Writes one part of a tuple key's label with `\` and `,` escaped by a
/// backslash, so that the parts joined by `", "` read back one way only:
/// `("a, b", "c")` is `a\, b, c` and `("a", "b, c")` is `a, b\, c`.
pub(super) fn escape_part(part: &str, out: &mut String) {
    for c in part.chars() {
        if matches!(c, '\\' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The label of the family's overflow member, `family[*]`. A key whose own
/// label is `*` is written `\*`.
pub(super) const OVERFLOW: &str = "*";

/// A borrowed key looked up in the map of owned keys.
pub(super) struct Lookup<'a, Q: ?Sized>(pub(super) &'a Q);

impl<Q: Key + ?Sized> Hash for Lookup<'_, Q> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<Q: Key + ?Sized> scc::Equivalent<Q::Owned> for Lookup<'_, Q> {
    fn equivalent(&self, owned: &Q::Owned) -> bool {
        self.0.matches(owned)
    }
}

/// The label of a member named `name` in the family `family`: what stands
/// between the brackets of `family[label]`.
pub(super) fn label_in<'n>(name: &'n str, family: &str) -> Option<&'n str> {
    name.strip_prefix(family)?
        .strip_prefix('[')?
        .strip_suffix(']')
}

/// `family[label]`.
pub(super) fn name_with(family: &str, label: &str) -> String {
    format!("{family}[{label}]")
}
