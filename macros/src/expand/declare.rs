//! What makes a breaker known before its first call: its default name, and
//! its entry in the runtime's link-time list of declared breakers.
//!
//! ```text
//! // default name, a free function (no receiver, no `Self` in the signature):
//! concat!(module_path!(), "::", "fetch")
//! // default name, a method or an associated function of an impl:
//! concat!(module_path!(), "::", "fetch", "@", line!(), ":", column!())
//!
//! #[CRATE::__private::distributed_slice(CRATE::__private::DECLARED)]
//! #[linkme(crate = CRATE::__private::linkme)]
//! static __FAILFAST_DECLARED: Declared = Declared {
//!     breaker: &__FAILFAST_BREAKER,
//!     at: concat!(file!(), ":", line!()),
//! };
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{FnArg, ItemFn};

/// The registry name of a breaker without `name = "…"`.
///
/// An attribute sees only the function, not the `impl` around it, so a
/// method cannot be named after its type: `A::fetch` and `B::fetch` in one
/// module would both be `module::fetch`. A function that is certainly in an
/// `impl` or a trait (it has a receiver or mentions `Self`) has its line
/// and column added, which tells them apart; a name chosen with `name = "…"`
/// reads better and does not move when the code does.
pub(crate) fn default_name(func: &ItemFn) -> TokenStream {
    let ident = func.sig.ident.unraw().to_string();
    if !in_impl(func) {
        return quote!(::core::concat!(::core::module_path!(), "::", #ident));
    }
    // `line!()` and `column!()` report where their tokens are: the
    // function's name.
    let span = func.sig.ident.span();
    let line = quote_spanned!(span=> ::core::line!());
    let column = quote_spanned!(span=> ::core::column!());
    quote!(::core::concat!(::core::module_path!(), "::", #ident, "@", #line, ":", #column))
}

/// Whether the signature shows the function is a method or an associated
/// function: a receiver, or `Self` anywhere in it.
fn in_impl(func: &ItemFn) -> bool {
    fn mentions_self(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            TokenTree::Ident(ident) => ident == "Self",
            TokenTree::Group(group) => mentions_self(group.stream()),
            _ => false,
        })
    }
    let sig = &func.sig;
    sig.inputs
        .iter()
        .any(|input| matches!(input, FnArg::Receiver(_)))
        || mentions_self(sig.to_token_stream())
}

/// The entry of `breaker` (a `static` `Breaker`, declared at `span`) in the
/// program's list of declared breakers, so the registry lists it from the
/// start.
pub(crate) fn registration(
    breaker: &TokenStream,
    span: Span,
    private: &TokenStream,
    allow: &TokenStream,
) -> TokenStream {
    let fields = quote!(breaker: &#breaker, module: ::core::module_path!(),);
    let entry = quote!(__FAILFAST_DECLARED: #private::Declared = #private::Declared);
    linked(&quote!(DECLARED), &entry, &fields, span, private, allow)
}

/// The entry of `breaker` and the bulkhead in front of it (`max_concurrent
/// = N`) in the program's list of bounded breakers: the registry attaches
/// the bulkhead to the breaker when it first lists the declared breakers,
/// and the breaker tells it the limit in force from then on.
pub(crate) fn bounded(
    breaker: &TokenStream,
    bulkhead: &TokenStream,
    span: Span,
    private: &TokenStream,
    allow: &TokenStream,
) -> TokenStream {
    let fields = quote!(breaker: &#breaker, bulkhead: &#bulkhead,);
    let entry = quote!(__FAILFAST_BOUNDED: #private::Bounded = #private::Bounded);
    linked(&quote!(BOUNDED), &entry, &fields, span, private, allow)
}

/// The entry of the keyed family `slot` (a `static` `KeyedSlot`, declared at
/// `span`) in the program's list of declared families, so the registry
/// lists it before its first call.
pub(crate) fn family_registration(
    slot: &TokenStream,
    span: Span,
    private: &TokenStream,
    allow: &TokenStream,
) -> TokenStream {
    let fields = quote!(slot: &#slot,);
    let entry =
        quote!(__FAILFAST_DECLARED_FAMILY: #private::DeclaredFamily = #private::DeclaredFamily);
    linked(
        &quote!(DECLARED_FAMILIES),
        &entry,
        &fields,
        span,
        private,
        allow,
    )
}

/// A `static` `entry { fields, at }` in the runtime's link-time list
/// `slice`, `at` being where `span` is.
fn linked(
    slice: &TokenStream,
    entry: &TokenStream,
    fields: &TokenStream,
    span: Span,
    private: &TokenStream,
    allow: &TokenStream,
) -> TokenStream {
    let line = quote_spanned!(span=> ::core::line!());
    let file = quote_spanned!(span=> ::core::file!());
    quote! {
        #allow
        #[#private::distributed_slice(#private::#slice)]
        #[linkme(crate = #private::linkme)]
        static #entry {
            #fields
            at: ::core::concat!(#file, ":", #line),
        };
    }
}
