//! Rewrites a function annotated with `#[retry]`. Signature, attributes and
//! generics are kept; the body becomes a loop of attempts:
//!
//! ```text
//! fn f(args..) -> Ret {
//!     static __FAILFAST_RETRY: Retry = Retry::new(3).backoff(..).jitter(..).budget(..);
//!     let mut __failfast_attempts = __FAILFAST_RETRY.begin();   // counts the call
//!     loop {
//!         let __failfast_result: Ret = run(|| -> Ret { body });        // sync
//!         let __failfast_result: Ret = async { <fake return>; body }.await; // async
//!         // (with a breaker below, `{ body }` is the breaker's code around it)
//!         match split::<Ret>(__failfast_result) {
//!             Ok(value) => {
//!                 // only with `counts_ok` on the breaker below: an `Ok` it
//!                 // counted reported a failure, and is retried as one
//!                 let verdict = take_verdict();
//!                 if let Some(delay) = next_delay(&mut __failfast_attempts, verdict) { .. continue; }
//!                 return join::<Ret>(Ok(value));
//!             }
//!             Err(error) => {
//!                 let verdict = take_verdict();          // with a breaker below
//!                 if retry_on(&error) {                  // no `if` without `retry_on`
//!                     // (without a breaker: `__failfast_attempts.next_delay()`)
//!                     if let Some(delay) = next_delay(&mut __failfast_attempts, verdict) {
//!                         sleep(delay);                  // sync: the thread
//!                         sleep_async(Timer, delay).await; // async: tokio's timer
//!                         continue;
//!                     }
//!                 }
//!                 return join::<Ret>(Err(error));
//!             }
//!         }
//!     }
//! }
//! ```
//!
//! With a `fallback` on the breaker below, the attempt hands over what the
//! fallback would be given, and the fallback is called once, after the loop:
//!
//! ```text
//!     fn __failfast_fallback(..);                    // a closure fallback's helper
//!     <kept_for_fallback checks>; let __failfast_fallback_fn = { .. }; // `fallback = { .. }`
//!     static __FAILFAST_RETRY: Retry = ..;
//!     let mut __failfast_attempts = __FAILFAST_RETRY.begin();
//!     let __failfast_fallback_error = loop {
//!         // the breaker's code: `Ok(ret)` for an `Ok` or a neutral error,
//!         // `Err(failfast::Error<E>)` for a rejection, a counted failure, a timeout
//!         // (and `Err(failfast::Error<E, T>)` for an `Ok` `counts_ok` counted)
//!         let __failfast_attempt = run(|| -> Result<Ret, Error<_>> { .. });  // sync
//!         let __failfast_attempt = async { .. }.await;                       // async
//!         let __failfast_fallback_error = match __failfast_attempt {
//!             Ok(result) => return result,
//!             Err(error) => error,
//!         };
//!         let verdict = take_verdict();
//!         if match &error { Error::Failed(e) => retry_on(e), _ => true } {
//!             if let Some(delay) = next_delay(&mut __failfast_attempts, verdict) {
//!                 sleep(delay); continue;            // or `sleep_async(..).await`
//!             }
//!         }
//!         break __failfast_fallback_error;
//!     };
//!     return fallback(args.., __failfast_fallback_error) [.await];
//! ```
//!
//! # The breaker below
//!
//! Attributes expand from the top, so `#[retry]` sees the
//! `#[circuit_breaker(..)]` written below it still on the function. It takes
//! that attribute off and expands the breaker itself, around the body of one
//! attempt, with `check::Breaker::report_to_retry` set: each attempt is one breaker
//! call, and the breaker's code leaves its verdict (rejected, counted
//! failure, neutral) in a thread-local of `__private` right before it
//! returns. The loop takes it right after the attempt returns, in the same
//! poll for an async attempt, and retries only a counted failure: never a
//! rejection, a neutral error, nor an error the breaker's code did not report
//! (so a refusal added to the breaker later cannot be retried by mistake).
//! After a counted failure it asks the breaker whether it just opened (and
//! stops when no trial would be admitted before the next attempt).
//! A breaker's `fallback` answers once for the whole call: the breaker's
//! code (in its hand-over form) gives the loop the `failfast::Error<E>` it
//! would have given the fallback, the loop decides on it as on the error it
//! stands for, and the fallback gets the last one. Its arguments are the
//! function's, still there after the loop since attempts borrow them; the
//! checks that the body does not consume what the fallback takes are the
//! breaker's, at the top of the function. `#[circuit_breaker]` above
//! `#[retry]` is refused by the breaker, which would otherwise wrap the
//! whole loop.
//!
//! # Arguments on each attempt
//!
//! The body runs once per attempt, so it borrows the function's arguments
//! (closures and `async` blocks without `move`). A body that consumes a
//! by-value argument is the compiler's "value moved here, in previous
//! iteration of loop": clone it where it is consumed. `#[async_trait]` moves
//! every argument into its future; there each attempt gets a clone
//! (`__private::again`, a readable error when the type is not `Clone`), and
//! `&mut` arguments and `&mut self` are reborrowed.

