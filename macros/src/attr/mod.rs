//! The first stage: the arguments of `#[circuit_breaker(key = value, ...)]`
//! (and of `failfast::breaker!`, and of `#[retry]` in `retry`) parsed into a
//! model, [`Args`]: each key's value as a Rust value, held to its own rule
//! as it is read (`value`), with where it was written. Checks between keys
//! are the next stage's (`crate::check`); nothing here generates code.

pub(crate) mod constant;
pub(crate) mod declaration;
pub(crate) mod grammar;
pub(crate) mod matcher;
pub(crate) mod retry;
pub(crate) mod value;

use std::sync::LazyLock;
use std::time::Duration;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Expr, ExprBlock, ExprClosure, ExprPath, Ident, LitStr, Path};

use failfast_rules::{Key, Kind, Place, Value};

pub use constant::Const;
pub use grammar::Errors;
use grammar::{parse_arguments, parse_key, set, set_twice};
pub use matcher::Matcher;
use value::{
    concurrency, count, crate_path, duration, fallback, recovery, registry_name, reject_with,
    shared_breaker,
};

/// The attribute's own keys, which shape the code generated beside the
/// breaker rather than set it: each listed in messages before the setting
/// named with it, or after every setting.
const OWN_KEYS: &[(&str, Option<Key>)] = &[
    ("key", Some(Key::MaxKeys)),
    ("breaker", None),
    ("counts", None),
    ("ignores", None),
    ("counts_ok", None),
    ("fallback", None),
    ("reject_with", None),
    ("name", None),
    ("crate", None),
];

/// Every key the attribute understands, in the order the docs list them:
/// the settings in the order of `failfast_rules::settings_table!`, and the
/// attribute's own keys.
pub(crate) static KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| keys_of(Place::Attribute, OWN_KEYS));

/// The keys that configure a breaker itself: what `failfast::breaker!`
/// declares, and what a function using a shared breaker (`breaker = NAME`)
/// may not set. `max_concurrent` is one as an adaptive limit `MIN..=MAX`,
/// which the breaker keeps; a fixed `max_concurrent = N` is a bulkhead of
/// one function's calls, which a declaration refuses and a function using
/// the breaker may set.
pub(crate) static BREAKER_KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| keys_of(Place::Declaration, &[("name", None), ("crate", None)]));

