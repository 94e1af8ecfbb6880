//! Which errors count: `counts = SomeType` searched along the error's
//! `source()` chain, and the default rule of a return type without
//! `counts = …`, both chosen at compile time by autoref; and which `Ok`s
//! count, with `counts_ok = SomeClassifier`.

use std::error::Error as StdError;

/// Borrowed error under test by `counts = SomeType`.
pub struct Probe<'a, E: ?Sized>(pub &'a E);

fn chain_has<T: StdError + 'static>(mut error: Option<&(dyn StdError + 'static)>) -> bool {
    while let Some(e) = error {
        if e.is::<T>() {
            return true;
        }
        error = e.source();
    }
    false
}

/// Type-erased errors (`Box<dyn Error …>`, `anyhow::Error`): looks inside them.
/// Chosen first by autoref when it applies.
pub trait ViaErased {
    /// Whether `T` is the error or in its `source()` chain.
    fn chain_has<T: StdError + 'static>(&self) -> bool;
}

/// Concrete error types: the error itself and its `source()` chain.
pub trait ViaError {
    /// Whether `T` is the error or in its `source()` chain.
    fn chain_has<T: StdError + 'static>(&self) -> bool;
}

/// Anything else: chosen last, only to turn the mismatch into a readable
/// compile error (see [`SearchableError`]).
pub trait ViaNothing {
    /// The error type under test.
    type Inner: ?Sized;
    /// Never callable: `Inner` implements no error trait to search. The
    /// bound names `T`, so that when `T` itself is not a type (an imported
    /// variant, `counts = Down`) rustc reports that alone.
    fn chain_has<T: StdError + 'static>(&self) -> bool
    where
        Self::Inner: SearchableError<T>;
}

/// Error types that `counts = T` can search. Implemented by nothing: its
/// only use is the message below, shown when neither `ViaErased` nor `ViaError`
/// applied.
#[diagnostic::on_unimplemented(
    message = "`counts`/`ignores` with a type looks for that type in the error's `source()` chain, but `{Self}` is not an error type it can search",
    label = "`{Self}` is neither a `std::error::Error`, a boxed `dyn Error`, nor (with the `anyhow` feature) an `anyhow::Error`",
    note = "to match variants of `{Self}`, write a pattern: `counts = {Self}::Variant(..)`"
)]
pub trait SearchableError<T: ?Sized> {}

/// Errors that hold a `dyn Error` inside.
pub trait Erased {
    /// The error inside.
    fn as_dyn(&self) -> &(dyn StdError + 'static);
}

impl Erased for Box<dyn StdError + Send + Sync> {
    fn as_dyn(&self) -> &(dyn StdError + 'static) {
        &**self
    }
}

impl Erased for Box<dyn StdError + Send> {
    fn as_dyn(&self) -> &(dyn StdError + 'static) {
        &**self
    }
}

impl Erased for Box<dyn StdError> {
    fn as_dyn(&self) -> &(dyn StdError + 'static) {
        &**self
    }
}

#[cfg(feature = "anyhow")]
impl Erased for anyhow::Error {
    fn as_dyn(&self) -> &(dyn StdError + 'static) {
        self.as_ref()
    }
}

/// The error under test by `counts = SomeType` when the function's error type
/// is written as `anyhow::Error` (`anyhow::Result<T>`): searched along
/// anyhow's chain with the `anyhow` feature, one readable compile error
/// without it.
pub struct AnyhowProbe<'a, E: ?Sized>(pub &'a E);

