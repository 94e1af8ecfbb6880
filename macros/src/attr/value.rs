//! The values of the keys: numbers, shares, durations, paths and closures,
//! each parsed and held to its rule (`failfast_rules`) as it is read, so that
//! a mistake is reported at the value.

use std::time::Duration;

use proc_macro2::TokenTree;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{
    Expr, ExprClosure, ExprLit, ExprPath, ExprRange, ExprUnary, Ident, Lit, LitStr, Path,
    RangeLimits, Token, UnOp,
};

use failfast_rules::{self as rules, Key, Kind, Value};

use super::constant::literal_only;
use super::{Concurrency, Fallback, Recovery};

/// The rules' name of `key`, an attribute key whose value has a rule.
pub(crate) fn rule_key(key: &str) -> Key {
    Key::from_name(key).unwrap_or_else(|| unreachable!("`{key}` has no rule"))
}

/// An integer of at least 1, such as `threshold = 5`, within the key's
/// largest (see `failfast_rules::count`).
pub(crate) fn count(input: ParseStream, key: &str) -> syn::Result<u32> {
    count_of(&input.parse()?, key)
}

/// [`count`] of an expression already parsed.
fn count_of(expr: &Expr, key: &str) -> syn::Result<u32> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => {
            let value: u64 = int.base10_parse()?;
            rules::count(rule_key(key), value)
                .map_err(|violation| syn::Error::new(int.span(), violation))
        }
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err(syn::Error::new_spanned(
            expr,
            format!("`{key}` must be a whole number of at least 1, not a negative number"),
        )),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "expected a whole number of at least 1, e.g. `{key} = 5`{}",
                literal_only(key, expr)
            ),
        )),
    }
}

/// `max_concurrent = N`, or an adaptive limit `MIN..=MAX` written with
/// integer literals, checked by `failfast_rules::adaptive_concurrency`.
pub(crate) fn concurrency(input: ParseStream) -> syn::Result<Concurrency> {
    const EXAMPLE: &str = "e.g. `max_concurrent = 10..=200`";
    let expr: Expr = input.parse()?;
    let range = match &expr {
        Expr::Range(range) => range,
        // The text of a configuration file, `max_concurrent = "10..=200"`.
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) if text.value().contains("..") => {
            return Err(syn::Error::new(
                text.span(),
                format!(
                    "an adaptive `max_concurrent` is a range written without quotes, \
                     `MIN..=MAX`: `max_concurrent = {}`",
                    text.value().trim()
                ),
            ));
        }
        _ => return count_of(&expr, "max_concurrent").map(Concurrency::Fixed),
    };
    let ExprRange {
        start: Some(start),
        end: Some(end),
        ..
    } = range
    else {
        return Err(syn::Error::new_spanned(
            range,
            format!(
                "an adaptive `max_concurrent` needs both ends, its least and most places: \
                 `MIN..=MAX`, {EXAMPLE}"
            ),
        ));
    };
    if let RangeLimits::HalfOpen(dots) = &range.limits {
        let (start, end) = (start.to_token_stream(), end.to_token_stream());
        return Err(syn::Error::new_spanned(
            dots,
            format!(
                "an adaptive `max_concurrent` is written with `..=`, both ends included: \
                 `max_concurrent = {start}..={end}` (from {start} to {end} places), not \
                 `{start}..{end}`"
            ),
        ));
    }
    let bound = |bound: &Expr| match bound {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse::<u64>(),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err(syn::Error::new_spanned(
            bound,
            "the ends of an adaptive `max_concurrent` are whole numbers of at least 1, not \
             negative numbers",
        )),
        _ => Err(syn::Error::new_spanned(
            bound,
            format!(
                "the ends of an adaptive `max_concurrent` are integer literals, {EXAMPLE}; \
                 `max_concurrent` takes no constant"
            ),
        )),
    };
    let (min, max) = (bound(start)?, bound(end)?);
    let checked = match (u32::try_from(min), u32::try_from(max)) {
        (Ok(min), Ok(max)) => rules::adaptive_concurrency(min, max).map_err(|v| v.to_string()),
        // Past `u32`: the rule's sentence without the values.
        _ => Err(rules::adaptive_concurrency(0, 0)
            .unwrap_err()
            .brief()
            .to_owned()),
    };
    checked
        .map(|(min, max)| Concurrency::Adaptive { min, max })
        .map_err(|message| syn::Error::new_spanned(range, message))
}

