//! Fuzzing the grammars: generated attribute arguments (of `#[circuit_breaker]`,
//! and of `#[retry]` over a generated breaker), from well-formed
//! `key = value` lists to token soup, go through the expansion on several
//! function shapes. Whatever goes in, the expansion must not panic and must
//! give back either the guarded function or `compile_error!`s followed by the
//! item exactly as written.
//!
//! `cargo test -p failfast-macros` runs 4,000 cases; `PROPTEST_CASES=200000`
//! runs more.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use quote::ToTokens;

use crate::attr::KEYS;

/// Keys as users mistype them, and words that are not keys at all.
const NOT_KEYS: &[&str] = &[
    "treshold",
    "Threshold",
    "r#threshold",
    "r#window",
    "r#type",
    "thresholds",
    "min_call",
    "fallbacks",
    "timeout",
    "self",
    "Self",
    "_",
    "async",
    "move",
    "r#fn",
];

/// Values of every kind: integers (in and out of range, suffixed, negative),
/// floats (inf, negative zero), durations (valid, zero, overflowing, ranges),
/// other literals, paths, closures and patterns.
const VALUES: &[&str] = &[
    "0",
    "1",
    "5",
    "100",
    "101",
    "65535",
    "65536",
    "1048576",
    "1048577",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "-1",
    "-0",
    "1u8",
    "0x10",
    "1_000",
    "0.5",
    "1.0",
    "1",
    "0.0",
    "-0.0",
    "-0.5",
    "1.5",
    "1e3",
    "1e308",
    "1e309",
    "-1e309",
    "0.2f32",
    "\"30s\"",
    "\"250ms\"",
    "\"1ns\"",
    "\"0s\"",
    "\"1h 30m\"",
    "\"30x\"",
    "\"\"",
    "\" \"",
    "\"30s..10m\"",
    "\"10m..30s\"",
    "\"30s..=10m\"",
    "\"..\"",
    "\"..10m\"",
    "\"30s..\"",
    "\"18446744073709551615s\"",
    "\"584942417355y\"",
    "\"inventory\"",
    "\"::failfast\"",
    "\"not a path\"",
    "r\"1s\"",
    "r#\"2s\"#",
    "b\"1s\"",
    "c\"1s\"",
    "'a'",
    "b'a'",
    "true",
    "false",
    "E",
    "E::A",
    "E::A(_)",
    "E::Http(500..=599)",
    "E::Io { .. }",
    "E::A | E::B",
    "| E::A",
    "_",
    "ref e",
    "e @ E::A",
    "(E::A, _)",
    "[_, ..]",
    "&E::A",
    "::std::io::Error",
    "std::io::Error",
    "crate::errors::Timeout",
    "super::Down",
    "self::Down",
    "Self::cached",
    "is_transient",
    "errors::is_transient",
    "<T as Trait>::Error",
    "Vec<u8>",
    "NOT_FOUND",
    "|e: &E| e.is_transient()",
    "|e| true",
    "|a, b| a == b",
    "move |e: &E| matches!(e, E::A)",
    "|| true",
    "|_| { return true; }",
    "async { true }",
    "cached",
    "Self::cached",
    "<Self as T>::cached",
    "|e| cached(e)",
    "|id, e| cached(id, e)",
    "{ move |e| cached(e) }",
    "{}",
    "cached(id)",
    "cached::<u32>",
    "f()",
    "1..2",
    "..",
    "..=5",
    "1..=8",
    "0..=8",
    "8..=2",
    "1..=65536",
    "1..=N",
    "!",
    "#",
    "$x",
];

