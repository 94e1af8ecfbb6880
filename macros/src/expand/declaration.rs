//! `failfast::breaker!(static NAME = key = value, ...);`: a breaker declared
//! once, for several functions to use with `breaker = NAME`. Its settings
//! have the attribute's grammar and checks, restricted to the keys that
//! configure a breaker (`attr::BREAKER_KEYS`); with `max_keys` it is a keyed
//! family, each function giving its own `key = …`.
//!
//! ```text
//! static NAME: CRATE::Breaker = CRATE::Breaker::from_config(CONFIG);
//! static NAME: CRATE::__private::KeyedSlot =                      // `max_keys`
//!     CRATE::__private::KeyedSlot::new(CONFIG, MAX_KEYS, None, Duration::ZERO, MAX_EJECTION_PERCENT);
//! ```

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;

use super::config::config;
use crate::attr::declaration::Declaration;
use crate::attr::{Args, Errors};
use crate::check;
use crate::tokens::{allow, runtime};
use failfast_rules::Key;

pub fn breaker(input: TokenStream) -> TokenStream {
    let declaration = match syn::parse2::<Declaration>(input) {
        Ok(declaration) => declaration,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Errors::default();
    let args = Args::parse_declaration(declaration.settings.clone(), &mut errors);
    let checked = check::declaration(args, &mut errors);
    let args = &checked.args;
    let Declaration {
        attrs, vis, ident, ..
    } = &declaration;
    let krate = runtime(args.krate.as_ref().map(|k| &k.value));
    let private = quote!(#krate::__private);
    let allow = allow();
    match errors.into_result() {
        None => {
            let name = ident.unraw().to_string();
            let default_name = quote!(::core::concat!(::core::module_path!(), "::", #name));
            let config = config(&checked, default_name, &private);
            match args.count(Key::MaxKeys) {
                Some(max_keys) => {
                    let max_keys = proc_macro2::Literal::usize_unsuffixed(max_keys.value as usize);
                    let budget = proc_macro2::Literal::u32_unsuffixed(
                        args.count(Key::MaxEjectionPercent)
                            .map_or(failfast_rules::MAX_EJECTION_PERCENT, |n| n.value),
                    );
                    let declared = super::declare::family_registration(
                        &ident.to_token_stream(),
                        ident.span(),
                        &private,
                        &allow,
                    );
                    quote! {
                        #(#attrs)*
                        #allow
                        #vis static #ident: #private::KeyedSlot =
                            #private::KeyedSlot::new(#config, #max_keys, ::core::option::Option::None, ::core::time::Duration::ZERO, #budget);
                        #allow
                        const _: () = { #declared };
                    }
                }
                None => {
                    let declared = super::declare::registration(
                        &ident.to_token_stream(),
                        ident.span(),
                        &private,
                        &allow,
                    );
                    quote! {
                        #(#attrs)*
                        #allow
                        #vis static #ident: #krate::Breaker = #krate::Breaker::from_config(#config);
                        #allow
                        const _: () = { #declared };
                    }
                }
            }
        }
        // The breaker is still declared, with default settings, so that
        // the functions using it keep type-checking; the errors say what
        // to fix.
        Some(error) => {
            let error = error.to_compile_error();
            let name = ident.to_string();
            quote! {
                #error
                #(#attrs)*
                #vis static #ident: #krate::Breaker =
                    #krate::Breaker::from_config(#private::ConstConfig::new(#name).into_config());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::Item;

    /// The items of the expansion, and whether errors come first.
    fn expanded(input: &str) -> (usize, Vec<Item>) {
        let file: syn::File = syn::parse2(breaker(input.parse().unwrap())).unwrap();
        let errors = file
            .items
            .iter()
            .take_while(|item| matches!(item, Item::Macro(m) if m.mac.path.segments.last().unwrap().ident == "compile_error"))
            .count();
        (errors, file.items[errors..].to_vec())
    }

    fn statics(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .filter_map(|item| match item {
                Item::Static(s) => Some(s.ident.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_expansion_declares_the_static() {
        for input in [
            "static PAYMENTS = threshold = 5;",
            "pub static PAYMENTS = max_keys = 8, max_ejection_percent = 50",
        ] {
            let (errors, items) = expanded(input);
            assert_eq!(errors, 0, "{input}");
            assert_eq!(statics(&items), ["PAYMENTS"], "{input}");
        }
        // A mistake in the settings: the errors, and the breaker still
        // declared, so that the functions using it keep type-checking.
        let (errors, items) = expanded("static PAYMENTS = treshold = 5");
        assert_eq!(errors, 1);
        assert_eq!(statics(&items), ["PAYMENTS"]);
        // Not a declaration: the error alone.
        let (errors, items) = expanded("PAYMENTS");
        assert_eq!((errors, items.len()), (1, 0));
    }
}