/// A number written as an integer or float literal, possibly negative.
pub(crate) fn number(input: ParseStream, key: &str, example: &str) -> syn::Result<(f64, Expr)> {
    let expr: Expr = input.parse()?;
    let (negative, lit) = match &expr {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => (true, &**inner),
        other => (false, other),
    };
    let value = match lit {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>()?,
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>()?,
        _ => {
            return Err(syn::Error::new_spanned(
                &expr,
                format!("expected a number, e.g. `{key} = {example}`"),
            ));
        }
    };
    Ok((if negative { -value } else { value }, expr))
}

/// A plain setting's value, read as its kind says (a count, a number, a
/// duration) and held to its rule.
pub(crate) fn plain(input: ParseStream, key: Key) -> syn::Result<Value> {
    let name = key.name();
    Ok(match key.kind() {
        Kind::Count => Value::Count(count(input, name)?),
        Kind::Number(rule, example) => {
            let (value, expr) = number(input, name, example)?;
            Value::Number(rule(value).map_err(|v| syn::Error::new_spanned(&expr, v))?)
        }
        Kind::Duration => Value::Duration(duration(input, name)?),
        Kind::Shaped => unreachable!("`{name}` is read by a parser of its own"),
    })
}

fn duration_lit(input: ParseStream, key: &str) -> syn::Result<LitStr> {
    if input.peek(LitStr) {
        return input.parse();
    }
    let expr: Expr = input.parse()?;
    Err(syn::Error::new_spanned(
        &expr,
        format!(
            "expected a duration string, e.g. `{key} = \"30s\"` or `{key} = \"250ms\"`{}",
            literal_only(key, &expr)
        ),
    ))
}

/// A duration in the grammar the runtime's overrides read too, longer than
/// zero.
fn parse_duration(text: &str, lit: &LitStr, key: &str) -> syn::Result<Duration> {
    let value = rules::parse_duration(text).map_err(|e| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid duration {text:?} for `{key}`: {e}; \
                 write e.g. \"250ms\", \"30s\", \"2m\" or \"1h 30m\""
            ),
        )
    })?;
    rules::duration(rule_key(key), value)
        .map_err(|violation| syn::Error::new(lit.span(), violation))
}

/// A duration string such as `"30s"`, parsed now so a typo is a compile error.
pub(crate) fn duration(input: ParseStream, key: &str) -> syn::Result<Duration> {
    let lit = duration_lit(input, key)?;
    parse_duration(&lit.value(), &lit, key)
}

/// `"30s"`, or `"30s..10m"`: the open time starts at 30s, doubles each time
/// the breaker opens again, and never exceeds 10m.
pub(crate) fn recovery(input: ParseStream) -> syn::Result<Recovery> {
    growing(input, "recovery", "open time", "\"30s..10m\"")
}

/// A duration, or a growing one `"START..MAX"` (`recovery`, `backoff`):
/// `what` names what grows in messages, `example` is a range to copy.
pub(crate) fn growing(
    input: ParseStream,
    key: &str,
    what: &str,
    example: &str,
) -> syn::Result<Recovery> {
    let lit = duration_lit(input, key)?;
    let text = lit.value();
    let Some((start, max)) = text.split_once("..") else {
        return Ok(Recovery {
            start: parse_duration(&text, &lit, key)?,
            max: None,
        });
    };
    if start.trim().is_empty() || max.trim().is_empty() {
        return Err(syn::Error::new(
            lit.span(),
            format!("a growing `{key}` needs both ends: \"START..MAX\", e.g. {example}"),
        ));
    }
    let start_value = parse_duration(start, &lit, key)?;
    let max_value = parse_duration(max.trim_start_matches('='), &lit, key)?;
    // The rule of `max_recovery`, the end a growing `recovery` is written
    // with; a growing `backoff` keeps to it too.
    if rules::max_recovery(start_value, max_value).is_err() {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "the {what} of `{key}` grows from {:?} up to {:?}, so the maximum \
                 must not be shorter than the start",
                start.trim(),
                max.trim()
            ),
        ));
    }
    Ok(Recovery {
        start: start_value,
        max: Some(max_value),
    })
}

