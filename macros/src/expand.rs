//! Rewrites the annotated function. The user's attributes, visibility,
//! signature, generics and where clause are kept token for token; only the
//! body changes (every runtime path goes through `CRATE::__private`, where
//! `CRATE` is `::failfast` or the `crate = ..` key):
//!
//! ```text
//! fn f(args..) -> Ret {
//!     // only with a predicate in `counts`/`ignores`:
//!     fn __failfast_check<E: ?Sized, F: FnOnce(&E) -> bool>(error: &E, predicate: F) -> bool;
//!     static __FAILFAST_BREAKER: Breaker =
//!         Breaker::from_config(Config::new(NAME).threshold(5).recovery(..)..);
//!     // its entry in the link-time list of declared breakers (`declare`)
//!     static __FAILFAST_DECLARED: Declared = Declared { breaker: &__FAILFAST_BREAKER, .. };
//!     // with a fallback, what follows is in `let error = 'fallback: { .. };`
//!     // (with `key` or `breaker = NAME`, the static and these two lines
//!     // differ: see `source`)
//!     let __failfast_breaker: &'static Breaker = breaker(&__FAILFAST_BREAKER);
//!     let [mut] __failfast_permit = match acquire(__failfast_breaker) {   // `mut` with max_concurrent = N
//!         Ok(permit) => permit,
//!         Err(rejected) => return join::<Ret>(Err(rejected(rejected))), // at E; FromRejected
//!         // with a fallback: break 'fallback Error::Rejected(rejected)
//!     };
//!     // only with `max_concurrent = N` (and `static __FAILFAST_BULKHEAD:
//!     // Bulkhead = Bulkhead::new(N);` beside the breaker; an adaptive
//!     // `max_concurrent = MIN..=MAX` is `.adaptive_concurrency(MIN, MAX)`
//!     // in the breaker's config instead, taken by `acquire`):
//!     // (with `max_wait`: `enter_waiting(&__FAILFAST_BULKHEAD, &mut permit)`,
//!     // `.await`ed in an `async fn`; the permit's time starts once it has
//!     // a place)
//!     let __failfast_slot = match enter(&__FAILFAST_BULKHEAD) {
//!         Some(slot) => slot,
//!         None => { let rejected = concurrency_limit(__failfast_breaker, &permit); /* as above */ }
//!     };
//!     let __failfast_result: Ret = run(move || -> Ret { body });        // sync
//!     // async: the body owns the permit while it runs and gives it back
//!     let (__failfast_result, __failfast_permit): (Ret, _) =
//!         body(__failfast_permit, async move { <fake return>; body }).await;
//!     let (__failfast_result, __failfast_permit): (Ret, _) =       // `timeout`
//!         match timeout(Tokio, __failfast_permit, LIMIT, async move { .. }).await {
//!         Ok(result_and_permit) => result_and_permit,
//!         // the failure is already recorded
//!         Err(timed_out) => return join::<Ret>(Err(timed_out(timed_out))), // at E; FromTimedOut
//!         // with a fallback: break 'fallback Error::Timeout(timed_out)
//!     };
//!     // (no `move` with a path fallback, which is given the arguments after
//!     // the body; `impl Trait` in `Ret` becomes `_`)
//!     match split::<Ret>(__failfast_result) {      // ResultParts: Ret is a Result
//!         Ok(value) => { permit.success(); return join::<Ret>(Ok(value)); }
//!         Err(error) => {
//!             // without `counts`: the rule of `Ret`, which is `true` but
//!             // for `Result<T, tonic::Status>` (see `classify::default_check`)
//!             if counts(&error) && !ignores(&error) {
//!                 permit.failure();
//!                 return join::<Ret>(Err(error));
//!                 // with a fallback: break 'fallback Error::Failed(error)
//!             }
//!             permit.neutral();
//!             return join::<Ret>(Err(error));
//!         }
//!     };
//!     // with a fallback, its one call:
//!     return fallback(args.., error) [.await];              // fallback = path
//!     return __failfast_fallback(error, |error| ..) [.await]; // fallback = closure
//! }
//! ```
//!
//! Under `#[retry]` (see `expand_retry`) this code is one attempt, and
//! reports its verdict to the loop before each `Err` it returns. With a
//! fallback there, the attempt is a `Result<Ret, failfast::Error<E>>`: what
//! leaves the labelled block is returned as `Err(error)` for the loop to
//! decide on (and to give the fallback after the last attempt), and the
//! `return`s above return `Ok(ret)`.
//!
//! Under `#[async_trait]` the same statements go inside `Box::pin(async move {
//! .. })`, and `async_trait`'s own future is the body that `body` polls.
//!
//! A panic in a sync body unwinds through the permit, whose `Drop` records a
//! failure. An async body is polled by `body`, which records a failure when a
//! poll of the body panics and makes the permit's drop neutral otherwise, so
//! a sibling future's panic (`join!`, a task torn down) is not blamed on the
//! dependency. A future dropped mid-call drops the body unfinished, which the
//! runtime records as neutral, as slow once it ran past `slow`, or as a
//! failure once past `timeout`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{
    Block, Expr, ExprAsync, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType,
    Stmt, TraitItemFn, Type, TypeParamBound,
};

use crate::args::{Args, Errors, Fallback, Window};
use crate::classify::Matcher;
use crate::source::Source;
use crate::tokens::{allow, at_type, duration, located_at, nested, respan, runtime};

pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = Args::parse(args, &mut errors);
    let func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => Some(func),
        Err(_) => {
            errors.push(not_a_function(&item, "circuit_breaker"));
            None
        }
    };
    // `#[retry]` below: see `expand_retry`, which expands a breaker below it.
    if let Some(retry) = func.as_ref().and_then(|f| {
        f.attrs
            .iter()
            .find(|attr| crate::expand_retry::is_failfast_attribute(attr, "retry"))
    }) {
        errors.push(syn::Error::new_spanned(
            retry,
            "`#[retry]` must be written above `#[circuit_breaker]`: attributes expand from \
             the top, so below it the retries would run inside one breaker call (the breaker \
             would count one call for all attempts, and retry a dependency it has given up \
             on); move `#[retry(..)]` above `#[circuit_breaker(..)]`",
        ));
    }
    let shape = func
        .as_ref()
        .and_then(|f| Shape::of(f, &args, "circuit_breaker", &mut errors));
    match (errors.into_result(), &func, shape) {
        (None, Some(func), Some(shape)) => expand(func, &args, &shape),
        // Emit the function as written, so the rest of the crate (and the
        // IDE) keeps working; the errors say what to fix.
        (error, _, _) => {
            let error = error.map(|e| e.to_compile_error());
            quote!(#error #item)
        }
    }
}

