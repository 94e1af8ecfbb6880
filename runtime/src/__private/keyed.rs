//! A call through a member of a keyed family (`key = …`), and the `keyed`
//! feature's check at the key.

#[cfg(feature = "keyed")]
use {
    super::call::WaitTimerFeature,
    crate::core::breaker::Permit,
    crate::core::error::Rejected,
    crate::policy::bulkhead::{Bulkhead, BulkheadPermit},
    crate::policy::keyed::declared::Slot as KeyedSlot,
    crate::policy::keyed::{Key, Member},
};

/// Admits (or refuses) a call through one key's breaker: the family
/// registered itself when it was built.
#[cfg(feature = "keyed")]
#[inline(always)]
pub fn acquire_member(member: &Member) -> Result<Permit<'_>, Rejected> {
    member.breaker().acquire()
}

/// The breaker of `key` in `family`: a function's own family (`key = …`)
/// or one declared with `failfast::breaker!(… max_keys = N …)`.
#[cfg(feature = "keyed")]
#[inline]
pub fn member<S: SharedFamily, Q: Key + ?Sized>(
    family: &'static S,
    key: &Q,
) -> crate::policy::keyed::Lease<'static> {
    #[cfg(feature = "testing")]
    if let Some(own) = crate::core::scope::stand_in(family.slot()) {
        return own.family::<Q::Owned>().lease(key);
    }
    family.slot().family::<Q::Owned>().lease(key)
}

/// Takes a place in `member`'s own bulkhead (`max_concurrent` with `key`).
#[cfg(feature = "keyed")]
#[inline]
pub fn enter_member(member: &Member) -> Option<BulkheadPermit<'_>> {
    member.bulkhead().and_then(Bulkhead::try_enter)
}

/// Takes a place in `member`'s own bulkhead, waiting on this thread up to
/// its `max_wait`, for the call `permit` admitted (see [`enter_waiting`](super::call::enter_waiting)).
#[cfg(feature = "keyed")]
#[inline]
pub fn enter_member_waiting<'m>(
    member: &'m Member,
    permit: &mut Permit<'_>,
) -> Option<BulkheadPermit<'m>> {
    member.bulkhead()?.enter_waiting_with(Some(permit))
}

/// Takes a place in `member`'s own bulkhead, waiting as a future up to its
/// `max_wait`, for the call `permit` admitted (see [`enter_waiting`](super::call::enter_waiting)).
#[cfg(feature = "keyed")]
pub async fn enter_member_waiting_async<'m, T: WaitTimerFeature>(
    _timer: T,
    member: &'m Member,
    permit: &mut Permit<'_>,
) -> Option<BulkheadPermit<'m>> {
    let bulkhead = member.bulkhead()?;
    #[cfg(feature = "tokio")]
    return bulkhead.enter_waiting_async_with(Some(permit)).await;
    #[cfg(not(feature = "tokio"))]
    {
        let _ = permit;
        bulkhead.try_enter()
    }
}

/// What `breaker = NAME` can name with `key`: a family declared with
/// `failfast::breaker!(… max_keys = N …)`.
#[cfg(feature = "keyed")]
#[diagnostic::on_unimplemented(
    message = "`breaker = …` with `key` names a keyed family declared with `failfast::breaker!(… max_keys = N …)`, but this is a `{Self}`",
    label = "not a keyed family of breakers",
    note = "declare the family with `max_keys`: `failfast::breaker!(static NAME = max_keys = 256, threshold = 5);`, or drop `key` to use a single shared breaker"
)]
pub trait SharedFamily: Sync {
    /// The family's slot.
    fn slot(&'static self) -> &'static KeyedSlot;
}

#[cfg(feature = "keyed")]
impl SharedFamily for KeyedSlot {
    #[inline]
    fn slot(&'static self) -> &'static KeyedSlot {
        self
    }
}

/// `KeyedSlot`, once failfast's `keyed` feature is on.
#[diagnostic::on_unimplemented(
    message = "`key` needs failfast's `keyed` feature: a family of breakers is kept in a concurrent map",
    label = "one breaker per value of this key",
    note = "enable it where failfast is a dependency: `failfast = {{ version = \"0.1\", features = [\"keyed\"] }}` (it is on by default)"
)]
pub trait KeyedFeature {}

/// The marker of the `keyed` feature.
pub struct Keyed;

#[cfg(feature = "keyed")]
impl KeyedFeature for Keyed {}

/// Checks that the `keyed` feature is on, at the `key` the user wrote.
#[inline]
pub fn keyed<T: KeyedFeature>(_marker: T) {}
