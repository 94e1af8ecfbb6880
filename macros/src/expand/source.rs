//! Where a guarded function's breaker comes from, and the code that finds
//! it on each call:
//!
//! ```text
//! // its own breaker (no `key`, no `breaker`):
//! static __FAILFAST_BREAKER: Breaker = Breaker::from_config(CONFIG);
//! let __failfast_breaker: &'static Breaker = breaker(&__FAILFAST_BREAKER);
//! .. acquire(__failfast_breaker) ..
//!
//! // its own family (`key = expr`):
//! static __FAILFAST_FAMILY: KeyedSlot =
//!     KeyedSlot::new(CONFIG, MAX_KEYS, MAX_CONCURRENT, MAX_WAIT, MAX_EJECTION_PERCENT);
//! let __failfast_member = member(&__FAILFAST_FAMILY, &(expr));   // at `expr`: Key; a Lease, held for the call
//! let __failfast_breaker: &Breaker = &__failfast_member;           // a Lease derefs to its breaker
//! .. acquire_member(&__failfast_member) ..
//!
//! // a shared breaker (`breaker = PAYMENTS`), or family (with `key`):
//! let __failfast_breaker: &'static Breaker = breaker(&PAYMENTS);  // at `PAYMENTS`
//! let __failfast_member = member(&PAYMENTS, &(expr));            // at `PAYMENTS`
//! ```
//!
//! With `max_concurrent = N`, a function's own family gives each key its own
//! bulkhead; otherwise the function has one, in
//! `static __FAILFAST_BULKHEAD: Bulkhead`. An adaptive `max_concurrent =
//! MIN..=MAX` is in `CONFIG` (`.adaptive_concurrency(MIN, MAX)`): the breaker
//! keeps the limit, each key's breaker its own, and there is no bulkhead.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Path};

use failfast_rules::{DEFAULT_MAX_KEYS, Key, MAX_EJECTION_PERCENT};

use super::config::config;
use crate::check::Breaker as Checked;
use crate::tokens::{duration, respan};

enum Breaker<'a> {
    /// The function's own `static` breaker, with these settings.
    Own(TokenStream),
    /// The function's own family, with these settings.
    OwnFamily(TokenStream, &'a Expr),
    /// `breaker = PATH`, without and with `key`.
    Shared(&'a Path),
    SharedFamily(&'a Path, &'a Expr),
}

pub(crate) struct Source<'a> {
    breaker: Breaker<'a>,
    private: &'a TokenStream,
    allow: &'a TokenStream,
    max_keys: u32,
    /// The family's ejection budget, `MAX_EJECTION_PERCENT` (100) for none.
    max_ejection_percent: u32,
    /// `max_concurrent = N` (not an adaptive range, which is in the config).
    max_concurrent: Option<u32>,
    /// `max_wait`, as written: a call waits for a place that long at most.
    max_wait: Option<(std::time::Duration, proc_macro2::Span)>,
    /// Whether the function is an `async fn` (it waits as a future).
    is_async: bool,
    /// Where a missing `keyed` feature is reported: the `key` as written.
    key_span: proc_macro2::Span,
}

impl<'a> Source<'a> {
    pub(crate) fn new(
        checked: &'a Checked,
        is_async: bool,
        default_name: TokenStream,
        private: &'a TokenStream,
        allow: &'a TokenStream,
    ) -> Self {
        let args = &checked.args;
        let key = args.key.as_ref().map(|key| &key.value);
        let breaker = match (&args.breaker, key) {
            (Some(shared), None) => Breaker::Shared(&shared.value),
            (Some(shared), Some(key)) => Breaker::SharedFamily(&shared.value, key),
            (None, None) => Breaker::Own(config(checked, default_name, private)),
            (None, Some(key)) => Breaker::OwnFamily(config(checked, default_name, private), key),
        };
        Source {
            breaker,
            private,
            allow,
            max_keys: args
                .count(Key::MaxKeys)
                .map_or(DEFAULT_MAX_KEYS, |n| n.value),
            max_ejection_percent: args
                .count(Key::MaxEjectionPercent)
                .map_or(MAX_EJECTION_PERCENT, |n| n.value),
            // An adaptive limit is the breaker's own: no bulkhead.
            max_concurrent: args.bulkhead(),
            max_wait: args.duration(Key::MaxWait).map(|d| (d.value, d.key)),
            is_async,
            key_span: args
                .key
                .as_ref()
                .map_or_else(proc_macro2::Span::call_site, |key| key.key),
        }
    }