pub(crate) fn not_a_function(item: &TokenStream, attribute: &str) -> syn::Error {
    if let Ok(method) = syn::parse2::<TraitItemFn>(item.clone()) {
        if method.default.is_none() {
            return syn::Error::new_spanned(
                &method.sig,
                format!(
                    "`#[{attribute}]` needs a function body to guard: put it on the method \
                     in the `impl` block, not on the trait's declaration"
                ),
            );
        }
    }
    syn::Error::new(
        Span::call_site(),
        format!("`#[{attribute}]` can only be put on a function or a method"),
    )
}

/// How the function's body runs and what it returns.
pub(crate) enum Body<'a> {
    Sync(&'a Block),
    Async(&'a Block),
    /// `Box::pin(async move { .. })`, as `#[async_trait]` writes an `async fn`:
    /// the breaker wraps the future, not its creation.
    AsyncTrait {
        pin: &'a Expr,
        future: &'a ExprAsync,
    },
}

pub(crate) struct Shape<'a> {
    pub(crate) body: Body<'a>,
    /// The `Result` type the body produces, `impl Trait` replaced by `_`.
    pub(crate) output: Type,
    /// Where "E has no `From<Rejected>`" points: the error type if written.
    pub(crate) error_span: Span,
    /// The arguments passed on to the fallback, receiver first.
    pub(crate) fallback_args: Vec<TokenStream>,
    /// Checks that the arguments the body moves and the fallback uses are
    /// `Copy`, each with a message naming both (see `moves`).
    pub(crate) kept_for_fallback: TokenStream,
}

impl<'a> Shape<'a> {
    pub(crate) fn of(
        func: &'a ItemFn,
        args: &Args,
        attribute: &str,
        errors: &mut Errors,
    ) -> Option<Shape<'a>> {
        let sig = &func.sig;
        // Who decides, in the messages: the breaker, or `#[retry]`.
        let (decider, a_decider) = if attribute == "retry" {
            ("`#[retry]`", "`#[retry]`")
        } else {
            ("the breaker", "a breaker")
        };
        if let Some(constness) = &sig.constness {
            errors.push(syn::Error::new(
                constness.span(),
                format!(
                    "`#[{attribute}]` cannot guard a `const fn`: {a_decider} decides at run time"
                ),
            ));
            return None;
        }
        let (body, output) = Body::of(func);
        if let (Body::Sync(_), Some(key)) = (&body, args.written("timeout")) {
            errors.push(syn::Error::new(
                key.span(),
                "`timeout` needs an `async fn`: a sync call cannot be stopped at its deadline \
                 (the thread would go on running it, held by the dependency), so set the time \
                 limit where the call blocks (the HTTP client's or socket's timeout), or make \
                 this function `async`",
            ));
        }
        let output = result_type(sig, output, attribute, decider, errors)?;
        let error_span = error_type_span(output);
        let mut output = output.clone();
        InferImplTrait.visit_type_mut(&mut output);
        let fallback_args = match args.fallback.as_ref().map(|f| &f.value) {
            Some(Fallback::Path(fallback)) => fallback_args(sig, &body, fallback, errors),
            _ => Vec::new(),
        };
        let kept_for_fallback = args
            .fallback
            .as_ref()
            .map(|fallback| kept_for_fallback(sig, &body, &fallback.value))
            .unwrap_or_default();
        Some(Shape {
            body,
            output,
            error_span,
            fallback_args,
            kept_for_fallback,
        })
    }
}

impl<'a> Body<'a> {
    /// How `func`'s body runs, and the type it returns as written (for
    /// `#[async_trait]`'s shape, its future's output).
    fn of(func: &'a ItemFn) -> (Body<'a>, Option<&'a Type>) {
        let sig = &func.sig;
        if sig.asyncness.is_some() {
            (Body::Async(&func.block), return_type(&sig.output))
        } else if let Some((pin, future, output)) = async_trait_body(func) {
            (Body::AsyncTrait { pin, future }, Some(output))
        } else {
            (Body::Sync(&func.block), return_type(&sig.output))
        }
    }
}

/// The return type, if it may be a `Result` (any type path may be an
/// alias of one: the compiler checks it); otherwise an error at the type, or
/// at the function's head when it returns nothing.
fn result_type<'t>(
    sig: &syn::Signature,
    output: Option<&'t Type>,
    attribute: &str,
    decider: &str,
    errors: &mut Errors,
) -> Option<&'t Type> {
    if let Some(output) = output.filter(|ty| may_be_result(ty)) {
        return Some(output);
    }
    let message = format!(
        "`#[{attribute}]` guards functions that return `Result<T, E>` (or an alias of \
         it): an `Err` is how a call tells {decider} it failed"
    );
    errors.push(match output {
        Some(ty) => syn::Error::new_spanned(ty, &message),
        None => {
            let (fn_token, ident) = (&sig.fn_token, &sig.ident);
            let mut head = quote!(#fn_token #ident);
            sig.paren_token
                .surround(&mut head, |tokens| sig.inputs.to_tokens(tokens));
            syn::Error::new_spanned(
                head,
                format!("{message}; this one returns nothing: add `-> Result<(), E>`"),
            )
        }
    });
    None
}

/// The arguments `fallback = path` is given, receiver first. They keep
/// their names' hygiene but sit at the `fallback` value, so that "used here
/// after move" points at the fallback that uses them. An argument without a
/// plain name cannot be passed on, nor one `#[async_trait]` moves into its
/// future: an error each.
fn fallback_args(
    sig: &syn::Signature,
    body: &Body,
    fallback: &syn::ExprPath,
    errors: &mut Errors,
) -> Vec<TokenStream> {
    let at_fallback = fallback.span();
    if matches!(body, Body::AsyncTrait { .. }) {
        for input in sig
            .inputs
            .iter()
            .filter(|input| moved_by_async_trait(input))
        {
            errors.push(syn::Error::new_spanned(
                input,
                "`#[async_trait]` moves this argument into its future, so it cannot \
                 also be passed to the `fallback`; take it by shared reference \
                 (`&self`, `&str`) or as a `Copy` type",
            ));
        }
    }
    let mut arguments = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                arguments.push(located_at(
                    receiver.self_token.to_token_stream(),
                    at_fallback,
                ));
            }
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    arguments.push(located_at(ident.ident.to_token_stream(), at_fallback));
                }
                pattern => errors.push(syn::Error::new_spanned(
                    pattern,
                    "with a `fallback`, every argument is passed on to the fallback, \
                     so it needs a plain name: write `name: Type` and destructure \
                     inside the body",
                )),
            },
        }
    }
    arguments
}