/// Values each key accepts, so that many cases get past the grammar into the
/// checks between keys and the code generation.
const VALID: &[(&str, &[&str])] = &[
    ("threshold", &["1", "5", "4294967295"]),
    ("failure_rate", &["0.5", "1", "1.0", "0.01"]),
    (
        "window",
        &["1", "20", "100", "1048576", "\"1m\"", "\"1ns\""],
    ),
    ("min_calls", &["1", "10", "100", "101", "5000"]),
    ("slow", &["\"2s\"", "\"1ns\""]),
    ("slow_rate", &["0.8", "1"]),
    ("shed", &["1", "2", "2.5", "10"]),
    ("timeout", &["\"3s\"", "\"1ns\"", "\"50ms\""]),
    (
        "max_concurrent",
        &[
            "1",
            "8",
            "4294967295",
            "1..=1",
            "2..=8",
            "10..=200",
            "65535..=65535",
        ],
    ),
    ("max_wait", &["\"50ms\"", "\"1ns\""]),
    ("recovery", &["\"30s\"", "\"30s..10m\"", "\"1ms..=1ms\""]),
    ("jitter", &["0", "0.2", "0.999"]),
    ("trial_calls", &["1", "3", "255"]),
    ("success_threshold", &["1", "2"]),
    (
        "counts",
        &[
            "E::A",
            "DependencyError",
            "is_transient",
            "|e: &E| e.is_transient()",
            "E::Http(500..=599) | E::Io { .. }",
        ],
    ),
    (
        "ignores",
        &[
            "E::BadRequest(_)",
            "std::io::Error",
            "Self::is_client_error",
        ],
    ),
    (
        "fallback",
        &[
            "cached",
            "Self::cached",
            "cached::<u32>",
            "<Self as Cache>::cached",
            "|e| cached(e)",
            "move |_| Ok(0)",
            "{ let kept = id; move |e| cached(kept, e) }",
        ],
    ),
    ("key", &["id", "self.host.as_str()", "(region, shard)"]),
    ("max_keys", &["1", "256"]),
    ("max_ejection_percent", &["1", "50", "100"]),
    ("breaker", &["PAYMENTS", "shared::GATEWAY"]),
    ("name", &["\"inventory\"", "r\"x\""]),
    ("crate", &["::failfast", "my::ff", "\"::failfast\""]),
];

/// Punctuation and keywords, as separate tokens and joined.
const PUNCT: &[&str] = &[
    "=", "==", "=>", ",", ",,", ";", ":", "::", "|", "||", "..", "..=", "-", "&", "#", "!", "<",
    ">", "@", "?", "'a", "move", "async", "fn", "let", "=",
];

fn fragment(text: &'static str) -> TokenStream {
    text.parse()
        .expect("every fragment is a valid token stream")
}

/// What one attribute's grammar accepts: its keys and a few valid values.
#[derive(Clone, Copy)]
struct Grammar {
    keys: &'static [&'static str],
    valid: &'static [(&'static str, &'static [&'static str])],
}

/// `#[circuit_breaker]`'s keys and values.
fn breaker() -> Grammar {
    Grammar {
        keys: KEYS.as_slice(),
        valid: VALID,
    }
}

/// `#[retry]`'s keys and values.
const RETRY: Grammar = Grammar {
    keys: crate::attr::retry::KEYS,
    valid: &[
        ("attempts", &["1", "3", "4294967295"]),
        ("backoff", &["\"100ms..2s\"", "\"1ns\"", "\"1s..=1s\""]),
        ("jitter", &["0", "0.5", "1"]),
        (
            "retry_on",
            &[
                "E::A",
                "DependencyError",
                "is_transient",
                "|e: &E| e.is_transient()",
            ],
        ),
        ("budget", &["0.2", "1", "0.001"]),
        ("crate", &["::failfast", "my::ff"]),
    ],
};

/// One piece of attribute arguments: mostly `key = value`, sometimes
/// something else entirely.
fn piece(grammar: Grammar) -> impl Strategy<Value = TokenStream> {
    let key = prop_oneof![
        4 => prop::sample::select(grammar.keys),
        1 => prop::sample::select(NOT_KEYS),
    ];
    let value = prop::sample::select(VALUES);
    let valid = prop::sample::select(grammar.valid).prop_flat_map(|(key, values)| {
        prop::sample::select(values).prop_map(move |value| {
            let mut tokens = fragment(key);
            tokens.extend(fragment("="));
            tokens.extend(fragment(value));
            tokens
        })
    });
    let leaf = prop_oneof![
        16 => valid,
        8 => (key.clone(), value.clone()).prop_map(|(k, v)| {
            let mut tokens = fragment(k);
            tokens.extend(fragment("="));
            tokens.extend(fragment(v));
            tokens
        }),
        1 => key.clone().prop_map(fragment),
        1 => value.clone().prop_map(fragment),
        1 => prop::sample::select(PUNCT).prop_map(fragment),
        1 => (key, prop::sample::select(PUNCT), value).prop_map(|(k, p, v)| {
            let mut tokens = fragment(k);
            tokens.extend(fragment(p));
            tokens.extend(fragment(v));
            tokens
        }),
    ];
    leaf.prop_recursive(3, 24, 6, move |inner| {
        (
            prop::sample::select(
                &[
                    Delimiter::Parenthesis,
                    Delimiter::Bracket,
                    Delimiter::Brace,
                    Delimiter::None,
                ][..],
            ),
            prop::collection::vec(inner.clone(), 0..4),
            prop::sample::select(grammar.keys),
        )
            .prop_flat_map(move |(delimiter, pieces, key)| {
                let group = TokenTree::Group(Group::new(delimiter, pieces.into_iter().collect()));
                prop_oneof![
                    // A group as a value: `counts = (..)`, `window = [..]`.
                    Just({
                        let mut tokens = fragment(key);
                        tokens.extend(fragment("="));
                        tokens.extend([group.clone()]);
                        tokens
                    }),
                    Just(group.into_token_stream()),
                ]
            })
    })
}

