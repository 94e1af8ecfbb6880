//! What the expansion is, as items: the guarded function with the
//! signature as written, or `compile_error!`s and the function as written.
//! What the generated code does is tested by compiling and running it: the
//! ui suite (`ui/`) and the facade's tests (`tests/`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Item, ItemFn};

use super::circuit_breaker;

/// The messages of the `compile_error!`s, and the function after them.
fn expanded(args: &str, item: &str) -> (Vec<String>, ItemFn) {
    let out = circuit_breaker(args.parse().unwrap(), item.parse().unwrap());
    let file: syn::File = syn::parse2(out).expect("items");
    let (last, errors) = file.items.split_last().expect("an item");
    let messages = errors
        .iter()
        .map(|item| match item {
            Item::Macro(mac) if mac.mac.path.segments.last().unwrap().ident == "compile_error" => {
                mac.mac.parse_body::<syn::LitStr>().unwrap().value()
            }
            other => panic!("not a compile_error!: {}", other.to_token_stream()),
        })
        .collect();
    let Item::Fn(func) = last else {
        panic!("not a function: {}", last.to_token_stream());
    };
    (messages, func.clone())
}

fn text(tokens: impl ToTokens) -> String {
    tokens.to_token_stream().to_string()
}

#[test]
fn a_mistake_still_emits_the_function_as_written() {
    let item = "fn fetch() -> Result<u32, E> { Ok(1) }";
    let (errors, func) = expanded("treshold = 5", item);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("unknown argument `treshold` (did you mean `threshold`?)"));
    assert_eq!(text(&func), text(syn::parse_str::<ItemFn>(item).unwrap()));
}

#[test]
fn the_guarded_function_keeps_its_signature_and_attributes() {
    for item in [
        "#[inline] pub fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
        "pub(crate) async fn fetch<T: Clone>(value: T) -> Result<T, E> where T: Send { Ok(value) }",
        "fn by_ref(&self, sku: &str) -> std::io::Result<&str> { Ok(sku) }",
    ] {
        let written: ItemFn = syn::parse_str(item).unwrap();
        let (errors, func) = expanded("threshold = 2", item);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(text(&func.sig), text(&written.sig));
        assert_eq!(text(&func.vis), text(&written.vis));
        assert_eq!(func.attrs.len(), written.attrs.len());
        assert_ne!(text(&func.block), text(&written.block));
    }
}

/// Found by the grammar fuzz: `fallback = cached<u32>` was taken as a
/// type path and emitted as `cached<u32>(..)`, which is not an expression.
#[test]
fn fallback_paths_are_expression_paths() {
    let sync = "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }";
    for fallback in ["cached::<u32>", "<Self as Cache>::cached", "Self::cached"] {
        let (errors, _) = expanded(&format!("fallback = {fallback}"), sync);
        assert!(errors.is_empty(), "{fallback}: {errors:?}");
    }
    let (errors, _) = expanded("fallback = cached<u32>", sync);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("`fallback = cached::<u32>`"),
        "{errors:?}"
    );
}

#[test]
fn retry_below_the_breaker_is_one_error() {
    let (errors, func) = expanded(
        "threshold = 2",
        "#[retry(attempts = 2)] fn fetch() -> Result<u32, E> { Ok(1) }",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("`#[retry]` must be written above `#[circuit_breaker]`"));
    assert_eq!(func.attrs.len(), 1);
}

#[test]
fn not_a_function_is_one_error_and_the_item_as_written() {
    let out = circuit_breaker(TokenStream::new(), "struct NotAFunction;".parse().unwrap());
    let file: syn::File = syn::parse2(out).unwrap();
    assert_eq!(file.items.len(), 2);
    assert!(matches!(&file.items[1], Item::Struct(_)));
}