/// The path of a function as an expression (`cached`, `Self::cached`,
/// `cached::<u32>`, `<Self as Cache>::cached`), or a closure of the error
/// alone (`|error| cached(error)`).
pub(crate) fn fallback(input: ParseStream) -> syn::Result<Fallback> {
    if input.peek(Token![|]) || input.peek(Token![||]) || input.peek(Token![move]) {
        let closure: ExprClosure = input.parse()?;
        if closure.inputs.len() != 1 {
            return Err(syn::Error::new_spanned(
                &closure.inputs,
                "a `fallback` closure takes the error alone, a `failfast::Error<E>`: \
                 `fallback = |error| cached(error)`; to be given the function's arguments \
                 too, name a function: `fallback = cached`",
            ));
        }
        return Ok(Fallback::Closure(closure));
    }
    if input.peek(syn::token::Brace) {
        return input.parse().map(Fallback::Prepared);
    }
    fallback_path(input).map(Fallback::Path)
}

fn fallback_path(input: ParseStream) -> syn::Result<ExprPath> {
    const EXPECTED: &str = "expected the path of a function, e.g. `fallback = cached_stock` or \
                            `fallback = Self::cached_stock`";
    if input.peek(Ident::peek_any) || input.peek(Token![::]) || input.peek(Token![<]) {
        let path: ExprPath = input.parse()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Ok(path);
        }
        if input.peek(Token![<]) {
            return Err(input.error(
                "generic arguments of a `fallback` are written with `::<`, as in an \
                 expression: `fallback = cached::<u32>`",
            ));
        }
        if input.peek(syn::token::Paren) {
            let arguments: TokenTree = input.parse()?;
            let written = if path.qself.is_none() {
                path.to_token_stream().to_string().replace(' ', "")
            } else {
                "cached_stock".to_owned()
            };
            return Err(syn::Error::new(
                arguments.span(),
                format!(
                    "`fallback` takes the path of a function, not a call: the attribute calls \
                     it with the function's arguments and a `failfast::Error`; write \
                     `fallback = {written}`"
                ),
            ));
        }
        return Err(input.error(format!("{EXPECTED}; expected `,` after the path")));
    }
    let expr: Expr = input.parse()?;
    Err(syn::Error::new_spanned(&expr, EXPECTED))
}

/// The path of a `fn(failfast::Rejected) -> E`.
pub(crate) fn reject_with(input: ParseStream) -> syn::Result<ExprPath> {
    const EXPECTED: &str = "expected the path of a function from `failfast::Rejected` to the \
                            function's error type, e.g. `reject_with = unavailable`";
    let expr: Expr = input.parse()?;
    match expr {
        Expr::Path(path) => Ok(path),
        other => Err(syn::Error::new_spanned(&other, EXPECTED)),
    }
}

pub(crate) fn registry_name(input: ParseStream) -> syn::Result<LitStr> {
    if !input.peek(LitStr) {
        let expr: Expr = input.parse()?;
        return Err(syn::Error::new_spanned(
            &expr,
            "expected a string literal, e.g. `name = \"inventory\"`",
        ));
    }
    let lit: LitStr = input.parse()?;
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(lit.span(), "`name` must not be empty"));
    }
    Ok(lit)
}

/// `crate = path` or, as tokio accepts it, `crate = "path"`.
pub(crate) fn crate_path(input: ParseStream) -> syn::Result<Path> {
    const EXPECTED: &str = "expected the path of the failfast crate, e.g. `crate = ::failfast`";
    let path = if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        lit.parse_with(Path::parse_mod_style)
            .map_err(|_| syn::Error::new(lit.span(), EXPECTED))?
    } else {
        input
            .call(Path::parse_mod_style)
            .map_err(|e| syn::Error::new(e.span(), EXPECTED))?
    };
    // Generated code imports from it (`use CRATE::__private::..`), where
    // `Self` cannot be written; no crate is reached through `Self` anyway.
    if let Some(self_type) = path.segments.iter().find(|s| s.ident == "Self") {
        return Err(syn::Error::new(self_type.ident.span(), EXPECTED));
    }
    Ok(path)
}

/// `breaker = PAYMENTS`: the path of a breaker declared with
/// `failfast::breaker!`.
pub(crate) fn shared_breaker(input: ParseStream) -> syn::Result<Path> {
    let expr: Expr = input.parse()?;
    match expr {
        Expr::Path(path) if path.qself.is_none() => Ok(path.path),
        other => Err(syn::Error::new_spanned(
            &other,
            "expected the path of a breaker declared with `failfast::breaker!`, e.g. \
             `breaker = PAYMENTS`",
        )),
    }
}