/// For each argument that the body moves (by its syntax, see `moves`) and
/// that the fallback is given or its closure uses, a check that the
/// argument's type is `Copy`, failing with a message that names the argument
/// and the fallback, at the fallback. Nothing when no argument is both.
fn kept_for_fallback(sig: &syn::Signature, body: &Body, fallback: &Fallback) -> TokenStream {
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

/// The arguments the function owns, which its body may move away:
/// references are `Copy` (`&T`) or reborrowed (`&mut T`), never moved.
fn owned_arguments(sig: &syn::Signature) -> Vec<proc_macro2::Ident> {
    sig.inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Receiver(receiver) if receiver.reference.is_none() => {
                Some(proc_macro2::Ident::new("self", receiver.self_token.span))
            }
            FnArg::Typed(typed) if !matches!(strip(&typed.ty), Type::Reference(_)) => {
                match &*typed.pat {
                    Pat::Ident(ident) => Some(ident.ident.clone()),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// Arguments that are certainly not `Copy`, which `#[async_trait]` moves into
/// the future it builds: `self`, `&mut self`, `&mut T` and common owned types.
/// Others (user types that may be `Copy`) are left to the compiler.
fn moved_by_async_trait(input: &FnArg) -> bool {
    match input {
        FnArg::Receiver(receiver) => receiver.reference.is_none() || receiver.mutability.is_some(),
        FnArg::Typed(typed) => match strip(&typed.ty) {
            Type::Reference(reference) => reference.mutability.is_some(),
            Type::Path(path) => path.path.segments.last().is_some_and(|segment| {
                [
                    "String", "Vec", "Box", "Arc", "Rc", "HashMap", "BTreeMap", "PathBuf",
                ]
                .iter()
                .any(|owned| segment.ident == owned)
            }),
            _ => false,
        },
    }
}

pub(crate) fn return_type(output: &ReturnType) -> Option<&Type> {
    match output {
        ReturnType::Type(_, ty) => Some(ty),
        ReturnType::Default => None,
    }
}

fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Paren(inner) => strip(&inner.elem),
        Type::Group(inner) => strip(&inner.elem),
        other => other,
    }
}

/// Syntactic: a type path (`Result<T, E>`, `std::io::Result<T>`,
/// `anyhow::Result<T>`, `ApiResult<T>`, a user's `Res<T>`). Whether the path
/// names a `Result` is the compiler's to check, through `ResultParts`; what
/// cannot be one (`()`, a tuple, a reference, `impl Trait`) is refused here.
fn may_be_result(ty: &Type) -> bool {
    matches!(strip(ty), Type::Path(_))
}

/// `E` in `Result<T, E>` as written; `None` for an alias such as
/// `io::Result<T>`.
fn written_error_type(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = strip(ty) else {
        return None;
    };
    let PathArguments::AngleBracketed(arguments) = &path.path.segments.last()?.arguments else {
        return None;
    };
    let types: Vec<_> = arguments
        .args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    match types[..] {
        [_, error] => Some(error),
        _ => None,
    }
}

/// Syntactic: the error type is written as anyhow's, `anyhow::Result<T>` or
/// `Result<T, anyhow::Error>`.
pub(crate) fn is_anyhow(ty: &Type) -> bool {
    fn anyhow_path(ty: &Type, last: &str) -> bool {
        let Type::Path(path) = strip(ty) else {
            return false;
        };
        let segments: Vec<_> = path.path.segments.iter().collect();
        matches!(&segments[..], [.., module, item] if module.ident == "anyhow" && item.ident == last)
    }
    anyhow_path(ty, "Result") || written_error_type(ty).is_some_and(|e| anyhow_path(e, "Error"))
}

/// The error type's first token in `Result<T, E>`, else the `Result` segment.
fn error_type_span(ty: &Type) -> Span {
    if let Some(error) = written_error_type(ty) {
        return error.span();
    }
    match strip(ty) {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .map_or_else(|| ty.span(), |last| last.ident.span()),
        _ => ty.span(),
    }
}

/// Recognises what `#[async_trait]` made of an `async fn`: a sync fn whose body
/// is `Box::pin(async move { .. })` and whose return type is
/// `Pin<Box<dyn Future<Output = R> + ..>>`. Returns the call, the future and `R`.
pub(crate) fn async_trait_body(func: &ItemFn) -> Option<(&Expr, &ExprAsync, &Type)> {
    let [Stmt::Expr(Expr::Call(call), None)] = &func.block.stmts[..] else {
        return None;
    };
    let Expr::Path(callee) = &*call.func else {
        return None;
    };
    if callee.path.segments.last()?.ident != "pin" || call.args.len() != 1 {
        return None;
    }
    let Expr::Async(future) = &call.args[0] else {
        return None;
    };
    let output = future_output(return_type(&func.sig.output)?)?;
    Some((&call.func, future, output))
}

/// Finds `R` in `Pin<Box<dyn Future<Output = R> + Send + 'a>>`.
fn future_output(ty: &Type) -> Option<&Type> {
    match strip(ty) {
        Type::Path(path) => {
            let last = path.path.segments.last()?;
            let PathArguments::AngleBracketed(arguments) = &last.arguments else {
                return None;
            };
            arguments.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(inner) => future_output(inner),
                GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                    (last.ident == "Future").then_some(&assoc.ty)
                }
                _ => None,
            })
        }
        Type::TraitObject(object) => object.bounds.iter().find_map(|bound| match bound {
            TypeParamBound::Trait(bound) => {
                let last = bound.path.segments.last()?;
                if last.ident != "Future" {
                    return None;
                }
                let PathArguments::AngleBracketed(arguments) = &last.arguments else {
                    return None;
                };
                arguments.args.iter().find_map(|arg| match arg {
                    GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
                    _ => None,
                })
            }
            _ => None,
        }),
        _ => None,
    }
}

/// `impl Trait` cannot be written in a `let`'s type; `_` lets it be inferred.
struct InferImplTrait;

impl VisitMut for InferImplTrait {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(impl_trait) = ty {
            *ty = Type::Infer(syn::TypeInfer {
                underscore_token: syn::Token![_](impl_trait.span()),
            });
        } else {
            visit_mut::visit_type_mut(self, ty);
        }
    }
}