    /// The statics the function declares: its breaker or family, and its
    /// bulkhead unless each key has one.
    pub(crate) fn statics(&self) -> TokenStream {
        let (private, allow) = (self.private, self.allow);
        let breaker = match &self.breaker {
            Breaker::Own(config) => quote! {
                #allow
                static __FAILFAST_BREAKER: #private::Breaker = #private::Breaker::from_config(#config);
            },
            Breaker::OwnFamily(config, _) => {
                let max_keys = proc_macro2::Literal::usize_unsuffixed(self.max_keys as usize);
                let budget = proc_macro2::Literal::u32_unsuffixed(self.max_ejection_percent);
                let max_concurrent = match self.max_concurrent {
                    Some(n) => {
                        let n = proc_macro2::Literal::u32_unsuffixed(n);
                        quote!(::core::option::Option::Some(#n))
                    }
                    None => quote!(::core::option::Option::None),
                };
                let max_wait = duration(self.max_wait.map_or(std::time::Duration::ZERO, |w| w.0));
                quote! {
                    #allow
                    static __FAILFAST_FAMILY: #private::KeyedSlot =
                        #private::KeyedSlot::new(#config, #max_keys, #max_concurrent, #max_wait, #budget);
                }
            }
            Breaker::Shared(_) | Breaker::SharedFamily(..) => TokenStream::new(),
        };
        let bulkhead = self.function_bulkhead().then(|| {
            let max = proc_macro2::Literal::u32_unsuffixed(self.max_concurrent.unwrap_or(0));
            let max_wait = self.max_wait.map(|(wait, _)| {
                let wait = duration(wait);
                quote!(.max_wait(#wait))
            });
            quote! {
                #allow
                static __FAILFAST_BULKHEAD: #private::Bulkhead = #private::Bulkhead::new(#max) #max_wait;
            }
        });
        quote!(#breaker #bulkhead)
    }

    /// Whether the function has a breaker of its own (no `key`, no
    /// `breaker`), in `__FAILFAST_BREAKER`.
    pub(crate) fn is_own(&self) -> bool {
        matches!(self.breaker, Breaker::Own(_))
    }

    /// Whether the function has a family of its own (`key`, no `breaker`),
    /// in `__FAILFAST_FAMILY`.
    pub(crate) fn is_own_family(&self) -> bool {
        matches!(self.breaker, Breaker::OwnFamily(..))
    }

    /// Whether the function's own breaker holds the limit of its bulkhead
    /// (`max_concurrent = N`, no `key`, no `breaker`): the limit in force
    /// is the breaker's setting, which it tells the bulkhead.
    pub(crate) fn is_own_bounded(&self) -> bool {
        self.is_own() && self.function_bulkhead()
    }

    /// With `max_concurrent`, whether the function has one bulkhead for all
    /// its calls (not one per key of its own family).
    fn function_bulkhead(&self) -> bool {
        self.max_concurrent.is_some() && !matches!(self.breaker, Breaker::OwnFamily(..))
    }

    /// Statements run first on each call: `__failfast_breaker` (and
    /// `__failfast_member` when keyed) bound.
    pub(crate) fn lookup(&self) -> TokenStream {
        let (private, allow) = (self.private, self.allow);
        let member = |family: TokenStream, key: &Expr| {
            // The key's type is checked at the expression: `Key` is
            // reported there, once.
            let span = key.span();
            let key = quote_spanned!(span=> &(#key));
            let feature = respan(quote!(#private::Keyed), self.key_span);
            quote! {
                #allow
                #private::keyed(#feature);
                #allow
                let __failfast_member = #private::member(#family, #key);
                #allow
                let __failfast_breaker: &#private::Breaker = &__failfast_member;
            }
        };
        match &self.breaker {
            Breaker::Own(_) => quote! {
                #allow
                let __failfast_breaker: &'static #private::Breaker =
                    #private::breaker(&__FAILFAST_BREAKER);
            },
            Breaker::Shared(path) => {
                let call = shared_call(private, "breaker", path);
                quote! {
                    #allow
                    let __failfast_breaker: &'static #private::Breaker = #call;
                }
            }
            Breaker::OwnFamily(_, key) => member(quote!(&__FAILFAST_FAMILY), key),
            Breaker::SharedFamily(path, key) => {
                let span = path.span();
                member(quote_spanned!(span=> &#path), key)
            }
        }
    }

    /// The expression asking for a permit.
    pub(crate) fn acquire(&self) -> TokenStream {
        let private = self.private;
        match &self.breaker {
            Breaker::Own(_) | Breaker::Shared(_) => quote!(#private::acquire(__failfast_breaker)),
            Breaker::OwnFamily(..) | Breaker::SharedFamily(..) => {
                quote!(#private::acquire_member(&__failfast_member))
            }
        }
    }

    /// The expression asking for a place in the bulkhead (`max_concurrent`).
    /// With `max_wait`, the call waits for one: on the thread, or, in an
    /// `async fn`, as a future on tokio's timer (the `WaitTimer` token, at
    /// `max_wait`, is where a missing `tokio` feature is reported); the
    /// permit goes with it, so that the call's time starts once it has a
    /// place.
    pub(crate) fn enter(&self) -> TokenStream {
        let private = self.private;
        let (bulkhead, function) = if self.function_bulkhead() {
            (quote!(&__FAILFAST_BULKHEAD), "enter")
        } else {
            (quote!(&__failfast_member), "enter_member")
        };
        match self.max_wait {
            None => {
                let function = Ident::new(function, proc_macro2::Span::call_site());
                quote!(#private::#function(#bulkhead))
            }
            Some(_) if !self.is_async => {
                let function = format_ident!("{function}_waiting");
                quote!(#private::#function(#bulkhead, &mut __failfast_permit))
            }
            Some((_, span)) => {
                let function = format_ident!("{function}_waiting_async");
                let timer = respan(quote!(#private::WaitTimer), span);
                quote!(#private::#function(#timer, #bulkhead, &mut __failfast_permit).await)
            }
        }
    }
}

/// `private::function(&PATH)`, at `PATH`: a path that is not what the
/// function expects is reported there.
fn shared_call(private: &TokenStream, function: &str, path: &Path) -> TokenStream {
    let span = path.span();
    let function = Ident::new(function, span);
    let path = path.to_token_stream();
    quote_spanned!(span=> #private::#function(&#path))
}
