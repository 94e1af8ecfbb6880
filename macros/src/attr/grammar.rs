//! The grammar every attribute shares: `key = value` lists, each key set
//! once, unknown keys with a suggestion, and errors collected so that one
//! compile run reports every mistake.

use proc_macro2::{Spacing, Span, TokenTree};
use syn::Ident;
use syn::Token;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};

use super::Arg;

/// Collects independent mistakes so that one compile run reports all of them.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn into_result(self) -> Option<syn::Error> {
        self.0
    }

    /// Every message, in order: for tests.
    #[cfg(test)]
    pub fn messages(self) -> Vec<String> {
        self.0
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }
}

/// Stores a key's value, or reports the key as given twice. The one place
/// duplicates are handled, for every key.
pub(crate) fn set<T>(
    slot: &mut Option<Arg<T>>,
    key: &Ident,
    span: Span,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(set_twice(key));
    }
    *slot = Some(Arg {
        value,
        span,
        key: key.span(),
    });
    Ok(())
}

/// A key given a second time, reported at the key.
pub(crate) fn set_twice(key: &Ident) -> syn::Error {
    syn::Error::new(
        key.span(),
        format!("`{}` is set more than once", key.unraw()),
    )
}

/// Parses `key = value, ...` with `parse_one` for each argument. Never fails
/// as a whole: a mistake is recorded in `errors` and parsing goes on with the
/// next `key = value`, so one compile run reports every mistake.
pub(crate) fn parse_arguments(
    tokens: proc_macro2::TokenStream,
    errors: &mut Errors,
    mut parse_one: impl FnMut(ParseStream) -> syn::Result<()>,
) {
    let parser = |input: ParseStream| {
        while !input.is_empty() {
            if let Err(error) = parse_one(input) {
                errors.push(error);
                skip_to_next_key(input)?;
            }
            if input.is_empty() {
                break;
            }
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else {
                errors.push(input.error("expected `,` before the next argument"));
                skip_to_next_key(input)?;
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                }
            }
        }
        Ok(())
    };
    if let Err(error) = parser.parse2(tokens) {
        errors.push(error);
    }
}

/// `key =`, where `key` is one of `keys`: the key as written and its name.
pub(crate) fn parse_key(input: ParseStream, keys: &[&str]) -> syn::Result<(Ident, String)> {
    let key = if input.peek(Ident::peek_any) {
        input.call(Ident::parse_any)?
    } else {
        return Err(input.error(format!(
            "expected an argument `key = value`, one of {}",
            key_list(keys)
        )));
    };
    let name = key.unraw().to_string();
    if !keys.contains(&name.as_str()) {
        let hint = suggest(&name, keys)
            .map(|k| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
        return Err(syn::Error::new(
            key.span(),
            format!(
                "unknown argument `{name}`{hint}; expected one of {}",
                key_list(keys)
            ),
        ));
    }
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{name}` needs a value: `{name} = ...`"),
        ));
    }
    input.parse::<Token![=]>()?;
    Ok((key, name))
}

fn key_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The closest key within two edits, for typos such as `treshold`.
pub(crate) fn suggest<'k>(unknown: &str, keys: &[&'k str]) -> Option<&'k str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    keys.iter()
        .map(|k| (distance(unknown, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

/// After a mistake, skips to the `,` that starts the next `key =`, so one bad
/// value does not hide the mistakes after it. A comma inside a closure's
/// parameter list is not followed by `key =`, so it is skipped over.
fn skip_to_next_key(input: ParseStream) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            if let TokenTree::Punct(p) = &tt {
                if p.as_char() == ',' && starts_key(next) {
                    return Ok(((), rest));
                }
            }
            rest = next;
        }
        Ok(((), rest))
    })
}

fn starts_key(cursor: syn::buffer::Cursor) -> bool {
    let Some((_, after_ident)) = cursor.ident() else {
        return false;
    };
    match after_ident.punct() {
        Some((eq, after_eq)) => {
            eq.as_char() == '='
                && (eq.spacing() == Spacing::Alone
                    || after_eq.punct().is_none_or(|(p, _)| p.as_char() != '='))
        }
        None => false,
    }
}
