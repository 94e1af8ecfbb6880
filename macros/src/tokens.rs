//! Token helpers shared by every stage: spans moved onto the user's tokens,
//! the lints allowed on generated code, literals for durations, and the
//! path to the runtime. They know nothing of the attributes' keys.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{Block, Path, Type};

/// Gives every token `span`, so that a type error in generated code is
/// reported once, at the user's token it is about.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), respan(group.stream(), span));
                new.set_span(span);
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The user's block, nested as the tail of a generated block. Its braces keep
/// their place but are marked as the macro's: rustc's `unused_braces` would
/// otherwise see `{ { Ok(x) } }` in the user's one-line body and suggest
/// removing braces the user must keep. The statements inside are the user's
/// tokens, linted as usual.
pub(crate) fn nested(block: &Block) -> TokenStream {
    let mut stmts = TokenStream::new();
    for stmt in &block.stmts {
        stmt.to_tokens(&mut stmts);
    }
    let mut group = Group::new(proc_macro2::Delimiter::Brace, stmts);
    group.set_span(block.brace_token.span.join().resolved_at(Span::call_site()));
    TokenTree::Group(group).into()
}

/// The same tokens, resolved as before, shown at `span`.
pub(crate) fn located_at(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            tree.set_span(tree.span().located_at(span));
            tree
        })
        .collect()
}

/// `prefix ty suffix`, with the prefix at the type's first token and the
/// suffix at its last, so the whole expression covers the type as written.
pub(crate) fn at_type(prefix: TokenStream, ty: &Type, suffix: TokenStream) -> TokenStream {
    let tokens = ty.to_token_stream();
    let mut trees = tokens.clone().into_iter();
    let first = trees
        .next()
        .map_or_else(Span::call_site, |tree| tree.span());
    let last = trees.last().map_or(first, |tree| tree.span());
    let mut out = respan(prefix, first);
    out.extend(tokens);
    out.extend(respan(suffix, last));
    out
}

/// The lints that generated code could trip in the user's crate. Put on each
/// generated statement, never around the user's body, so the user's own code
/// is linted as usual.
pub(crate) fn allow() -> TokenStream {
    quote! {
        #[allow(
            unknown_lints,
            // The fake return edge of an async body: `if false { return loop {} }`.
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            // The last statement returns from every arm, so a sync and an
            // async body share one shape.
            clippy::needless_return,
            // `__failfast_` names keep generated locals out of the user's way.
            clippy::used_underscore_binding,
            clippy::used_underscore_items,
            // Durations are emitted as whole seconds and nanoseconds.
            clippy::unreadable_literal,
            // `fallback = |error| cached(error)` is the error-only form;
            // `fallback = cached` would mean the form with the arguments.
            clippy::redundant_closure,
            // A constant given as a block (`slow_rate = { RATE * 2.0 }`) is
            // passed on as written, braces and all.
            unused_braces,
        )]
    }
}

/// A `Duration` constant, as whole seconds and nanoseconds.
pub(crate) fn duration(d: std::time::Duration) -> TokenStream {
    let secs = proc_macro2::Literal::u64_unsuffixed(d.as_secs());
    let nanos = proc_macro2::Literal::u32_unsuffixed(d.subsec_nanos());
    quote!(::core::time::Duration::new(#secs, #nanos))
}

/// Where the runtime lives: `crate = path`, or `::failfast`.
pub(crate) fn runtime(krate: Option<&Path>) -> TokenStream {
    match krate {
        Some(krate) => krate.to_token_stream(),
        None => quote!(::failfast),
    }
}
