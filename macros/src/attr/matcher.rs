//! `counts = ...` and `ignores = ...`: which `Err`s are evidence that the
//! dependency is sick; `counts_ok = ...`, which `Ok` values are. The form is
//! recognised from the tokens alone:
//!
//! - a closure (`|e: &MyError| e.is_transient()`) is a predicate called with `&E`;
//! - a path whose last segment is snake_case (`is_transient`,
//!   `Self::is_transient`) is a predicate function called with `&E`;
//! - a path of one UpperCamelCase segment, or of lowercase modules ending in
//!   one (`DependencyError`, `std::io::Error`), is a type, looked for by
//!   downcast along the error's `source()` chain;
//! - anything else (`MyError::Timeout`, `MyError::Http(503)`,
//!   `MyError::Io { .. } | MyError::Timeout`) is a pattern over the error.
//!
//! For `counts_ok` the same forms are over the `Ok` value, except a type:
//! an `Ok` has no `source()` chain, so a type there is a classifier of the
//! whole `Result` (`failfast::classify::HttpClassifier`), as the tower
//! layer takes one.

use syn::parse::ParseStream;
use syn::{Expr, ExprPath, Pat, Path, Token};

pub enum Matcher {
    /// A closure or the path of a function, called with `&E`.
    Predicate(Expr),
    /// A type matched by downcast along the `source()` chain.
    Type(Path),
    /// A pattern over `&E`, as in `matches!`.
    Pattern(Pat),
}

impl Matcher {
    pub fn parse(input: ParseStream) -> syn::Result<Matcher> {
        if input.peek(Token![|]) || input.peek(Token![||]) || input.peek(Token![move]) {
            return Ok(Matcher::Predicate(Expr::Closure(input.parse()?)));
        }
        Ok(match Pat::parse_multi(input)? {
            Pat::Ident(pat)
                if pat.by_ref.is_none() && pat.mutability.is_none() && pat.subpat.is_none() =>
            {
                classify_path(Path::from(pat.ident))
            }
            Pat::Path(pat) if pat.qself.is_none() => classify_path(pat.path),
            other => Matcher::Pattern(other),
        })
    }

    /// Does this matcher need the local `__failfast_check` helper?
    pub fn is_predicate(&self) -> bool {
        matches!(self, Matcher::Predicate(_))
    }
}

fn classify_path(path: Path) -> Matcher {
    let last = path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let has_arguments = path.segments.iter().any(|s| !s.arguments.is_none());
    if is_snake_case(&last) {
        return Matcher::Predicate(Expr::Path(ExprPath {
            attrs: Vec::new(),
            qself: None,
            path,
        }));
    }
    let modules_then_type = path
        .segments
        .iter()
        .rev()
        .skip(1)
        // Modules, `crate`, `self` and `super` included, are snake case.
        .all(|s| is_snake_case(&s.ident.to_string()));
    if !has_arguments && modules_then_type && is_type_name(&last) {
        Matcher::Type(path)
    } else {
        Matcher::Pattern(Pat::Path(ExprPath {
            attrs: Vec::new(),
            qself: None,
            path,
        }))
    }
}

fn is_snake_case(ident: &str) -> bool {
    let ident = ident.trim_start_matches("r#");
    ident
        .chars()
        .find(|c| *c != '_')
        .is_some_and(|c| c.is_lowercase())
        && !ident.chars().any(char::is_uppercase)
}

/// `DependencyError` or `E`, but not a constant such as `NOT_FOUND`.
fn is_type_name(ident: &str) -> bool {
    let mut chars = ident.chars();
    let starts_upper = chars.next().is_some_and(char::is_uppercase);
    starts_upper && (ident.len() == 1 || ident.chars().any(char::is_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse::Parser;

    fn kind(tokens: &str) -> &'static str {
        match Matcher::parse.parse_str(tokens).unwrap() {
            Matcher::Predicate(_) => "predicate",
            Matcher::Type(_) => "type",
            Matcher::Pattern(_) => "pattern",
        }
    }

    #[test]
    fn forms_are_recognised_from_tokens() {
        assert_eq!(kind("|e: &E| e.is_transient()"), "predicate");
        assert_eq!(kind("move |e| true"), "predicate");
        assert_eq!(kind("is_transient"), "predicate");
        assert_eq!(kind("Self::is_transient"), "predicate");
        assert_eq!(kind("errors::is_transient"), "predicate");
        assert_eq!(kind("DependencyError"), "type");
        assert_eq!(kind("std::io::Error"), "type");
        assert_eq!(kind("::std::io::Error"), "type");
        assert_eq!(kind("crate::errors::Timeout"), "type");
        assert_eq!(kind("E"), "type");
        assert_eq!(kind("Error::Timeout"), "pattern");
        assert_eq!(kind("errors::Error::Timeout"), "pattern");
        assert_eq!(kind("NOT_FOUND"), "pattern");
        assert_eq!(kind("Error::Http(503)"), "pattern");
        assert_eq!(kind("Error::Io { .. }"), "pattern");
        assert_eq!(kind("Error::Io { .. } | Error::Timeout"), "pattern");
        assert_eq!(kind("Error::Http(500..=599)"), "pattern");
        assert_eq!(kind("_"), "pattern");
        // Binding forms and qualified paths are patterns, not names.
        assert_eq!(kind("ref e"), "pattern");
        assert_eq!(kind("mut e"), "pattern");
        assert_eq!(kind("e @ Error::Timeout"), "pattern");
        assert_eq!(kind("<E as Trait>::Timeout"), "pattern");
        assert_eq!(kind("<E>::Timeout"), "pattern");
        assert_eq!(kind("|| true"), "predicate");
        // Paths through `crate`, `self` and `super` to a type.
        assert_eq!(kind("crate::Timeout"), "type");
        assert_eq!(kind("self::Timeout"), "type");
        assert_eq!(kind("super::errors::Timeout"), "type");
        // Snake case is all lowercase after any leading underscores.
        assert_eq!(kind("_transient"), "predicate");
        assert_eq!(kind("is_Transient"), "pattern");
    }

    #[test]
    fn only_predicates_need_the_helper() {
        let parse = |tokens| Matcher::parse.parse_str(tokens).unwrap();
        assert!(parse("|e: &E| true").is_predicate());
        assert!(parse("is_transient").is_predicate());
        assert!(!parse("DependencyError").is_predicate());
        assert!(!parse("E::Timeout").is_predicate());
    }
}