/// The keys `place` takes, in the order messages list them: its settings
/// in the table's order, and `own` keys, each before the setting named
/// with it or after them all.
fn keys_of(place: Place, own: &[(&'static str, Option<Key>)]) -> Vec<&'static str> {
    let own_before = |at: Option<Key>| {
        own.iter()
            .filter(move |(_, before)| *before == at)
            .map(|(name, _)| *name)
    };
    let mut keys = Vec::new();
    for &key in Key::ALL.iter().filter(|key| key.written_in(place)) {
        keys.extend(own_before(Some(key)));
        keys.push(key.name());
    }
    keys.extend(own_before(None));
    keys
}

/// A key's value and where it was written, so that checks between keys can
/// point at the value.
pub struct Arg<T> {
    pub value: T,
    /// The value's first token, where a mistake in the value is reported.
    pub span: Span,
    /// The key as written, where a mistake in using the key is reported.
    pub key: Span,
}

/// `fallback = path` is called with the function's arguments and the error;
/// `fallback = |error| ..` with the error only, so the body can take its
/// arguments by move; `fallback = { ..; move |error| .. }` is a block run
/// before the body, whose closure keeps what it captured.
pub enum Fallback {
    Path(ExprPath),
    Closure(ExprClosure),
    Prepared(ExprBlock),
}

impl Fallback {
    /// Does the fallback take the function's arguments?
    pub fn takes_arguments(&self) -> bool {
        matches!(self, Fallback::Path(_))
    }
}

/// `window = N` (calls) or `window = "1m"` (a time), and `max_concurrent
/// = N` (a bulkhead of `N` places beside the breaker) or `max_concurrent =
/// MIN..=MAX` (an adaptive limit the breaker itself keeps): the rules'
/// own types, as the resolution of what the keys mean reads them.
pub use failfast_rules::{Concurrency, Window};

/// `recovery = "30s"` or the growing form `recovery = "30s..10m"`; also
/// `#[retry]`'s `backoff`.
pub struct Recovery {
    pub start: Duration,
    pub max: Option<Duration>,
}

#[derive(Default)]
pub struct Args {
    /// The plain settings given a literal (a count, a number, a duration:
    /// each key whose `failfast_rules::Kind` is not `Shaped`), in the
    /// order they were written; see [`Args::setting`].
    settings: Vec<(Key, Arg<Value>)>,
    pub window: Option<Arg<Window>>,
    /// `max_concurrent = 8` or `max_concurrent = 2..=8`.
    pub max_concurrent: Option<Arg<Concurrency>>,
    pub recovery: Option<Arg<Recovery>>,
    pub counts: Option<Arg<Matcher>>,
    pub ignores: Option<Arg<Matcher>>,
    /// `counts_ok = …`: which `Ok` values count as failures (a pattern or a
    /// predicate over the value, or a classifier type of the `Result`).
    pub counts_ok: Option<Arg<Matcher>>,
    pub fallback: Option<Arg<Fallback>>,
    pub reject_with: Option<Arg<ExprPath>>,
    /// `key = expr`: one breaker per value of `expr`.
    pub key: Option<Arg<Expr>>,
    /// `breaker = PATH`: a breaker declared with `failfast::breaker!`.
    pub breaker: Option<Arg<Path>>,
    pub name: Option<Arg<LitStr>>,
    pub krate: Option<Arg<Path>>,
    /// Keys given a constant expression instead of a literal (see
    /// `constant`), in the order they were written.
    pub consts: Vec<Const>,
    /// Every known key as written, valid value or not: checks between keys
    /// look at what was written, so a bad value is not reported a second time
    /// as a missing key.
    written: Vec<Ident>,
}

impl Args {
    /// Parses the attribute's arguments. Never fails as a whole: a mistake is
    /// recorded in `errors` and parsing goes on with the next `key = value`.
    pub fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        parse_arguments(tokens, errors, |input| args.parse_one(input, &KEYS));
        args
    }

    /// Parses the settings of `failfast::breaker!`: the keys of
    /// [`BREAKER_KEYS`] only.
    pub fn parse_declaration(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        parse_arguments(tokens, errors, |input| {
            if let Ok(key) = input.fork().call(Ident::parse_any) {
                let name = key.unraw().to_string();
                if KEYS.contains(&name.as_str()) && !BREAKER_KEYS.contains(&name.as_str()) {
                    input.call(Ident::parse_any)?;
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "`{name}` is set by each function that uses the breaker, not where \
                             it is declared: write it in `#[circuit_breaker(breaker = NAME, \
                             {name} = …)]`"
                        ),
                    ));
                }
            }
            args.parse_one(input, &BREAKER_KEYS)
        });
        args
    }

    fn parse_one(&mut self, input: ParseStream, keys: &[&str]) -> syn::Result<()> {
        let (key, name) = parse_key(input, keys)?;
        self.written.push(key.clone());
        let span = input.span();
        if constant::kind(&name).is_some()
            && self.written.iter().filter(|k| k.unraw() == name).count() > 1
        {
            return Err(set_twice(&key));
        }
        if constant::is_const(input, &name) {
            let expr: Expr = input.parse()?;
            let setting = value::rule_key(&name);
            self.consts.push(Const {
                key: key.span(),
                setting,
                expr,
            });
            return Ok(());
        }
        let setting = Key::from_name(&name);
        if let Some(setting) = setting.filter(|s| !matches!(s.kind(), Kind::Shaped)) {
            let value = value::plain(input, setting)?;
            if self.setting(setting).is_some() {
                return Err(set_twice(&key));
            }
            let arg = Arg {
                value,
                span,
                key: key.span(),
            };
            self.settings.push((setting, arg));
            return Ok(());
        }
        match name.as_str() {
            "window" => {
                let window = if input.peek(LitStr) {
                    Window::Time(duration(input, &name)?)
                } else {
                    Window::Calls(count(input, &name)?)
                };
                set(&mut self.window, &key, span, window)
            }
            "max_concurrent" => set(&mut self.max_concurrent, &key, span, concurrency(input)?),
            "recovery" => set(&mut self.recovery, &key, span, recovery(input)?),
            "counts" => set(&mut self.counts, &key, span, input.call(Matcher::parse)?),
            "ignores" => set(&mut self.ignores, &key, span, input.call(Matcher::parse)?),
            "counts_ok" => set(&mut self.counts_ok, &key, span, input.call(Matcher::parse)?),
            "fallback" => set(&mut self.fallback, &key, span, fallback(input)?),
            "reject_with" => set(&mut self.reject_with, &key, span, reject_with(input)?),
            "key" => set(&mut self.key, &key, span, input.parse()?),
            "breaker" => set(&mut self.breaker, &key, span, shared_breaker(input)?),
            "name" => set(&mut self.name, &key, span, registry_name(input)?),
            "crate" => set(&mut self.krate, &key, span, crate_path(input)?),
            _ => unreachable!("every entry of KEYS has a parser"),
        }
    }

    /// A plain setting given a literal: its value, and where it was
    /// written.
    pub(crate) fn setting(&self, key: Key) -> Option<&Arg<Value>> {
        self.settings
            .iter()
            .find(|(setting, _)| *setting == key)
            .map(|(_, arg)| arg)
    }

    /// The plain settings given a literal, in the order they were written.
    pub(crate) fn settings(&self) -> impl Iterator<Item = (Key, &Arg<Value>)> {
        self.settings.iter().map(|(key, arg)| (*key, arg))
    }

    /// A count given as a literal (`threshold = 5`).
    pub(crate) fn count(&self, key: Key) -> Option<Arg<u32>> {
        self.typed(key, |value| match value {
            Value::Count(n) => Some(n),
            _ => None,
        })
    }

    /// A duration given as a literal (`timeout = "2s"`).
    pub(crate) fn duration(&self, key: Key) -> Option<Arg<Duration>> {
        self.typed(key, |value| match value {
            Value::Duration(d) => Some(d),
            _ => None,
        })
    }

    fn typed<T>(&self, key: Key, of: fn(Value) -> Option<T>) -> Option<Arg<T>> {
        let arg = self.setting(key)?;
        Some(Arg {
            value: of(arg.value)?,
            span: arg.span,
            key: arg.key,
        })
    }

    /// `max_concurrent = N`: the places of the function's bulkhead (or of
    /// each key's, in a family of its own).
    pub(crate) fn bulkhead(&self) -> Option<u32> {
        match self.max_concurrent.as_ref()?.value {
            Concurrency::Fixed(n) => Some(n),
            Concurrency::Adaptive { .. } => None,
        }
    }

    /// `max_concurrent = MIN..=MAX`: the adaptive limit's least and most
    /// places, kept by the breaker (no bulkhead).
    pub(crate) fn adaptive_concurrency(&self) -> Option<(u32, u32)> {
        match self.max_concurrent.as_ref()?.value {
            Concurrency::Adaptive { min, max } => Some((min, max)),
            Concurrency::Fixed(_) => None,
        }
    }

    /// The key as written, if it was, valid value or not.
    pub(crate) fn written(&self, name: &str) -> Option<&Ident> {
        self.written.iter().find(|key| key.unraw() == name)
    }

    /// When both keys are written, the one written last: where a
    /// contradiction between them is reported.
    pub(crate) fn later_of(&self, a: &str, b: &str) -> Option<&Ident> {
        let (a, b) = (self.written(a)?, self.written(b)?);
        let position = |key: &Ident| self.written.iter().position(|k| k == key);
        Some(if position(a) > position(b) { a } else { b })
    }

    /// Every key as written, in order, valid value or not.
    pub(crate) fn written_keys(&self) -> impl Iterator<Item = &Ident> {
        self.written.iter()
    }
}