use proc_macro2::{Delimiter, Group, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Block, Expr, ExprAsync, FnArg, ItemFn, Meta, Pat, Stmt, Type, Visibility};

use super::fallback::{FallbackCall, fallback_call, kept_for_fallback};
use super::{async_block, handed_error, result_parts, with_body};
use crate::attr::retry::RetryArgs;
use crate::attr::{Args, Errors, Matcher};
use crate::check::shape::{Body, Shape, is_anyhow, is_failfast_attribute, not_a_function};
use crate::check::{self, Breaker as Checked};
use crate::tokens::{allow, duration, respan, runtime};

pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = RetryArgs::parse(args, &mut errors);
    let Ok(mut func) = syn::parse2::<ItemFn>(item.clone()) else {
        errors.push(not_a_function(&item, "retry"));
        let error = errors.into_result().map(|e| e.to_compile_error());
        return quote!(#error #item);
    };
    if let Some(again) = func
        .attrs
        .iter()
        .find(|attr| is_failfast_attribute(attr, "retry"))
    {
        errors.push(syn::Error::new_spanned(
            again,
            "`#[retry]` is given twice: each would retry the other's attempts, multiplying \
             them; keep one",
        ));
    }
    let breaker = take_breaker(&mut func, &mut errors);
    let no_breaker = Args::default();
    let shape = Shape::of(
        &func,
        breaker.as_ref().map_or(&no_breaker, |b| &b.checked.args),
        "retry",
        &mut errors,
    );
    match (errors.into_result(), shape) {
        (None, Some(shape)) => expand(&func, &args, breaker.as_ref(), &shape),
        // The function as written, without the breaker whose mistakes were
        // just reported (it would report them a second time).
        (error, _) => {
            let error = error.map(|e| e.to_compile_error());
            let mut func = func.clone();
            if let Some(uses) = breaker.as_ref().map(Breaker::uses_import) {
                func.block.stmts.insert(0, syn::parse_quote!(#uses));
            }
            quote!(#error #func)
        }
    }
}

/// The `#[circuit_breaker(..)]` below, expanded around each attempt.
struct Breaker {
    checked: Checked,
    /// The attribute's path as written: the user imported it, and expects
    /// the import to count as used.
    path: syn::Path,
}

impl Breaker {
    /// The user imported the attribute taken off: the import is used.
    fn uses_import(&self) -> TokenStream {
        let path = &self.path;
        quote! {
            #[allow(unused_imports)]
            use #path as _;
        }
    }
}

/// Takes the `#[circuit_breaker(..)]` below off the function and parses it.
fn take_breaker(func: &mut ItemFn, errors: &mut Errors) -> Option<Breaker> {
    let index = func
        .attrs
        .iter()
        .position(|attr| is_failfast_attribute(attr, "circuit_breaker"))?;
    let attr = func.attrs.remove(index);
    let path = attr.path().clone();
    let tokens = match attr.meta {
        Meta::List(list) => list.tokens,
        Meta::Path(_) => TokenStream::new(),
        Meta::NameValue(value) => {
            errors.push(syn::Error::new_spanned(
                value,
                "expected `#[circuit_breaker(key = value, ...)]`",
            ));
            TokenStream::new()
        }
    };
    let mut checked = check::breaker(Args::parse(tokens, errors), errors);
    checked.report_to_retry = true;
    Some(Breaker { checked, path })
}

fn expand(
    func: &ItemFn,
    args: &RetryArgs,
    breaker: Option<&Breaker>,
    shape: &Shape,
) -> TokenStream {
    let sig = &func.sig;
    let krate = runtime(args.krate.as_ref().map(|k| &k.value));
    let private = quote!(#krate::__private);
    let allow = allow();
    let output = &shape.output;
    let (split, join) = result_parts(&private, output);

    // `#[async_trait]` moved the arguments into its future: each attempt
    // gets its own.
    let async_trait_block = match &shape.body {
        Body::AsyncTrait { future, .. } => Some(reusable(func, future, &private)),
        _ => None,
    };
    let (block, is_async) = match (&shape.body, &async_trait_block) {
        (Body::Sync(block), _) => (*block, false),
        (Body::Async(block), _) => (*block, true),
        (Body::AsyncTrait { .. }, Some(block)) => (block, true),
        (Body::AsyncTrait { .. }, None) => unreachable!("made above"),
    };
    // With a fallback, the breaker's code hands the loop what the fallback
    // would be given as `Err(failfast::Error<E>)`, and everything else as
    // `Ok(ret)`.
    let fallback = breaker.and_then(|breaker| breaker.checked.args.fallback.as_ref());
    let attempt = match breaker {
        Some(breaker) => {
            let guarded = guarded(func, shape, block, is_async, &breaker.checked);
            if is_async {
                quote!(async #guarded.await)
            } else if fallback.is_some() {
                let error = handed_error(&private, &breaker.checked.args);
                let handed = quote!(::core::result::Result<#output, #error>);
                quote!(#private::run(|| -> #handed #guarded))
            } else {
                quote!(#private::run(|| -> #output #guarded))
            }
        }
        None if is_async => {
            let future = async_block(None, output, block, &allow);
            quote!(#future.await)
        }
        None => quote!(#private::run(|| -> #output #block)),
    };
    // With a breaker below, what it reported decides (taken on every `Err`,
    // so no verdict outlives its attempt); without one, every error
    // `retry_on` matches is retried.
    let (take_verdict, next_delay) = if breaker.is_some() {
        (
            Some(quote!(let __failfast_verdict = #private::take_verdict();)),
            quote!(#private::next_delay(&mut __failfast_attempts, __failfast_verdict)),
        )
    } else {
        (None, quote!(__failfast_attempts.next_delay()))
    };

    // With a fallback, `retry_on` is given the error of a counted failure
    // (the `&E` of `Error::Failed`); a timeout, which has no `E` there, is
    // retried as the counted failure it is.
    let error = match fallback {
        Some(_) => quote!(__failfast_error),
        None => quote!(&__failfast_error),
    };
    let retry_on = args
        .retry_on
        .as_ref()
        .map(|m| m.value.check(&krate, &error, is_anyhow(output)))
        .map(|retry_on| match fallback {
            Some(_) => quote! {
                match &__failfast_fallback_error {
                    #private::Error::Failed(__failfast_error) => #retry_on,
                    _ => true,
                }
            },
            None => retry_on,
        });
    let helper = Matcher::helper([&args.retry_on], &allow);
    let attempts = args
        .attempts
        .as_ref()
        .map_or(failfast_rules::DEFAULT_ATTEMPTS, |a| a.value);
    let sleep = (attempts > 1).then(|| {
        if is_async {
            // Without the `tokio` feature, the runtime's message points at
            // the `async fn`.
            let at = sig.asyncness.map_or_else(|| sig.ident.span(), |a| a.span());
            // Everything but the local is there, so that the one error is
            // reported once.
            let sleep_async = respan(quote!(#private::sleep_async), at);
            let timer = respan(quote!(#private::Timer), at);
            let mut arguments =
                Group::new(Delimiter::Parenthesis, quote!(#timer, __failfast_delay));
            arguments.set_span(at);
            let await_ = respan(quote!(.await), at);
            quote!(#sleep_async #arguments #await_;)
        } else {
            quote!(#private::sleep(__failfast_delay);)
        }
    });
    let next = quote! {
        if let ::core::option::Option::Some(__failfast_delay) = #next_delay {
            #sleep
            continue;
        }
    };
    // An `Ok` that the breaker's `counts_ok` counted is retried as the
    // counted failure it is (its verdict says so), whatever `retry_on`
    // says of errors; the last one is returned as it is. Without
    // `counts_ok`, an `Ok` reports nothing and is returned at once.
    let retry_ok = breaker
        .filter(|breaker| breaker.checked.args.counts_ok.is_some())
        .map(|_| {
            quote! {
                #take_verdict
                #next
            }
        });
    let retry = match retry_on {
        Some(retry_on) => quote!(if #retry_on { #next }),
        None => next,
    };
    let policy = policy(args, &private, attempts);
    let uses_import = breaker.map(Breaker::uses_import);
    let retry_policy = quote! {
        #allow
        static __FAILFAST_RETRY: #private::Retry = #policy;
        #allow
        let mut __failfast_attempts = __FAILFAST_RETRY.begin();
    };
    let looped = match fallback {
        None => quote! {
            #uses_import
            #helper
            #retry_policy
            loop {
                #allow
                let __failfast_result: #output = #attempt;
                #allow
                match #split(__failfast_result) {
                    ::core::result::Result::Ok(__failfast_value) => {
                        #retry_ok
                        return #join(::core::result::Result::Ok(__failfast_value));
                    }
                    ::core::result::Result::Err(__failfast_error) => {
                        #take_verdict
                        #retry
                        return #join(::core::result::Result::Err(__failfast_error));
                    }
                }
            }
        },
        // The fallback is called once, after the last attempt, with the
        // `failfast::Error<E>` of that attempt; an `Ok` or a neutral error
        // is returned as the breaker's code returned it.
        Some(fallback) => {
            let FallbackCall {
                helper: fallback_helper,
                prepare,
                call,
            } = fallback_call(
                &fallback.value,
                &shape.fallback_args,
                is_async,
                &allow,
                &private,
            );
            let kept = kept_for_fallback(&func.sig, &shape.body, &fallback.value);
            quote! {
                #uses_import
                #helper
                #fallback_helper
                #kept
                #prepare
                #retry_policy
                #allow
                let __failfast_fallback_error = loop {
                    #allow
                    let __failfast_attempt = #attempt;
                    #allow
                    let __failfast_fallback_error = match __failfast_attempt {
                        ::core::result::Result::Ok(__failfast_result) => return __failfast_result,
                        ::core::result::Result::Err(__failfast_fallback_error) => {
                            __failfast_fallback_error
                        }
                    };
                    #take_verdict
                    #retry
                    break __failfast_fallback_error;
                };
                #allow
                return #call;
            }
        }
    };
    with_body(func, shape, &looped)
}

fn policy(args: &RetryArgs, private: &TokenStream, attempts: u32) -> TokenStream {
    let attempts = proc_macro2::Literal::u32_unsuffixed(attempts);
    let mut chain = quote!(#private::Retry::new(#attempts));
    if let Some(backoff) = &args.backoff {
        let start = duration(backoff.value.start);
        let max = duration(backoff.value.max.unwrap_or(backoff.value.start));
        chain.extend(quote!(.backoff(#start, #max)));
    }
    if let Some(jitter) = &args.jitter {
        let jitter = proc_macro2::Literal::f64_unsuffixed(jitter.value);
        chain.extend(quote!(.jitter(#jitter)));
    }
    if let Some(budget) = &args.budget {
        let budget = proc_macro2::Literal::f64_unsuffixed(budget.value);
        chain.extend(quote!(.budget(#budget)));
    }
    chain
}

/// The breaker's code around one attempt: the breaker's expansion of a
/// function with this body, in its reporting form, whose block is taken.
fn guarded(
    func: &ItemFn,
    shape: &Shape,
    block: &Block,
    is_async: bool,
    breaker: &Checked,
) -> Block {
    let attempt = ItemFn {
        attrs: Vec::new(),
        vis: Visibility::Inherited,
        sig: func.sig.clone(),
        block: Box::new(block.clone()),
    };
    let body = if is_async {
        Body::Async(block)
    } else {
        Body::Sync(block)
    };
    let attempt_shape = Shape {
        body,
        output: shape.output.clone(),
        error_span: shape.error_span,
        fallback_args: Vec::new(),
    };
    let expanded = super::expand(&attempt, breaker, &attempt_shape);
    *syn::parse2::<ItemFn>(expanded)
        .expect("the breaker's expansion is a function")
        .block
}

/// `#[async_trait]`'s future block with its opening moves (`let __self =
/// self; let x = x;`) made repeatable: shared references are copied, `&mut`
/// ones reborrowed, values cloned.
fn reusable(func: &ItemFn, future: &ExprAsync, private: &TokenStream) -> Block {
    let mut block = future.block.clone();
    // Top-level statements are `#[async_trait]`'s (a type hint, the moves,
    // then `let __ret = { body };`): only the moves are rewritten.
    for stmt in &mut block.stmts {
        let Stmt::Local(local) = stmt else { continue };
        let Some(init) = &mut local.init else {
            continue;
        };
        let Expr::Path(source) = &*init.expr else {
            continue;
        };
        let Some(name) = source.path.get_ident().cloned() else {
            continue;
        };
        let Some(kind) = argument_kind(func, &name) else {
            continue;
        };
        // "not `Clone`": the call points at the argument, the message names
        // its type and what to do.
        let again = respan(quote!(#private::again), name.span());
        let expr: TokenStream = match kind {
            Kind::Shared => continue,
            Kind::Unique => quote!(&mut *#name),
            Kind::Owned => quote!(#again(&#name)),
        };
        *init.expr = syn::parse2(expr).expect("an expression");
    }
    block
}

enum Kind {
    Shared,
    Unique,
    Owned,
}

/// How the argument `name` (or `self`) is passed.
fn argument_kind(func: &ItemFn, name: &syn::Ident) -> Option<Kind> {
    let by_reference = |reference: Option<bool>| match reference {
        Some(false) => Kind::Shared,
        Some(true) => Kind::Unique,
        None => Kind::Owned,
    };
    func.sig.inputs.iter().find_map(|input| match input {
        FnArg::Receiver(receiver) if name == "self" => Some(by_reference(
            receiver
                .reference
                .as_ref()
                .map(|_| receiver.mutability.is_some()),
        )),
        FnArg::Typed(typed) => match &*typed.pat {
            Pat::Ident(ident) if ident.ident == *name => Some(by_reference(match &*typed.ty {
                Type::Reference(reference) => Some(reference.mutability.is_some()),
                _ => None,
            })),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use failfast_rules::Key;
    use syn::Item;

    /// The messages of the `compile_error!`s, and the function after them.
    fn expanded(args: &str, item: &str) -> (Vec<String>, ItemFn) {
        let file: syn::File =
            syn::parse2(retry(args.parse().unwrap(), item.parse().unwrap())).unwrap();
        let (last, errors) = file.items.split_last().expect("an item");
        let messages = errors
            .iter()
            .map(|item| match item {
                Item::Macro(mac) => mac.mac.parse_body::<syn::LitStr>().unwrap().value(),
                other => panic!("not a compile_error!: {}", quote!(#other)),
            })
            .collect();
        let Item::Fn(func) = last else {
            panic!("not a function: {}", quote!(#last));
        };
        (messages, func.clone())
    }

    #[test]
    fn the_breaker_below_is_taken_off_and_checked_once() {
        let item =
            "#[circuit_breaker(threshold = 2)] fn fetch(id: &str) -> Result<u32, E> { Ok(1) }";
        let (errors, func) = expanded("attempts = 3", item);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(func.attrs.is_empty());
        // Its mistakes are reported once, and the function is emitted
        // without it (it would report them a second time).
        let (errors, func) = expanded(
            "attempts = 3",
            "#[circuit_breaker(threshold = 0)] fn fetch() -> Result<u32, E> { Ok(1) }",
        );
        assert_eq!(errors, ["`threshold` must be at least 1"]);
        assert!(func.attrs.is_empty());
    }

    #[test]
    fn the_breaker_below_reports_to_the_loop() {
        let mut func: ItemFn = syn::parse_str(
            "#[failfast::circuit_breaker(threshold = 2, fallback = cached)] fn f() -> Result<u32, E> { Ok(1) }",
        )
        .unwrap();
        let mut errors = Errors::default();
        let breaker = take_breaker(&mut func, &mut errors).expect("a breaker below");
        assert!(errors.into_result().is_none());
        assert!(func.attrs.is_empty());
        assert!(breaker.checked.report_to_retry);
        assert_eq!(
            breaker.checked.args.count(Key::Threshold).map(|t| t.value),
            Some(2)
        );
        assert!(breaker.checked.args.fallback.is_some());
        let path = &breaker.path;
        assert_eq!(quote!(#path).to_string(), "failfast :: circuit_breaker");
        let mut plain: ItemFn = syn::parse_str("fn f() -> Result<u32, E> { Ok(1) }").unwrap();
        assert!(take_breaker(&mut plain, &mut Errors::default()).is_none());
    }

    #[test]
    fn twice_is_one_error() {
        let (errors, _) = expanded(
            "",
            "#[retry(attempts = 2)] fn fetch() -> Result<u32, E> { Ok(1) }",
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("`#[retry]` is given twice"),
            "{errors:?}"
        );
    }

    #[test]
    fn async_trait_arguments_are_copied_reborrowed_or_cloned_per_attempt() {
        let func: ItemFn = syn::parse_quote! {
            fn stock<'life0, 'async_trait>(&'life0 mut self, sku: String, n: &'life0 mut u32, k: &'life0 u8)
                -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = Result<u32, E>> + ::core::marker::Send + 'async_trait>>
            where 'life0: 'async_trait, Self: 'async_trait {
                Box::pin(async move { let __self = self; Ok(1) })
            }
        };
        let kind = |name: &str| match argument_kind(
            &func,
            &syn::Ident::new(name, proc_macro2::Span::call_site()),
        ) {
            Some(Kind::Shared) => "shared",
            Some(Kind::Unique) => "unique",
            Some(Kind::Owned) => "owned",
            None => "none",
        };
        assert_eq!(
            ["self", "sku", "n", "k", "other"].map(kind),
            ["unique", "owned", "unique", "shared", "none"]
        );
    }
}