/// `<Ret as ResultParts<_, _>>::into_result` and `::from_result`, spanned
/// at the return type: a type that is not a `Result` is reported there once,
/// and nowhere else.
pub(crate) fn result_parts(private: &TokenStream, output: &Type) -> (TokenStream, TokenStream) {
    let parts = quote!(as #private::ResultParts<_, _>>);
    (
        at_type(quote!(<), output, quote!(#parts::into_result)),
        at_type(quote!(<), output, quote!(#parts::from_result)),
    )
}

/// The user's async body as an `async` block. The fake return edge tells the
/// block its output type before the body is checked, so the body's tail
/// coerces as it would in the function itself (`Err(Box::new(e))` into
/// `Box<dyn Error>`, `?`).
pub(crate) fn async_block(
    move_: Option<&TokenStream>,
    output: &Type,
    block: &Block,
    allow: &TokenStream,
) -> TokenStream {
    let block = nested(block);
    quote! {
        async #move_ {
            #allow
            if false {
                let __failfast_fake_return: #output = loop {};
                return __failfast_fake_return;
            }
            #block
        }
    }
}

/// What the breaker tells a `#[retry]` above it about each call, right
/// before returning (see `__private::report` in the runtime); nothing at all
/// for a breaker without `#[retry]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Report {
    /// No `#[retry]` above.
    Nothing,
    /// Under `#[retry]`: every `Err` path reports its verdict.
    Verdicts,
    /// Under `#[retry]`, with a `fallback`: the call's code is the retry
    /// loop's attempt, `Result<Ret, failfast::Error<E>>`. What the fallback
    /// would be given (a rejection, a counted failure, a timeout) is reported
    /// and handed to the loop as `Err`, which calls the fallback once after
    /// the last attempt; an `Ok` or a neutral error is handed over as
    /// `Ok(ret)`, for the loop to return as it is (a neutral error is never
    /// retried: no verdict is needed).
    HandOver,
}

impl Report {
    fn of(args: &Args) -> Report {
        match (args.report_to_retry, &args.fallback) {
            (false, _) => Report::Nothing,
            (true, None) => Report::Verdicts,
            (true, Some(_)) => Report::HandOver,
        }
    }

    /// The `__private` function converting a rejection into the
    /// function's error.
    fn rejected(self) -> TokenStream {
        if self == Report::Nothing {
            quote!(rejected)
        } else {
            quote!(rejected_reported)
        }
    }

    /// Reports a rejection converted by the user's `reject_with`, or handed
    /// to the fallback.
    fn rejection(self, private: &TokenStream) -> Option<TokenStream> {
        (self != Report::Nothing).then(|| quote!(#private::report(#private::Verdict::Rejected);))
    }

    fn failure(self, private: &TokenStream) -> Option<TokenStream> {
        (self != Report::Nothing)
            .then(|| quote!(#private::report(#private::failure(__failfast_breaker));))
    }

    fn neutral(self, private: &TokenStream) -> Option<TokenStream> {
        (self == Report::Verdicts).then(|| quote!(#private::report(#private::Verdict::Neutral);))
    }

    /// Returns `result` (a `Result<T, E>`) as the function's `Ret`, or, as
    /// the retry loop's attempt, as `Ok(ret)`.
    fn returns(self, join: &TokenStream, result: TokenStream) -> TokenStream {
        if self == Report::HandOver {
            quote!(return ::core::result::Result::Ok(#join(#result)))
        } else {
            quote!(return #join(#result))
        }
    }
}

/// The breaker's settings as a `const` `Config` expression, named `name`
/// or, by default, `default_name` (see `declare::default_name`).
pub(crate) fn config(args: &Args, default_name: TokenStream, private: &TokenStream) -> TokenStream {
    let int = proc_macro2::Literal::u32_unsuffixed;
    let float = proc_macro2::Literal::f64_unsuffixed;

    let name = match &args.name {
        Some(name) => name.value.to_token_stream(),
        None => default_name,
    };
    let mut chain = quote!(#private::ConstConfig::new(#name));
    chain.extend(trip_rules(args));
    if let Some(recovery) = &args.recovery {
        let start = duration(recovery.value.start);
        chain.extend(quote!(.recovery(#start)));
        if let Some(max) = recovery.value.max {
            let max = duration(max);
            chain.extend(quote!(.max_recovery(#max)));
        }
    }
    if let Some(jitter) = &args.jitter {
        let jitter = float(jitter.value);
        chain.extend(quote!(.jitter(#jitter)));
    }
    if let Some(trials) = &args.trial_calls {
        let n = int(trials.value);
        chain.extend(quote!(.trial_calls(#n)));
    }
    if let Some(successes) = &args.success_threshold {
        let n = int(successes.value);
        chain.extend(quote!(.success_threshold(#n)));
    }
    // `max_concurrent = MIN..=MAX`: the breaker keeps the limit itself.
    if let Some((min, max)) = args.adaptive_concurrency() {
        let (min, max) = (int(min), int(max));
        chain.extend(quote!(.adaptive_concurrency(#min, #max)));
    }
    chain.extend(crate::consts::setters(args, private));
    quote!(#chain.into_config())
}

/// The setters of the rules that trip the breaker (the consecutive rule, or
/// a failure or slow-call rate over a window) and of graded shedding,
/// literal values only.
fn trip_rules(args: &Args) -> TokenStream {
    let int = proc_macro2::Literal::u32_unsuffixed;
    let float = proc_macro2::Literal::f64_unsuffixed;
    let mut chain = TokenStream::new();
    let sheds = args.written("shed").is_some();
    match (&args.threshold, &args.failure_rate) {
        (Some(threshold), _) => {
            let n = int(threshold.value);
            chain.extend(quote!(.threshold(#n)));
        }
        // Graded shedding alone has no trip rule of its own (a constant
        // `threshold` or `failure_rate` is set after, by `consts`).
        (None, None)
            if sheds
                && args.written("threshold").is_none()
                && args.written("failure_rate").is_none() =>
        {
            chain.extend(quote!(.without_threshold()));
        }
        // The consecutive-failure rule is the default rule.
        (None, None) => {
            let n = int(failfast_rules::DEFAULT_THRESHOLD);
            chain.extend(quote!(.threshold(#n)));
        }
        (None, Some(_)) => {}
    }
    if let Some(rate) = &args.failure_rate {
        let rate = float(rate.value);
        chain.extend(quote!(.failure_rate(#rate)));
    }
    match args.window.as_ref().map(|w| &w.value) {
        Some(Window::Calls(n)) => {
            let n = int(*n);
            chain.extend(quote!(.window_calls(#n)));
        }
        Some(Window::Time(d)) => {
            let d = duration(*d);
            chain.extend(quote!(.window_time(#d)));
        }
        None => {}
    }
    match (&args.min_calls, args.window.as_ref().map(|w| &w.value)) {
        (Some(min_calls), _) => {
            let n = int(min_calls.value);
            chain.extend(quote!(.min_calls(#n)));
        }
        // A count window smaller than the default `min_calls` could never
        // reach a verdict: wait for a full window instead.
        (None, Some(Window::Calls(n)))
            if failfast_rules::default_min_calls(*n) != failfast_rules::DEFAULT_MIN_CALLS =>
        {
            let n = int(failfast_rules::default_min_calls(*n));
            chain.extend(quote!(.min_calls(#n)));
        }
        _ => {}
    }
    if let Some(slow) = &args.slow {
        let d = duration(slow.value);
        chain.extend(quote!(.slow(#d)));
    }
    if let Some(rate) = &args.slow_rate {
        let rate = float(rate.value);
        chain.extend(quote!(.slow_rate(#rate)));
    }
    if let Some(shed) = &args.shed {
        let k = float(shed.value);
        chain.extend(quote!(.shed(#k)));
    }
    // Graded shedding measures over `shed_window`, 10 s unless written.
    if let Some(window) = &args.shed_window {
        let d = duration(window.value);
        chain.extend(quote!(.shed_window(#d)));
    }
    // `threshold` with `window` (literal or constant): failures within it.
    if args.written("threshold").is_some()
        && args.written("window").is_some()
        && args.failure_rate.is_none()
    {
        chain.extend(quote!(.failures_within()));
    }
    chain
}

/// Rewrites the function, in stages: [`Plan::new`] decides what the
/// generated code needs (the breaker's source, what counts, where each exit
/// goes); [`Plan::call`] emits the guarded call, with the body wrapped by
/// [`Plan::run`]; [`Plan::with_fallback`] hands its refusals and failures
/// to the fallback; [`Plan::statics`] emits the breaker's `static`. The
/// arguments and the shape were checked before (`Args::parse`,
/// `Shape::of`).
pub(crate) fn expand(func: &ItemFn, args: &Args, shape: &Shape) -> TokenStream {
    let krate = runtime(args.krate.as_ref().map(|k| &k.value));
    let private = quote!(#krate::__private);
    let allow = allow();
    let plan = Plan::new(func, args, shape, &krate, &private, &allow);
    let call = plan.with_fallback(plan.call());
    let helper = Matcher::helper([&args.counts, &args.ignores], &allow);
    let kept = &shape.kept_for_fallback;
    let statics = plan.statics(func);
    let guarded = quote! {
        #helper
        #kept
        #statics
        #call
    };
    with_body(func, shape, &guarded)
}

/// What the generated code needs, decided once from the arguments and the
/// function's shape.
struct Plan<'a> {
    args: &'a Args,
    shape: &'a Shape<'a>,
    private: &'a TokenStream,
    allow: &'a TokenStream,
    /// Where the breaker comes from: a `static` of its own, a family's
    /// member, a shared breaker.
    source: Source<'a>,
    report: Report,
    is_async: bool,
    /// Whether `__failfast_error` is a counted failure: `counts` (the return
    /// type's default rule when absent) and not `ignores`.
    counted: TokenStream,
    /// `ResultParts::into_result` and `::from_result` at the return type:
    /// taking the returned value apart and building it again goes through
    /// them, so a type that is not a `Result` is reported there once, and
    /// nowhere else.
    split: TokenStream,
    join: TokenStream,
    exits: Exits,
}

/// Where the call goes when it is refused, when its error counts as a
/// failure, and when it times out. The locals they take
/// (`__failfast_rejected`, `__failfast_error`, `__failfast_timed_out`) keep
/// the call-site span even where the code around them is spanned at the
/// user's tokens for better errors: local variables are hygienic when the
/// function comes out of a `macro_rules!` macro.
struct Exits {
    reject: TokenStream,
    failure: TokenStream,
    timeout: TokenStream,
}

impl<'a> Plan<'a> {
    fn new(
        func: &ItemFn,
        args: &'a Args,
        shape: &'a Shape<'a>,
        krate: &TokenStream,
        private: &'a TokenStream,
        allow: &'a TokenStream,
    ) -> Self {
        let is_async = matches!(shape.body, Body::Async(_));
        let source = Source::new(
            args,
            is_async,
            crate::declare::default_name(func),
            private,
            allow,
        );
        let report = Report::of(args);
        let (split, join) = result_parts(private, &shape.output);
        let exits = match &args.fallback {
            Some(_) => Exits::to_fallback(private, report),
            None => Exits::returning(args, shape, private, &join, report),
        };
        Plan {
            args,
            shape,
            private,
            allow,
            source,
            report,
            is_async: !matches!(shape.body, Body::Sync(_)),
            counted: counted(args, krate, &shape.output),
            split,
            join,
            exits,
        }
    }
}

/// `counts` (the return type's default rule when absent) and not `ignores`,
/// of `__failfast_error`.
fn counted(args: &Args, krate: &TokenStream, output: &Type) -> TokenStream {
    let error = quote!(&__failfast_error);
    let anyhow = is_anyhow(output);
    let counts = match &args.counts {
        Some(counts) => counts.value.check(krate, &error, anyhow),
        None => crate::classify::default_check(krate, &error, &quote!(__failfast_returned)),
    };
    match &args.ignores {
        Some(ignores) => {
            let check = ignores.value.check(krate, &error, anyhow);
            quote!(#counts && !#check)
        }
        None => counts,
    }
}

impl Exits {
    /// With a fallback, a rejection, a counted failure and a timeout all
    /// leave the labelled block with the `failfast::Error` for the one call
    /// of the fallback after it: one call site, so a fallback that does not
    /// fit is one error. Under `#[retry]`, a rejection and a timeout are
    /// reported to the loop (a counted failure is reported before its exit).
    /// (`break 'label ::path` reads as a labelled loop to syn, which parses
    /// this expansion when another attribute macro comes after this one: the
    /// value is bound first.)
    fn to_fallback(private: &TokenStream, report: Report) -> Exits {
        let to_fallback =
            |variant: TokenStream, value: &TokenStream, report: Option<TokenStream>| {
                quote!({
                    #report
                    let __failfast_fallback_error = #private::Error::#variant(#value);
                    break '__failfast_fallback __failfast_fallback_error;
                })
            };
        Exits {
            reject: to_fallback(
                quote!(Rejected),
                &quote!(__failfast_rejected),
                report.rejection(private),
            ),
            failure: to_fallback(quote!(Failed), &quote!(__failfast_error), None),
            timeout: to_fallback(
                quote!(Timeout),
                &quote!(__failfast_timed_out),
                report.failure(private),
            ),
        }
    }

    /// Without a fallback, each exit returns an `Err` of the function's
    /// error type: a rejection and a timeout converted into it, where "E has
    /// no `From<Rejected>`" (or `From<TimedOut>`) is reported once, at `E`;
    /// with `reject_with`, a rejection converted by the user's function.
    /// Under `#[retry]`, a rejection and a timeout (a counted failure) are
    /// reported to the retry loop before returning.
    fn returning(
        args: &Args,
        shape: &Shape,
        private: &TokenStream,
        join: &TokenStream,
        report: Report,
    ) -> Exits {
        let span = shape.error_span;
        let convert = |helper: TokenStream, value: &TokenStream| {
            let convert = respan(quote!(#private::#helper), span);
            let err = quote_spanned!(span=> ::core::result::Result::Err(#convert(#value)));
            quote!(return #join(#err))
        };
        let on_timeout = convert(quote!(timed_out), &quote!(__failfast_timed_out));
        let report_timeout = report.failure(private);
        // `reject_with = path` is spanned at the path: a signature that does
        // not fit is one error there.
        let reject = match &args.reject_with {
            Some(path) => {
                let path = &path.value;
                let report = report.rejection(private);
                let span = path.span();
                let argument = located_at(quote!(__failfast_rejected), span);
                let call = quote_spanned!(span=> #path(#argument));
                quote!({
                    #report
                    return #join(::core::result::Result::Err(#call))
                })
            }
            None => convert(report.rejected(), &quote!(__failfast_rejected)),
        };
        let failed = quote!(__failfast_error);
        Exits {
            reject,
            failure: quote!(return #join(::core::result::Result::Err(#failed))),
            timeout: quote!({ #report_timeout #on_timeout }),
        }
    }
}

impl Plan<'_> {
    /// The guarded call: admission (and a place in the bulkhead), the body,
    /// and its verdict on the permit, each path ending in a `return` or an
    /// exit.
    fn call(&self) -> TokenStream {
        let Plan {
            private,
            allow,
            split,
            join,
            ..
        } = self;
        let reject = &self.exits.reject;
        // An async body is polled through `body`, which owns the permit while
        // the body runs and gives it back with the body's output (see `Body`
        // in the runtime): only a panic raised while the body itself is
        // polled counts as its failure, and the function's future holds no
        // permit of its own across the `.await`.
        let mut_ = self.args.bulkhead().is_some().then(|| quote!(mut));
        let output = &self.shape.output;
        let result = if self.is_async {
            quote!((__failfast_result, __failfast_permit): (#output, _))
        } else {
            quote!(__failfast_result: #output)
        };
        let (lookup, acquire) = (self.source.lookup(), self.source.acquire());
        let enter = self.enter();
        let run = self.run();
        // Without `counts`, the default rule is chosen by the return type.
        let returned = self.args.counts.is_none().then(|| {
            quote! {
                #allow
                let __failfast_returned = #private::returned(&__failfast_result);
            }
        });
        let success = self
            .report
            .returns(join, quote!(::core::result::Result::Ok(__failfast_value)));
        let on_error = self.on_error();
        quote! {
            #lookup
            #allow
            let #mut_ __failfast_permit = match #acquire {
                ::core::result::Result::Ok(__failfast_permit) => __failfast_permit,
                ::core::result::Result::Err(__failfast_rejected) => #reject,
            };
            #enter
            let #result = #run;
            #returned
            #allow
            match #split(__failfast_result) {
                ::core::result::Result::Ok(__failfast_value) => {
                    __failfast_permit.record(#private::Outcome::Success);
                    #success;
                }
                #on_error
            };
        }
    }

    /// With `max_concurrent = N`, a place in the bulkhead is taken once the
    /// breaker has admitted the call (an open breaker refuses without
    /// touching it) and held until the function returns, unwinds or is
    /// dropped; a full bulkhead refuses like the breaker does: the permit's
    /// admission is given back and the call counted as rejected. An adaptive
    /// `max_concurrent = MIN..=MAX` has no bulkhead: the breaker's `acquire`
    /// takes the place.
    fn enter(&self) -> Option<TokenStream> {
        let Plan { private, allow, .. } = self;
        let reject = &self.exits.reject;
        self.args.bulkhead().map(|_| {
            let enter = self.source.enter();
            quote! {
                #allow
                let __failfast_slot = match #enter {
                    ::core::option::Option::Some(__failfast_slot) => __failfast_slot,
                    ::core::option::Option::None => {
                        let __failfast_rejected = #private::concurrency_limit(
                            __failfast_breaker,
                            &mut __failfast_permit,
                        );
                        #reject
                    }
                };
            }
        })
    }

    /// The body, run: a sync body in a closure given to `run`; an async one
    /// polled by `body`, or by `timeout` with a time limit.
    fn run(&self) -> TokenStream {
        let Plan { private, allow, .. } = self;
        let output = &self.shape.output;
        let move_ = self.moves_arguments().then(|| quote!(move));
        match &self.shape.body {
            Body::Sync(block) => quote!(#private::run(#move_ || -> #output #block)),
            Body::Async(block) => {
                let future = async_block(move_.as_ref(), output, block, allow);
                self.await_body(future)
            }
            Body::AsyncTrait { future, .. } => self.await_body(future.to_token_stream()),
        }
    }

    /// Without a fallback the body takes its arguments by move, like the
    /// function it replaces. With one it borrows them, so that they are
    /// still there to pass to the fallback after a counted failure. Under
    /// `#[retry]` too, for the next attempt.
    fn moves_arguments(&self) -> bool {
        self.args
            .fallback
            .as_ref()
            .is_none_or(|fallback| !fallback.value.takes_arguments())
            && !self.args.report_to_retry
    }

    /// The async body's `future`, awaited. With `timeout`, it is polled
    /// through `timeout`, which records the failure itself when the limit
    /// passes; the timer's marker sits at the key, where a missing `tokio`
    /// feature is reported.
    fn await_body(&self, future: TokenStream) -> TokenStream {
        let private = self.private;
        match &self.args.timeout {
            None => quote!(#private::body(__failfast_permit, #future).await),
            Some(timeout) => {
                let limit = duration(timeout.value);
                let key = self
                    .args
                    .written("timeout")
                    .map_or(timeout.span, Ident::span);
                let timer = respan(quote!(#private::Tokio), key);
                let on_timeout = &self.exits.timeout;
                quote! {
                    match #private::timeout(
                        #timer,
                        __failfast_permit,
                        #limit,
                        #future,
                    ).await {
                        ::core::result::Result::Ok(__failfast_result) => __failfast_result,
                        ::core::result::Result::Err(__failfast_timed_out) => #on_timeout,
                    }
                }
            }
        }
    }

    /// The `Err` arm of the verdict: a counted failure, or a neutral error
    /// returned as it is.
    fn on_error(&self) -> TokenStream {
        let Plan {
            private,
            report,
            counted,
            ..
        } = self;
        let on_failure = &self.exits.failure;
        let report_failure = report.failure(private);
        let report_neutral = report.neutral(private);
        let neutral = report.returns(
            &self.join,
            quote!(::core::result::Result::Err(__failfast_error)),
        );
        quote! {
            ::core::result::Result::Err(__failfast_error) => {
                if #counted {
                    __failfast_permit.record(#private::Outcome::Failure);
                    #report_failure
                    #on_failure;
                }
                __failfast_permit.record(#private::Outcome::Neutral);
                #report_neutral
                #neutral;
            }
        }
    }

    /// `call` inside the labelled block its exits leave with the
    /// `failfast::Error`, then the one call of the fallback; under
    /// `#[retry]`, the error handed to the loop, which calls the fallback
    /// after the last attempt. Without a fallback, `call` as it is.
    fn with_fallback(&self, call: TokenStream) -> TokenStream {
        let (allow, private) = (self.allow, self.private);
        match &self.args.fallback {
            Some(_) if self.report == Report::HandOver => quote! {
                #allow
                let __failfast_fallback_error = '__failfast_fallback: { #call };
                #allow
                return ::core::result::Result::Err(__failfast_fallback_error);
            },
            Some(fallback) => {
                let FallbackCall {
                    helper,
                    prepare,
                    call: call_fallback,
                } = fallback_call(
                    &fallback.value,
                    &self.shape.fallback_args,
                    self.is_async,
                    allow,
                    private,
                );
                quote! {
                    #helper
                    #prepare
                    #allow
                    let __failfast_fallback_error = '__failfast_fallback: { #call };
                    #allow
                    return #call_fallback;
                }
            }
            None => call,
        }
    }

    /// The breaker's `static` (or the family's, and the bulkhead's) and,
    /// for a breaker or a family of its own, its entry in the registry,
    /// listed from the start.
    fn statics(&self, func: &ItemFn) -> TokenStream {
        let Plan {
            private,
            allow,
            source,
            ..
        } = self;
        let statics = source.statics();
        let declared = if source.is_own() {
            Some(crate::declare::registration(
                &quote!(__FAILFAST_BREAKER),
                func.sig.ident.span(),
                private,
                allow,
            ))
        } else if source.is_own_family() {
            Some(crate::declare::family_registration(
                &quote!(__FAILFAST_FAMILY),
                func.sig.ident.span(),
                private,
                allow,
            ))
        } else {
            None
        };
        quote! {
            #statics
            #declared
        }
    }
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

/// The function as written, with `statements` as its body (inside
/// `#[async_trait]`'s `Box::pin(async move { .. })` for that shape).
pub(crate) fn with_body(func: &ItemFn, shape: &Shape, statements: &TokenStream) -> TokenStream {
    let ItemFn {
        attrs, vis, sig, ..
    } = func;
    // syn puts the body's inner attributes (`#![allow(..)]`) with the outer
    // ones; they go back at the top of the body.
    let (outer, inner): (Vec<_>, Vec<_>) = attrs
        .iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Outer));
    let body = match &shape.body {
        Body::AsyncTrait { pin, .. } => quote!({ #(#inner)* #pin(async move { #statements }) }),
        _ => quote!({ #(#inner)* #statements }),
    };
    quote! {
        #(#outer)*
        #vis #sig #body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(args: &str, item: &str) -> String {
        circuit_breaker(args.parse().unwrap(), item.parse().unwrap()).to_string()
    }

    #[test]
    fn a_mistake_still_emits_the_function_as_written() {
        let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
        let out = expand("treshold = 5", item);
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.ends_with(item), "{out}");
        assert!(!out.contains("__FAILFAST_BREAKER"), "{out}");
    }

    #[test]
    fn a_threshold_with_a_window_counts_the_failures_within_it() {
        let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
        for args in [
            r#"threshold = 5, window = "10s""#,
            "window = 20, threshold = 5",
            "threshold = LIMIT, window = 20",
        ] {
            let out = expand(args, item);
            assert!(out.contains(". failures_within ()"), "{args}: {out}");
            assert!(!out.contains("compile_error"), "{args}: {out}");
        }
        for args in ["threshold = 5", r#"failure_rate = 0.5, window = "10s""#] {
            let out = expand(args, item);
            assert!(!out.contains("failures_within"), "{args}: {out}");
        }
        // A constant threshold is checked against the count window it
        // counts within, by const evaluation.
        let out = expand("threshold = LIMIT, window = 20", item);
        assert!(
            out.contains(
                "threshold_within (:: failfast :: __private :: consts :: threshold (LIMIT) , 20)"
            ),
            "{out}"
        );
    }

    #[test]
    fn shed_alone_has_no_threshold_and_measures_over_its_own_window() {
        let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
        let minute = "(:: core :: time :: Duration :: new (60 , 0))";
        for args in [
            "shed = 2",
            "shed = 2.0, min_calls = 20",
            r#"shed = 2, slow = "1s""#,
        ] {
            let out = expand(args, item);
            assert!(!out.contains("compile_error"), "{args}: {out}");
            assert!(out.contains(". without_threshold ()"), "{args}: {out}");
            assert!(!out.contains(". threshold ("), "{args}: {out}");
            // The shedding window is 10 s unless written: the runtime's
            // default, not a `window`.
            assert!(!out.contains("window"), "{args}: {out}");
            assert!(out.contains(". shed (2.0)"), "{args}: {out}");
        }
        // With a trip rule of its own, the breaker keeps it.
        for (args, rule) in [
            ("shed = 3, threshold = 7", ". threshold (7)"),
            ("failure_rate = 0.5, shed = 3", ". failure_rate (0.5)"),
            ("threshold = LIMIT, shed = 3", "consts :: threshold (LIMIT)"),
        ] {
            let out = expand(args, item);
            assert!(!out.contains("compile_error"), "{args}: {out}");
            assert!(!out.contains("without_threshold"), "{args}: {out}");
            assert!(out.contains(rule), "{args}: {out}");
            assert!(out.contains(". shed (3.0)"), "{args}: {out}");
            assert!(!out.contains("window"), "{args}: {out}");
            assert!(!out.contains("failures_within"), "{args}: {out}");
        }
        // `shed_window` is the window shedding measures over; `window`,
        // with `threshold`, the one the failures are counted within.
        let out = expand(
            r#"shed = 2, shed_window = "1m", window = 20, threshold = 5"#,
            item,
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(&format!(". shed_window {minute}")), "{out}");
        assert!(out.contains(". window_calls (20)"), "{out}");
        assert!(out.contains(". failures_within ()"), "{out}");
        // Without shed, no trace of it.
        let out = expand("threshold = 5", item);
        assert!(
            !out.contains("shed") && !out.contains("window_time"),
            "{out}"
        );
        // A constant multiplier is checked by const evaluation; a constant
        // `min_calls` is not held to a count window: graded shedding's
        // is a time.
        let out = expand("shed = K, min_calls = N", item);
        assert!(
            out.contains(". shed (:: failfast :: __private :: consts :: shed (K))"),
            "{out}"
        );
        assert!(
            out.contains(". min_calls (:: failfast :: __private :: consts :: min_calls (N))"),
            "{out}"
        );
        assert!(out.contains(". without_threshold ()"), "{out}");
        // Beside a failure rate, it is held to the rate rule's window.
        let out = expand("failure_rate = 0.5, shed = 2, min_calls = N", item);
        assert!(out.contains("min_calls_within"), "{out}");
    }

    #[test]
    fn the_breaker_is_a_const_initialised_static_inside_the_body() {
        let out = expand(
            r#"recovery = "30s..10m", window = 5, failure_rate = 0.5"#,
            "pub fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
        );
        assert!(
            out.starts_with("pub fn fetch (id : u32) -> Result < u32 , E > {"),
            "{out}"
        );
        assert!(out.contains("static __FAILFAST_BREAKER : :: failfast :: __private :: Breaker"));
        assert!(
            out.contains(". recovery (:: core :: time :: Duration :: new (30 , 0))"),
            "{out}"
        );
        assert!(out.contains(". max_recovery (:: core :: time :: Duration :: new (600 , 0))"));
        // A window smaller than the default `min_calls` waits for a full window.
        assert!(out.contains(". window_calls (5) . min_calls (5)"), "{out}");
        assert!(
            !out.contains(". threshold"),
            "a rate rule replaces the default rule: {out}"
        );
    }

    #[test]
    fn the_body_moves_its_arguments_only_without_a_fallback() {
        let sync = "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }";
        assert!(expand("", sync).contains("run (move || ->"));
        assert!(expand("fallback = cached", sync).contains("run (|| ->"));
        let out = expand("fallback = cached", sync);
        // One call of the fallback, for rejections and counted failures
        // alike, so a fallback that does not fit is one error.
        assert_eq!(out.matches("cached (").count(), 1, "{out}");
        assert!(
            out.contains("return cached (id , __failfast_fallback_error) ;"),
            "{out}"
        );
        // A closure fallback is given the error alone: the body moves.
        let out = expand("fallback = |error| cached(error)", sync);
        assert!(out.contains("run (move || ->"), "{out}");
        assert!(
            out.contains(
                "return __failfast_fallback (__failfast_fallback_error , | error | cached (error)) ;"
            ),
            "{out}"
        );
    }

    /// Found by the grammar fuzz: `fallback = cached<u32>` was taken as a
    /// type path and emitted as `cached<u32>(..)`, which is not an expression.
    #[test]
    fn fallback_paths_are_expression_paths() {
        let sync = "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }";
        for fallback in ["cached::<u32>", "<Self as Cache>::cached", "Self::cached"] {
            let out: TokenStream = expand(&format!("fallback = {fallback}"), sync)
                .parse()
                .unwrap();
            let parsed = syn::parse2::<ItemFn>(out.clone());
            assert!(parsed.is_ok(), "{fallback}: {:?} {out}", parsed.err());
        }
        let out = expand("fallback = cached<u32>", sync);
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("`fallback = cached::<u32>`"), "{out}");
    }

    #[test]
    fn a_fallback_block_runs_before_the_call_is_admitted() {
        let out = expand(
            "fallback = { let kept = id; move |error| cached(kept, error) }",
            "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
        );
        let prepared = out.find("let __failfast_fallback_fn =").expect("prepared");
        let acquire = out.find("__private :: acquire").expect("acquire");
        assert!(prepared < acquire, "{out}");
        assert!(out.contains("run (move || ->"), "{out}");
        assert!(
            out.contains(
                "__failfast_fallback (__failfast_fallback_error , __failfast_fallback_fn)"
            ),
            "{out}"
        );
    }

    #[test]
    fn crate_path_replaces_every_runtime_path() {
        let out = expand("crate = my::ff", "fn fetch() -> Result<u32, E> { Ok(1) }");
        assert!(!out.contains(":: failfast"), "{out}");
        assert!(out.contains("my :: ff :: __private :: acquire"), "{out}");
    }

    #[test]
    fn async_trait_output_is_recognised() {
        // What `#[async_trait]` makes of `async fn stock(&self) -> Result<u32, E>`.
        let func: ItemFn = syn::parse_quote! {
            fn stock<'life0, 'async_trait>(&'life0 self) -> ::core::pin::Pin<Box<
                dyn ::core::future::Future<Output = Result<u32, E>> + ::core::marker::Send + 'async_trait
            >> where 'life0: 'async_trait, Self: 'async_trait {
                Box::pin(async move {
                    let __self = self;
                    let __ret: Result<u32, E> = { Ok(1) };
                    #[allow(unreachable_code)]
                    __ret
                })
            }
        };
        let (_, _, output) = async_trait_body(&func).expect("recognised");
        assert_eq!(quote!(#output).to_string(), "Result < u32 , E >");
        let out = expand("", &quote!(#func).to_string());
        let (outer, inner) = out
            .split_once("let (__failfast_result , __failfast_permit)")
            .unwrap();
        assert!(outer.contains("Box :: pin (async move {"), "{out}");
        assert!(outer.contains("static __FAILFAST_BREAKER"), "{out}");
        assert!(
            inner.starts_with(
                " : (Result < u32 , E > , _) = :: failfast :: __private :: body \
                 (__failfast_permit , async move { let __self = self ;"
            ),
            "{out}"
        );
    }

    #[test]
    fn any_type_path_may_be_a_result_and_the_compiler_checks_it() {
        for ret in ["ApiResult<u32>", "Res<u32>", "io::Result<()>", "u32"] {
            let out = expand("", &format!("fn f() -> {ret} {{ todo!() }}"));
            assert!(!out.contains("compile_error"), "{ret}: {out}");
            assert!(
                out.contains(
                    "as :: failfast :: __private :: ResultParts < _ , _ >> :: into_result"
                ),
                "{out}"
            );
        }
        for ret in [
            "()",
            "(u32, E)",
            "&'static str",
            "impl Future<Output = u32>",
            "[u8; 4]",
        ] {
            let out = expand("", &format!("fn f() -> {ret} {{ todo!() }}"));
            assert!(out.contains("compile_error"), "{ret}: {out}");
        }
        assert!(expand("", "fn f() {}").contains("compile_error"));
    }

    #[test]
    fn anyhow_is_recognised_as_written() {
        for ret in [
            "anyhow::Result<u32>",
            "::anyhow::Result<()>",
            "Result<u32, anyhow::Error>",
        ] {
            assert!(is_anyhow(&syn::parse_str(ret).unwrap()), "{ret}");
        }
        for ret in ["Result<u32>", "Result<u32, E>", "io::Result<u32>", "u32"] {
            assert!(!is_anyhow(&syn::parse_str(ret).unwrap()), "{ret}");
        }
    }

    #[test]
    fn an_adaptive_limit_is_in_the_config_and_no_bulkhead_is_made() {
        let item = "fn fetch (id : u32) -> Result < u32 , E > { Ok (id) }";
        let out = expand("max_concurrent = 2..=8", item);
        assert!(!out.contains("compile_error"), "{out}");
        assert!(
            out.contains(". adaptive_concurrency (2 , 8) . into_config ()"),
            "{out}"
        );
        for absent in [
            "Bulkhead",
            "enter",
            "concurrency_limit",
            "let mut __failfast_permit",
        ] {
            assert!(!out.contains(absent), "{absent}: {out}");
        }
        // Each key's breaker is built from the config, with the limit; the
        // family makes no bulkhead per key.
        let out = expand("key = id, max_concurrent = 2..=8", item);
        assert!(!out.contains("compile_error"), "{out}");
        assert!(
            out.contains(". adaptive_concurrency (2 , 8) . into_config ()"),
            "{out}"
        );
        assert!(
            out.contains(
                ". into_config () , 1024 , :: core :: option :: Option :: None , \
                 :: core :: time :: Duration :: new (0 , 0) , 100)"
            ),
            "{out}"
        );
        assert!(!out.contains("enter_member"), "{out}");
        // A fixed limit is a bulkhead, and not in the config.
        let out = expand("max_concurrent = 8", item);
        assert!(!out.contains("adaptive_concurrency"), "{out}");
        assert!(out.contains("Bulkhead :: new (8)"), "{out}");
        let out = expand("key = id, max_concurrent = 8", item);
        assert!(!out.contains("adaptive_concurrency"), "{out}");
        assert!(
            out.contains(":: core :: option :: Option :: Some (8)"),
            "{out}"
        );
        assert!(out.contains("enter_member"), "{out}");
    }

    #[test]
    fn impl_trait_becomes_inferred_in_the_annotation() {
        let out = expand(
            "",
            "fn f(v: &[u8]) -> Result<impl Iterator<Item = &u8>, E> { Ok(v.iter()) }",
        );
        assert!(out.contains("|| -> Result < _ , E >"), "{out}");
    }
}
