//! `counts`, `ignores` and `retry_on` in generated code: the `bool`
//! expression that says whether an error matches (see `attr::matcher` for
//! how each form is recognised); `counts_ok`, the outcome of an `Ok`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::{Arg, Matcher};
use crate::tokens::respan;

impl Matcher {
    /// The local `__failfast_check` helper, if one of `matchers` is a
    /// predicate: calling a closure through it gives the closure's parameter
    /// its type before the closure is checked.
    pub fn helper<'m>(
        matchers: impl IntoIterator<Item = &'m Option<Arg<Matcher>>>,
        allow: &TokenStream,
    ) -> Option<TokenStream> {
        let uses_helper = matchers
            .into_iter()
            .flatten()
            .any(|m| m.value.is_predicate());
        uses_helper.then(|| {
            quote! {
                #allow
                fn __failfast_check<E: ?::core::marker::Sized, F: ::core::ops::FnOnce(&E) -> bool>(
                    error: &E,
                    predicate: F,
                ) -> bool {
                    predicate(error)
                }
            }
        })
    }

    /// A `bool` expression: does the error behind `error` (a `&E`) match?
    /// `anyhow` says the function's error type is written as `anyhow::Error`,
    /// which a type is looked for in only with the runtime's `anyhow` feature.
    pub fn check(&self, krate: &TokenStream, error: &TokenStream, anyhow: bool) -> TokenStream {
        match self {
            Matcher::Predicate(predicate) => {
                let span = predicate.span();
                quote_spanned!(span=> __failfast_check(#error, #predicate))
            }
            Matcher::Type(ty) if anyhow => respan(
                quote!(#krate::__private::AnyhowProbe(#error).chain_has::<#ty>()),
                ty.span(),
            ),
            Matcher::Type(ty) => {
                let span = ty.span();
                // The whole call carries the type's span, so a type that can't
                // be searched is reported at the type.
                let probe = respan(
                    quote!((&&&#krate::__private::Probe(#error)).chain_has::<#ty>()),
                    span,
                );
                quote! {{
                    use #krate::__private::{ViaErased as _, ViaError as _, ViaNothing as _};
                    #probe
                }}
            }
            Matcher::Pattern(pattern) => quote!(::core::matches!(#error, #pattern)),
        }
    }
}

/// `counts_ok` in generated code: what the call's `Ok` is.
pub struct OkRule {
    /// For a classifier, the function that judges the body's whole
    /// `Result` (`__failfast_result`, taken apart first), into
    /// `__failfast_ok_outcome`; spanned at the type, where a type that is
    /// no classifier is reported.
    pub judge: Option<TokenStream>,
    /// An `Outcome` expression: the outcome of `Ok(__failfast_value)`.
    pub outcome: TokenStream,
}

impl OkRule {
    /// A pattern or a predicate matches the `Ok` value (a `&T`): a failure
    /// when it does, a success when not. A type is a classifier of the
    /// whole `Result` (`Classify`), whose outcome is taken as it is, a
    /// neutral one included.
    pub fn of(counts_ok: &Matcher, krate: &TokenStream) -> OkRule {
        let private = quote!(#krate::__private);
        match counts_ok {
            Matcher::Type(ty) => OkRule {
                judge: Some(respan(quote!(#private::ok_outcome::<#ty, _, _>), ty.span())),
                outcome: quote!(__failfast_ok_outcome),
            },
            matcher => {
                let check = matcher.check(krate, &quote!(&__failfast_value), false);
                OkRule {
                    judge: None,
                    outcome: quote! {
                        if #check {
                            #private::Outcome::Failure
                        } else {
                            #private::Outcome::Success
                        }
                    },
                }
            }
        }
    }
}

/// Without `counts`: a `bool` expression, the rule the runtime has for the
/// function's return type (`Result<T, tonic::Status>`, with the `tonic`
/// feature), else `true`, chosen by the compiler from the type (see
/// `DefaultCounts` in the runtime's `__private`), not from how it is spelled.
/// `returned` is a `PhantomData` of the return type.
pub fn default_check(
    krate: &TokenStream,
    error: &TokenStream,
    returned: &TokenStream,
) -> TokenStream {
    quote! {{
        use #krate::__private::{ViaEvery as _, ViaRule as _};
        (&&#krate::__private::DefaultCounts(#error, #returned)).counts()
    }}
}
