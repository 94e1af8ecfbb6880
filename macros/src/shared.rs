//! `failfast::breaker!(static NAME = key = value, ...);`: a breaker declared
//! once, for several functions to use with `breaker = NAME`. Its settings
//! have the attribute's grammar and checks, restricted to the keys that
//! configure a breaker (`args::BREAKER_KEYS`); with `max_keys` it is a keyed
//! family, each function giving its own `key = …`.
//!
//! ```text
//! static NAME: CRATE::Breaker = CRATE::Breaker::from_config(CONFIG);
//! static NAME: CRATE::__private::KeyedSlot =                      // `max_keys`
//!     CRATE::__private::KeyedSlot::new(CONFIG, MAX_KEYS, None);
//! ```

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, Visibility};

use crate::args::{Args, Errors};
use crate::expand::{allow, config, runtime};

/// `#[attrs] vis static NAME = settings`, an optional `;` after.
struct Declaration {
    attrs: Vec<Attribute>,
    vis: Visibility,
    ident: Ident,
    settings: TokenStream,
}

impl Parse for Declaration {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        if !input.peek(Token![static]) {
            return Err(input.error(
                "expected `static NAME = settings`, e.g. \
                 `failfast::breaker!(static PAYMENTS = threshold = 5, recovery = \"30s\");`",
            ));
        }
        input.parse::<Token![static]>()?;
        let ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let mut settings = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![;]) {
            settings.extend([input.parse::<proc_macro2::TokenTree>()?]);
        }
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("one breaker per `failfast::breaker!`"));
        }
        Ok(Declaration {
            attrs,
            vis,
            ident,
            settings,
        })
    }
}

pub fn breaker(input: TokenStream) -> TokenStream {
    let declaration = match syn::parse2::<Declaration>(input) {
        Ok(declaration) => declaration,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Errors::default();
    let args = Args::parse_declaration(declaration.settings.clone(), &mut errors);
    let Declaration {
        attrs, vis, ident, ..
    } = &declaration;
    let krate = runtime(args.krate.as_ref());
    let private = quote!(#krate::__private);
    let allow = allow();
    match errors.into_result() {
        None => {
            let name = ident.unraw().to_string();
            let default_name = quote!(::core::concat!(::core::module_path!(), "::", #name));
            let config = config(&args, default_name, &private);
            match &args.max_keys {
                Some(max_keys) => {
                    let max_keys = proc_macro2::Literal::usize_unsuffixed(max_keys.value as usize);
                    quote! {
                        #(#attrs)*
                        #allow
                        #vis static #ident: #private::KeyedSlot =
                            #private::KeyedSlot::new(#config, #max_keys, ::core::option::Option::None);
                    }
                }
                None => {
                    let declared = crate::declare::registration(
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
                    #krate::Breaker::from_config(#private::Config::new(#name));
            }
        }
    }
}
