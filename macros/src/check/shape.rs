//! The function under the attribute: how its body runs, the `Result` it
//! returns, the arguments a `fallback` is given; and the checks of what the
//! attribute cannot guard (a `const fn`, a function without a `Result`, a
//! `timeout` on a sync function, arguments a fallback cannot be given).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{
    Attribute, Block, Expr, ExprAsync, FnArg, GenericArgument, ItemFn, Pat, PathArguments,
    ReturnType, Stmt, TraitItemFn, Type, TypeParamBound,
};

use crate::attr::{Args, Errors, Fallback};

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
    /// The arguments passed on to a `fallback = path`, receiver first, as
    /// written.
    pub(crate) fallback_args: Vec<TokenStream>,
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
            Some(Fallback::Path(_)) => fallback_args(sig, &body, errors),
            _ => Vec::new(),
        };
        Some(Shape {
            body,
            output,
            error_span,
            fallback_args,
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

/// The arguments `fallback = path` is given, receiver first. An argument
/// without a plain name cannot be passed on, nor one `#[async_trait]` moves
/// into its future: an error each.
fn fallback_args(sig: &syn::Signature, body: &Body, errors: &mut Errors) -> Vec<TokenStream> {
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
                arguments.push(receiver.self_token.to_token_stream());
            }
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    arguments.push(ident.ident.to_token_stream());
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

/// The arguments the function owns, which its body may move away:
/// references are `Copy` (`&T`) or reborrowed (`&mut T`), never moved.
pub(crate) fn owned_arguments(sig: &syn::Signature) -> Vec<proc_macro2::Ident> {
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

/// `#[name]` or `#[failfast::name]` (any path to failfast's attribute).
pub(crate) fn is_failfast_attribute(attr: &Attribute, name: &str) -> bool {
    let segments = &attr.path().segments;
    segments.last().is_some_and(|last| last.ident == name)
        && (segments.len() == 1 || segments.first().is_some_and(|s| s.ident == "failfast"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The function's shape under `#[circuit_breaker(args)]`, or the
    /// messages of what cannot be guarded.
    fn shape_of(args: &str, item: &str, test: impl FnOnce(&Shape)) -> Vec<String> {
        let mut errors = Errors::default();
        let args = Args::parse(args.parse().unwrap(), &mut errors);
        let func: ItemFn = syn::parse_str(item).unwrap();
        if let Some(shape) = Shape::of(&func, &args, "circuit_breaker", &mut errors) {
            test(&shape);
        }
        errors.messages()
    }

    fn text(tokens: impl ToTokens) -> String {
        tokens.to_token_stream().to_string()
    }

    #[test]
    fn any_type_path_may_be_a_result_and_the_compiler_checks_it() {
        for ret in ["ApiResult<u32>", "Res<u32>", "io::Result<()>", "u32"] {
            let item = format!("fn f() -> {ret} {{ todo!() }}");
            let mut seen = None;
            let errors = shape_of("", &item, |shape| seen = Some(text(&shape.output)));
            assert!(errors.is_empty(), "{ret}: {errors:?}");
            assert_eq!(seen, Some(text(syn::parse_str::<Type>(ret).unwrap())));
        }
        for ret in [
            "()",
            "(u32, E)",
            "&'static str",
            "impl Future<Output = u32>",
            "[u8; 4]",
        ] {
            let errors = shape_of("", &format!("fn f() -> {ret} {{ todo!() }}"), |_| {});
            assert_eq!(errors.len(), 1, "{ret}: {errors:?}");
            assert!(errors[0].contains("guards functions that return `Result<T, E>`"));
        }
        let nothing = shape_of("", "fn f() {}", |_| {});
        assert!(nothing[0].ends_with("this one returns nothing: add `-> Result<(), E>`"));
    }

    #[test]
    fn impl_trait_becomes_inferred_in_the_output() {
        let item = "fn f(v: &[u8]) -> Result<impl Iterator<Item = &u8>, E> { Ok(v.iter()) }";
        let mut output = None;
        shape_of("", item, |shape| output = Some(text(&shape.output)));
        assert_eq!(output.as_deref(), Some("Result < _ , E >"));
    }

    #[test]
    fn how_the_body_runs() {
        let body = |item: &str| {
            let mut kind = "";
            shape_of("", item, |shape| {
                kind = match shape.body {
                    Body::Sync(_) => "sync",
                    Body::Async(_) => "async",
                    Body::AsyncTrait { .. } => "async_trait",
                }
            });
            kind
        };
        assert_eq!(body("fn f() -> Result<u32, E> { Ok(1) }"), "sync");
        assert_eq!(body("async fn f() -> Result<u32, E> { Ok(1) }"), "async");
        // What `#[async_trait]` makes of `async fn stock(&self) -> Result<u32, E>`.
        let async_trait = "fn stock<'life0, 'async_trait>(&'life0 self) -> ::core::pin::Pin<Box<\
            dyn ::core::future::Future<Output = Result<u32, E>> + ::core::marker::Send + 'async_trait\
            >> where 'life0: 'async_trait, Self: 'async_trait {
                Box::pin(async move {
                    let __self = self;
                    let __ret: Result<u32, E> = { Ok(1) };
                    #[allow(unreachable_code)]
                    __ret
                })
            }";
        assert_eq!(body(async_trait), "async_trait");
        let func: ItemFn = syn::parse_str(async_trait).unwrap();
        let (_, _, output) = async_trait_body(&func).expect("recognised");
        assert_eq!(text(output), "Result < u32 , E >");
    }

    #[test]
    fn the_fallback_is_given_every_argument_by_its_name() {
        let mut arguments = Vec::new();
        let errors = shape_of(
            "fallback = cached",
            "fn f(&self, id: u32, name: &str) -> Result<u32, E> { Ok(id) }",
            |shape| arguments = shape.fallback_args.iter().map(text).collect(),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(arguments, ["self", "id", "name"]);
        // A closure is given the error alone.
        shape_of(
            "fallback = |error| cached(error)",
            "fn f(id: u32) -> Result<u32, E> { Ok(id) }",
            |shape| assert!(shape.fallback_args.is_empty()),
        );
        let pattern = shape_of(
            "fallback = cached",
            "fn f((a, b): (u32, u32)) -> Result<u32, E> { Ok(a + b) }",
            |_| {},
        );
        assert_eq!(pattern.len(), 1);
        assert!(pattern[0].contains("it needs a plain name"), "{pattern:?}");
    }

    #[test]
    fn what_cannot_be_guarded_is_one_error_each() {
        let errors = shape_of("", "const fn f() -> Result<u32, E> { Ok(1) }", |_| {});
        assert_eq!(
            errors,
            ["`#[circuit_breaker]` cannot guard a `const fn`: a breaker decides at run time"]
        );
        let errors = shape_of(
            r#"timeout = "1s""#,
            "fn f() -> Result<u32, E> { Ok(1) }",
            |_| {},
        );
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("`timeout` needs an `async fn`"),
            "{errors:?}"
        );
        // A bad value is reported once, and the key is still not for a sync fn.
        let errors = shape_of(
            r#"timeout = "1x""#,
            "fn f() -> Result<u32, E> { Ok(1) }",
            |_| {},
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
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
    fn failfast_attributes_are_known_by_their_last_segment() {
        for (written, is_retry) in [
            ("#[retry]", true),
            ("#[failfast::retry(attempts = 2)]", true),
            ("#[other::retry]", false),
            ("#[circuit_breaker]", false),
        ] {
            let func: ItemFn = syn::parse_str(&format!("{written} fn f() {{}}")).unwrap();
            assert_eq!(
                is_failfast_attribute(&func.attrs[0], "retry"),
                is_retry,
                "{written}"
            );
        }
    }
}