/// `anyhow::Error`, once failfast's `anyhow` feature is on.
#[diagnostic::on_unimplemented(
    message = "`counts`/`ignores` with a type looks inside an `anyhow::Error` only with failfast's `anyhow` feature",
    label = "`{Self}` is searched with the `anyhow` feature",
    note = "enable it where failfast is a dependency: `failfast = {{ version = \"0.1\", features = [\"anyhow\"] }}`"
)]
pub trait AnyhowFeature {
    /// The error inside.
    fn as_dyn(&self) -> &(dyn StdError + 'static);
}

#[cfg(feature = "anyhow")]
impl AnyhowFeature for anyhow::Error {
    fn as_dyn(&self) -> &(dyn StdError + 'static) {
        self.as_ref()
    }
}

impl<E: ?Sized> AnyhowProbe<'_, E> {
    /// Whether `T` is the error or in its `source()` chain.
    pub fn chain_has<T: StdError + 'static>(&self) -> bool
    where
        E: AnyhowFeature,
    {
        chain_has::<T>(Some(self.0.as_dyn()))
    }
}

// Generated code calls `(&&&Probe(&error)).chain_has::<T>()`; method lookup
// tries `&&Probe`, then `&Probe`, then `Probe` as `Self`, so the most specific
// impl that applies wins ("autoref specialisation").

impl<E: Erased + ?Sized> ViaErased for &&Probe<'_, E> {
    fn chain_has<T: StdError + 'static>(&self) -> bool {
        chain_has::<T>(Some(self.0.as_dyn()))
    }
}

impl<E: StdError + 'static> ViaError for &Probe<'_, E> {
    fn chain_has<T: StdError + 'static>(&self) -> bool {
        chain_has::<T>(Some(self.0))
    }
}

impl<E: ?Sized> ViaNothing for Probe<'_, E> {
    type Inner = E;
    fn chain_has<T: StdError + 'static>(&self) -> bool
    where
        E: SearchableError<T>,
    {
        false
    }
}

// Without `counts = …`, which `Err`s count is the rule of the function's
// return type ([`CountsRule`]) if it has one, and every `Err` otherwise.
// Generated code calls `(&&DefaultCounts(&error, returned(&result)))
// .counts()`, with `result` the body's `Ret`: method lookup tries
// `&DefaultCounts` as `Self` first ([`ViaRule`], for a type with a rule),
// then `DefaultCounts` ([`ViaEvery`]), so the choice is made at compile time
// and an error type without a rule costs a constant `true`, as an `Err`
// counted without a check did. The choice is made on `Ret`, which the
// signature fixes, not on the error's type, which inference may not have
// settled yet when the method is looked up (a `Ret` that is not a `Result`
// has no rule, and adds no error to the one `ResultParts` reports).

/// The type of the body's result, `R`, for [`DefaultCounts`].
#[inline(always)]
pub fn returned<R>(_result: &R) -> std::marker::PhantomData<R> {
    std::marker::PhantomData
}

/// The error of a call whose breaker has no `counts = …`, and the
/// function's return type `R`.
pub struct DefaultCounts<'a, R, E: ?Sized>(pub &'a E, pub std::marker::PhantomData<R>);

/// Return types whose errors have a rule of their own for which `Err`s
/// count when `counts` is not given.
pub trait CountsRule {
    /// The error type the rule judges.
    type Error: ?Sized;
    /// Whether `error` is evidence that the dependency is sick.
    fn counts(error: &Self::Error) -> bool;
}

/// The rule of [`grpc_failure`](crate::integrations::classify::grpc_failure): the codes
/// that say the server is sick or overloaded, and tonic's own time limit.
#[cfg(feature = "tonic")]
impl<T> CountsRule for Result<T, tonic::Status> {
    type Error = tonic::Status;
    #[inline]
    fn counts(error: &tonic::Status) -> bool {
        crate::integrations::classify::grpc_failure(error)
    }
}

/// A return type with a rule of its own: the rule decides.
pub trait ViaRule {
    /// Whether the error counts.
    fn counts(&self) -> bool;
}

/// Every other return type: every `Err` counts.
pub trait ViaEvery {
    /// `true`.
    fn counts(&self) -> bool;
}

impl<R: CountsRule> ViaRule for &DefaultCounts<'_, R, R::Error> {
    #[inline(always)]
    fn counts(&self) -> bool {
        R::counts(self.0)
    }
}

