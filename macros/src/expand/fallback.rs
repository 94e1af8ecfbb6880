//! The fallback: its one call, and the checks, in generated code, that the
//! body does not consume what the fallback is given.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::Fallback;
use crate::check::shape::{Body, owned_arguments};
use crate::tokens::{allow, located_at};

/// For each argument that the body moves (by its syntax, see `moves`) and
/// that the fallback is given or its closure uses, a check that the
/// argument's type is `Copy`, failing with a message that names the argument
/// and the fallback, at the fallback. Nothing when no argument is both.
pub(crate) fn kept_for_fallback(
    sig: &syn::Signature,
    body: &Body,
    fallback: &Fallback,
) -> TokenStream {
    let block = match body {
        Body::Sync(block) | Body::Async(block) => *block,
        // `#[async_trait]` arguments are refused above when they are moved.
        Body::AsyncTrait { .. } => return TokenStream::new(),
    };
    let owned = owned_arguments(sig);
    let (span, used, takes) = match fallback {
        Fallback::Path(path) => {
            let written: String = path.to_token_stream().to_string().replace(' ', "");
            (
                path.span(),
                owned,
                format!("`fallback = {written}` takes it"),
            )
        }
        Fallback::Closure(closure) => {
            let used = crate::moves::mentioned(&closure.body, &owned);
            (
                closure.span(),
                used,
                "the `fallback` closure uses it".into(),
            )
        }
        // The block runs before the body: what it keeps is not moved yet.
        Fallback::Prepared(_) => return TokenStream::new(),
    };
    let allow = allow();
    crate::moves::consumed(block, &used)
        .into_iter()
        .map(|argument| {
            let message = format!("`{argument}` is moved by the body but {takes}");
            let label = format!("`{argument}` is gone by the time the fallback runs");
            let note = format!(
                "give the fallback the error alone, `fallback = |error| …`; or keep what it \
                 needs before the body runs, `fallback = {{{{ let key = {argument}.key.clone(); \
                 move |error| … }}}}`; or let the body borrow `{argument}`"
            );
            // The pointer is taken first and passed by a generated name
            // located at the fallback: the error points there, in the
            // macro's context (where rustc makes no `&` suggestion).
            let pointer = located_at(quote!(__failfast_kept), span);
            let check = located_at(
                quote!(__failfast_kept_for_fallback(#pointer);),
                span,
            );
            let check = quote!(let #pointer = &raw const #argument; #check);
            quote! {
                #allow
                {
                    #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
                    trait __FailfastKeptForFallback {}
                    impl<T: ::core::marker::Copy> __FailfastKeptForFallback for T {}
                    fn __failfast_kept_for_fallback<T: __FailfastKeptForFallback>(_: *const T) {}
                    #check
                }
            }
        })
        .collect()
}

/// The one call of the fallback, given `__failfast_fallback_error` (the
/// `failfast::Error<E>`), and what it needs before it.
pub(crate) struct FallbackCall {
    /// The local `__failfast_fallback` a closure is called through.
    pub(crate) helper: Option<TokenStream>,
    /// `fallback = { .. }`: the block, run before the call is admitted.
    pub(crate) prepare: Option<TokenStream>,
    /// The call, awaited for an async function.
    pub(crate) call: TokenStream,
}

/// The call of `fallback`, spanned at it, so that a fallback that does not
/// fit is one error there. A path is given `arguments` (see
/// `Shape::fallback_args`) and the error; a closure, the error alone.
pub(crate) fn fallback_call(
    fallback: &Fallback,
    arguments: &[TokenStream],
    is_async: bool,
    allow: &TokenStream,
    private: &TokenStream,
) -> FallbackCall {
    // The local keeps its call-site resolution (see `rejected` in
    // `expand`), shown at the fallback: an error type that does not fit is
    // reported there.
    let error = |span: Span| located_at(quote!(__failfast_fallback_error), span);
    // A closure is called through a helper that takes the error first, so
    // the closure's parameter type is known when it is checked.
    let helper = if is_async {
        // What the closure returns must be a future: a bound of the
        // runtime's, whose message says so at the closure (the returned
        // future repeats it at the same place, and rustc shows it once).
        quote! {
            #allow
            fn __failfast_fallback<A, F: #private::FallbackFuture>(
                error: A,
                fallback: impl ::core::ops::FnOnce(A) -> F,
            ) -> impl ::core::future::Future<Output = F::Output> {
                let future = fallback(error);
                async move { future.await }
            }
        }
    } else {
        quote! {
            #allow
            fn __failfast_fallback<A, R>(
                error: A,
                fallback: impl ::core::ops::FnOnce(A) -> R,
            ) -> R {
                fallback(error)
            }
        }
    };
    let (call, span, helper, prepare) = match fallback {
        Fallback::Path(path) => {
            let span = path.span();
            let error = error(span);
            // The arguments keep their names' hygiene but sit at the
            // fallback, so that "used here after move" points at it.
            let arguments = arguments.iter().map(|a| located_at(a.clone(), span));
            let call = quote_spanned!(span=> #path(#(#arguments,)* #error));
            (call, span, None, None)
        }
        Fallback::Closure(closure) => {
            let span = closure.span();
            let error = error(span);
            let call = quote_spanned!(span=> __failfast_fallback(#error, #closure));
            (call, span, Some(helper), None)
        }
        // The block runs before the call is admitted, so what its closure
        // captures is taken before the body consumes it.
        Fallback::Prepared(block) => {
            let span = block.span();
            let prepared = quote!(__failfast_fallback_fn);
            let prepare = quote! {
                #allow
                let #prepared = #block;
            };
            let error = error(span);
            let call = quote_spanned!(span=> __failfast_fallback(#error, #prepared));
            (call, span, Some(helper), Some(prepare))
        }
    };
    let await_ = is_async.then(|| quote_spanned!(span=> .await));
    FallbackCall {
        helper,
        prepare,
        call: quote!(#call #await_),
    }
}