/// Attribute arguments: pieces separated by commas, with a comma now and
/// then left out, doubled or trailing.
fn arguments(grammar: Grammar) -> impl Strategy<Value = TokenStream> {
    prop::collection::vec((piece(grammar), 0..20u8), 0..6).prop_map(|pieces| {
        let mut tokens = TokenStream::new();
        for (piece, separator) in pieces {
            tokens.extend(piece);
            match separator {
                0 => {}
                1 => tokens.extend(fragment(",,")),
                _ => tokens.extend(fragment(",")),
            }
        }
        tokens
    })
}

/// Items the attribute is put on: every shape it guards, and shapes it
/// refuses.
const ITEMS: &[&str] = &[
    "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
    "pub async fn fetch(id: u32, name: &str) -> Result<u32, E> { let _ = name; Ok(id) }",
    "async fn one_line(x: u32) -> Result<u32, Down> { Ok(x) }",
    "fn by_ref(&self, sku: &str) -> std::io::Result<&str> { Ok(sku) }",
    "fn by_value(self) -> ApiResult<u32> { Ok(self.0) }",
    "fn generic<T: Clone>(value: T) -> Result<T, E> where T: Send { Ok(value) }",
    "fn pattern((a, b): (u32, u32)) -> Result<u32, E> { Ok(a + b) }",
    "fn iter(v: &[u8]) -> Result<impl Iterator<Item = &u8> + '_, E> { Ok(v.iter()) }",
    "fn not_result(id: u32) -> u32 { id }",
    "fn unit() -> () {}",
    "fn nothing() {}",
    "const fn constant() -> Result<u32, E> { Ok(1) }",
    "fn declared(&self) -> Result<u32, E>;",
    "struct NotAFunction;",
    "fn stock<'a, 'async_trait>(&'a self) -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = Result<u32, E>> + ::core::marker::Send + 'async_trait>> where 'a: 'async_trait, Self: 'async_trait { Box::pin(async move { let __self = self; let __ret: Result<u32, E> = { Ok(1) }; __ret }) }",
    "fn moves(&mut self, s: String) -> Pin<Box<dyn Future<Output = Result<u32, E>> + Send + 'async_trait>> { Box::pin(async move { Ok(s.len() as u32) }) }",
];

/// Is `tokens` only `compile_error! { .. }` invocations?
fn only_compile_errors(tokens: TokenStream) -> Result<usize, String> {
    let file: syn::File = syn::parse2(tokens).map_err(|e| format!("not items: {e}"))?;
    for item in &file.items {
        let syn::Item::Macro(mac) = item else {
            return Err(format!("not a macro: {}", item.to_token_stream()));
        };
        let last = mac.mac.path.segments.last().map(|s| s.ident.to_string());
        if last.as_deref() != Some("compile_error") {
            return Err(format!("not compile_error!: {}", item.to_token_stream()));
        }
        let message: syn::LitStr = mac.mac.parse_body().map_err(|e| e.to_string())?;
        if message.value().trim().is_empty() {
            return Err("an empty compile_error!".to_owned());
        }
    }
    Ok(file.items.len())
}

/// Checks one expansion. `Ok(true)` when the function was guarded,
/// `Ok(false)` when errors were emitted with the item as written.
fn check(args: &TokenStream, item: &str) -> Result<bool, String> {
    let item_tokens: TokenStream = item.parse().unwrap();
    let out = crate::expand::circuit_breaker(args.clone(), item_tokens.clone());
    let text = out.to_string();
    let item_text = item_tokens.to_string();
    if text.contains("compile_error") {
        // `compile_error!`s, then the item exactly as written.
        let Some(errors) = text.strip_suffix(&item_text) else {
            return Err(format!("the item is not emitted as written: {text}"));
        };
        let count = only_compile_errors(errors.parse().map_err(|e| format!("{e:?}"))?)?;
        if count == 0 {
            return Err(format!("`compile_error` without an invocation: {text}"));
        }
        return Ok(false);
    }
    let func: syn::ItemFn =
        syn::parse2(out).map_err(|e| format!("the expansion is not a function: {e}: {text}"))?;
    let original: syn::ItemFn = syn::parse_str(item).map_err(|e| format!("{e}"))?;
    if func.sig.to_token_stream().to_string() != original.sig.to_token_stream().to_string() {
        return Err(format!("the signature changed: {text}"));
    }
    if ![
        "static __FAILFAST_BREAKER",
        "static __FAILFAST_FAMILY",
        "__private :: breaker (& ",
        "__private :: member (& ",
    ]
    .iter()
    .any(|breaker| text.contains(breaker))
    {
        return Err(format!("no breaker: {text}"));
    }
    Ok(true)
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(4_000)
}

