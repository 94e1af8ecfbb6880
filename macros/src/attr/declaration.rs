//! `failfast::breaker!(static NAME = key = value, ...);`: the declaration's
//! own grammar around the settings, which are parsed as the attribute's.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, Visibility};

/// `#[attrs] vis static NAME = settings`, an optional `;` after.
pub struct Declaration {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub ident: Ident,
    pub settings: TokenStream,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(tokens: &str) -> Result<Declaration, String> {
        syn::parse_str::<Declaration>(tokens).map_err(|e| e.to_string())
    }

    #[test]
    fn a_declaration_is_one_static_with_its_settings() {
        for tokens in [
            r#"static PAYMENTS = threshold = 5, recovery = "30s";"#,
            r#"pub static PAYMENTS = threshold = 5"#,
            r#"/// Docs. 
               pub(crate) static PAYMENTS = threshold = 5;"#,
        ] {
            let declaration = parsed(tokens).unwrap_or_else(|e| panic!("{tokens}: {e}"));
            assert_eq!(declaration.ident, "PAYMENTS");
            assert!(
                declaration
                    .settings
                    .to_string()
                    .starts_with("threshold = 5")
            );
        }
        let missing = parsed("PAYMENTS = threshold = 5").err().unwrap();
        assert!(
            missing.starts_with("expected `static NAME = settings`"),
            "{missing}"
        );
        let two = parsed("static A = threshold = 5; static B = threshold = 3;").err();
        assert_eq!(two.as_deref(), Some("one breaker per `failfast::breaker!`"));
    }
}