impl<R, E: ?Sized> ViaEvery for DefaultCounts<'_, R, E> {
    #[inline(always)]
    fn counts(&self) -> bool {
        true
    }
}

// `counts_ok = Classifier`: a type given to `counts_ok` is a classifier of
// the whole `Result` (`failfast::classify::HttpClassifier`), as the tower
// layer and the reqwest middleware take one; the `Ok`'s outcome is the one
// it gives (a failure, neutral, or a success).

/// Classifiers `counts_ok = Type` can name: a [`Classify`] of the
/// function's `Result` with a `Default` value (feature `http`).
///
/// [`Classify`]: crate::integrations::classify::Classify
#[diagnostic::on_unimplemented(
    message = "`counts_ok = {Self}` names a type, which `counts_ok` takes as a classifier of the function's `Result`, and `{Self}` is not one for this `Result`",
    label = "not a `failfast::classify::Classify` of this function's `Result` (with `Default`)",
    note = "write a pattern over the `Ok` value (`counts_ok = Reply::Unavailable {{ .. }}`), a predicate (`counts_ok = |r: &Response| r.status().is_server_error()`), or a classifier such as `failfast::classify::HttpClassifier` (feature `http`)"
)]
pub trait OkClassifier<T, E> {
    /// The outcome of a call that returned `result`.
    fn ok_outcome(result: &Result<T, E>) -> crate::Outcome;
}

#[cfg(feature = "http")]
impl<C, T, E> OkClassifier<T, E> for C
where
    C: crate::integrations::classify::Classify<T, E> + Default,
{
    #[inline]
    fn ok_outcome(result: &Result<T, E>) -> crate::Outcome {
        C::default().classify(result)
    }
}

/// `counts_ok = C`: the outcome classifier `C` gives `result`, a call's
/// `Result` (read only when it is `Ok`).
#[inline]
pub fn ok_outcome<C: OkClassifier<T, E>, T, E>(result: &Result<T, E>) -> crate::Outcome {
    C::ok_outcome(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `counts_ok = HttpClassifier`: the outcome of an `Ok` answer is the
    /// one the classifier gives its status.
    #[cfg(feature = "http")]
    #[test]
    fn a_classifier_judges_the_ok_answer() {
        use crate::Outcome;
        use crate::integrations::classify::HttpClassifier;
        let answer = |status: u16| {
            Ok::<_, std::io::Error>(http::Response::builder().status(status).body(()).unwrap())
        };
        let outcome = |status| ok_outcome::<HttpClassifier, _, _>(&answer(status));
        assert_eq!(outcome(503), Outcome::Failure);
        assert_eq!(outcome(429), Outcome::Neutral);
        assert_eq!(outcome(200), Outcome::Success);
    }

    /// Without `counts`, a return type with no rule counts every `Err`;
    /// `Result<T, tonic::Status>` counts what `grpc_failure` counts.
    #[test]
    // The borrows are the choice (`ViaRule` before `ViaEvery`), as in
    // generated code.
    #[allow(clippy::needless_borrow)]
    fn the_default_rule_is_chosen_by_the_return_type() {
        use std::marker::PhantomData;
        let error = std::io::Error::other("down");
        assert!((&&DefaultCounts::<std::io::Result<u32>, _>(&error, PhantomData)).counts());
        assert!((&&DefaultCounts::<Option<u32>, _>(&error, PhantomData)).counts());
        #[cfg(feature = "tonic")]
        {
            type Answer = Result<u32, tonic::Status>;
            let status = tonic::Status::invalid_argument("bad sku");
            assert!(!(&&DefaultCounts::<Answer, _>(&status, PhantomData)).counts());
            let status = tonic::Status::unavailable("down");
            assert!((&&DefaultCounts::<Answer, _>(&status, PhantomData)).counts());
        }
    }
}