#[test]
fn generated_arguments_never_panic_and_give_code_or_compile_errors() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        // A failure is shown after a bounded shrink: seconds, not minutes
        // (which is also what keeps a mutation run's broken mutants short).
        max_shrink_time: 5_000,
        max_shrink_iters: 512,
        ..Config::default()
    });
    let guarded = std::cell::Cell::new(0u32);
    let refused = std::cell::Cell::new(0u32);
    runner
        .run(
            &(arguments(breaker()), prop::sample::select(ITEMS)),
            |(args, item)| {
                let outcome = check(&args, item);
                prop_assert!(outcome.is_ok(), "{args} on {item}: {outcome:?}");
                if outcome == Ok(true) {
                    guarded.set(guarded.get() + 1);
                } else {
                    refused.set(refused.get() + 1);
                }
                Ok(())
            },
        )
        .unwrap();
    eprintln!(
        "grammar fuzz: {} cases, {} guarded, {} refused with compile errors, no panic",
        guarded.get() + refused.get(),
        guarded.get(),
        refused.get()
    );
}

/// Every key with every value, on a sync function, an async one, a method
/// and an `#[async_trait]` method: the whole table, not a sample.
#[test]
fn every_key_with_every_value() {
    for key in KEYS.iter().chain(NOT_KEYS) {
        for value in VALUES {
            let args: TokenStream = format!("{key} = {value}").parse().unwrap();
            for item in [ITEMS[0], ITEMS[1], ITEMS[3], ITEMS[14]] {
                if let Err(error) = check(&args, item) {
                    panic!("{key} = {value} on {item}: {error}");
                }
            }
        }
    }
}

/// `#[retry(..)]` over an item with or without a `#[circuit_breaker(..)]`
/// below it, both with generated arguments: no panic, and either a retry
/// loop or `compile_error!`s followed by the item.
#[test]
fn retry_over_generated_breakers_never_panics() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let below = prop_oneof![
        1 => Just(None),
        3 => arguments(breaker()).prop_map(Some),
    ];
    let looped = std::cell::Cell::new(0u32);
    let refused = std::cell::Cell::new(0u32);
    runner
        .run(
            &(arguments(RETRY), below, prop::sample::select(ITEMS)),
            |(args, breaker, item)| {
                let item = match &breaker {
                    Some(breaker) => format!("#[circuit_breaker({breaker})] {item}"),
                    None => item.to_owned(),
                };
                let outcome = check_retry(&args, &item);
                prop_assert!(outcome.is_ok(), "{args} over {item}: {outcome:?}");
                let counter = if outcome == Ok(true) {
                    &looped
                } else {
                    &refused
                };
                counter.set(counter.get() + 1);
                Ok(())
            },
        )
        .unwrap();
    assert!(
        looped.get() > 0 && refused.get() > 0,
        "both outcomes are reached"
    );
}

/// `Ok(true)` for a retry loop, `Ok(false)` for errors and the item.
fn check_retry(args: &TokenStream, item: &str) -> Result<bool, String> {
    let out = crate::expand::retry::retry(args.clone(), item.parse().unwrap());
    let text = out.to_string();
    let file: syn::File =
        syn::parse2(out).map_err(|e| format!("the expansion is not items: {e}: {text}"))?;
    let Some((last, errors)) = file.items.split_last() else {
        return Err(format!("no item: {text}"));
    };
    if !errors.is_empty() {
        let errors: TokenStream = errors.iter().map(ToTokens::to_token_stream).collect();
        only_compile_errors(errors)?;
        return Ok(false);
    }
    match last {
        syn::Item::Fn(func) if text.contains("static __FAILFAST_RETRY") => {
            if func
                .attrs
                .iter()
                .any(|a| a.path().is_ident("circuit_breaker"))
            {
                return Err(format!("the breaker was left on the function: {text}"));
            }
            Ok(true)
        }
        _ => Err(format!("neither a retry loop nor errors: {text}")),
    }
}
