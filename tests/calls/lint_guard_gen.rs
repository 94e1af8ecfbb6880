//! Writes `tests/calls/lint_guard.rs`: every body shape users write, under every
//! key combination that changes the generated code, and under `#[retry]`
//! (above a breaker and alone), sync and async, each a
//! literal function in the file (a function made by `macro_rules!` would hide
//! lints on its body's tokens, which is what the guard is for).
//!
//! `cargo test --test calls lint_guard_gen` fails when the file is stale;
//! `FAILFAST_BLESS=1 cargo test --test calls lint_guard_gen` writes it again.

use std::fmt::Write as _;

/// A body shape: its name, return type, body, and whether a fallback can
/// answer for it (an `impl Trait` return is one opaque type per function,
/// which a fallback cannot produce).
struct Shape {
    name: &'static str,
    param: &'static str,
    ret: &'static str,
    body: &'static str,
    fallback: bool,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "one_line",
        param: "x",
        ret: "Result<u32, ApiError>",
        body: "{ Ok(x) }",
        fallback: true,
    },
    Shape {
        name: "early_return",
        param: "x",
        ret: "Result<u32, ApiError>",
        body: "{\n        if x == 0 {\n            return Err(ApiError::Down);\n        }\n        Ok(x)\n    }",
        fallback: true,
    },
    Shape {
        name: "question_mark",
        param: "x",
        ret: "Result<u32, ApiError>",
        body: "{\n        let y = checked(x)?;\n        Ok(y + 1)\n    }",
        fallback: true,
    },
    Shape {
        name: "unit",
        param: "x",
        ret: "Result<(), ApiError>",
        body: "{\n        checked(x)?;\n        Ok(())\n    }",
        fallback: true,
    },
    Shape {
        name: "unit_one_line",
        param: "_x",
        ret: "Result<(), ApiError>",
        body: "{ Ok(()) }",
        fallback: true,
    },
    Shape {
        name: "labelled",
        param: "x",
        ret: "Result<u32, ApiError>",
        body: "{\n        let y = 'pick: {\n            if x == 0 {\n                break 'pick 1;\n            }\n            x\n        };\n        Ok(y)\n    }",
        fallback: true,
    },
    Shape {
        name: "unsafe_block",
        param: "x",
        ret: "Result<u32, ApiError>",
        body: "{\n        // SAFETY: `double` has no precondition.\n        let y = unsafe { double(x) };\n        Ok(y)\n    }",
        fallback: true,
    },
    Shape {
        name: "unsafe_one_line",
        param: "x",
        ret: "Result<u32, ApiError>",
        // SAFETY (of the generated case): `double` has no precondition.
        body: "{ unsafe { Ok(double(x)) } }",
        fallback: true,
    },
    Shape {
        name: "impl_trait",
        param: "x",
        ret: "Result<impl Iterator<Item = u32>, ApiError>",
        body: "{\n        if x == 0 {\n            return Err(ApiError::Down);\n        }\n        Ok(0..x)\n    }",
        fallback: false,
    },
];

/// Key combinations that change the generated code.
const KEYS: &[(&str, &str)] = &[
    ("plain", ""),
    ("fallback", "fallback = FALLBACK"),
    ("error_fallback", "fallback = |error| ERROR_FALLBACK(error)"),
    (
        "kept_fallback",
        "fallback = { let kept = PARAM.saturating_add(1); move |error| KEPT_FALLBACK(kept, error) }",
    ),
    (
        "counts",
        "counts = ApiError::Down | ApiError::Timeout { .. }",
    ),
    (
        "ignores",
        "ignores = |e: &ApiError| matches!(e, ApiError::BadRequest)",
    ),
    ("bulkhead", "max_concurrent = 2"),
    (
        "every_matcher",
        "counts = is_transient, ignores = ApiError::BadRequest, fallback = FALLBACK, recovery = \"30s..5m\"",
    ),
];

/// `#[retry]` above a breaker, and alone: the attributes, with the same
/// placeholders as `KEYS`.
const RETRIED: &[(&str, &str)] = &[
    (
        "retried",
        "#[retry(attempts = 2, backoff = \"1ms\", retry_on = is_transient)]\n    #[circuit_breaker(threshold = 1000)]",
    ),
    ("retry_alone", "#[retry(attempts = 2, backoff = \"1ms\")]"),
    (
        "retried_fallback",
        "#[retry(attempts = 2, backoff = \"1ms\", retry_on = is_transient)]\n    #[circuit_breaker(threshold = 1000, fallback = FALLBACK)]",
    ),
    (
        "retried_error_fallback",
        "#[retry(attempts = 2, backoff = \"1ms\")]\n    #[circuit_breaker(threshold = 1000, counts = is_transient, fallback = |error| ERROR_FALLBACK(error))]",
    ),
    (
        "retried_kept_fallback",
        "#[retry(attempts = 2, backoff = \"1ms\")]\n    #[circuit_breaker(fallback = { let kept = PARAM.saturating_add(1); move |error| KEPT_FALLBACK(kept, error) })]",
    ),
];

/// The placeholders of `KEYS` and `RETRIED` filled in for one case.
fn fill(keys: &str, param: &str, ret_kind: &str, flavour: &str, fallback: &str) -> String {
    keys.replace("PARAM", param)
        .replace("KEPT_FALLBACK", &format!("fallback_{ret_kind}_{flavour}"))
        .replace(
            "ERROR_FALLBACK",
            &format!("error_fallback_{ret_kind}_{flavour}"),
        )
        .replace("FALLBACK", fallback)
}

fn generate() -> String {
    let mut out = String::new();
    out.push_str(
        r#"//! Generated by `tests/calls/lint_guard_gen.rs`; do not edit. Every body shape
//! under every key combination that changes the generated code, sync and
//! async, and under `#[async_trait]`, compiled with the strictest lint groups
//! denied: `cargo test` proves rustc's lints quiet, `cargo clippy
//! --all-targets` clippy's. The user's own lints still fire inside an
//! annotated body: `tests/ui/user_lint_in_body.rs`.
#![deny(warnings, clippy::all, clippy::pedantic, clippy::nursery)]

use failfast::{Error, Rejected, circuit_breaker, retry};

#[derive(Debug, PartialEq, Eq)]
enum ApiError {
    Down,
    Timeout { after_ms: u64 },
    BadRequest,
    Rejected,
}

impl From<Rejected> for ApiError {
    fn from(_: Rejected) -> Self {
        Self::Rejected
    }
}

const fn is_transient(error: &ApiError) -> bool {
    matches!(error, ApiError::Down | ApiError::Timeout { .. })
}

const fn checked(x: u32) -> Result<u32, ApiError> {
    match x {
        0..=1000 => Ok(x),
        1001..=2000 => Err(ApiError::BadRequest),
        _ => Err(ApiError::Timeout { after_ms: 1 }),
    }
}

/// # Safety
/// None needed; `unsafe` only so that bodies can have `unsafe` blocks.
const unsafe fn double(x: u32) -> u32 {
    x.wrapping_mul(2)
}

fn answer<T>(error: Error<ApiError>, value: T) -> Result<T, ApiError> {
    match error {
        Error::Failed(error) => Err(error),
        _ => Ok(value),
    }
}

"#,
    );
    // Fallbacks, one per return type and flavour.
    for (flavour, asyncness, yield_) in [
        ("sync", "", ""),
        ("async", "async ", "    std::future::ready(()).await;\n"),
    ] {
        writeln!(
            out,
            "{asyncness}fn fallback_u32_{flavour}(x: u32, error: Error<ApiError>) -> Result<u32, ApiError> {{\n{yield_}    answer(error, x)\n}}\n"
        )
        .unwrap();
        writeln!(
            out,
            "{asyncness}fn fallback_unit_{flavour}(_x: u32, error: Error<ApiError>) -> Result<(), ApiError> {{\n{yield_}    answer(error, ())\n}}\n"
        )
        .unwrap();
        writeln!(
            out,
            "{asyncness}fn error_fallback_u32_{flavour}(error: Error<ApiError>) -> Result<u32, ApiError> {{\n{yield_}    answer(error, 0)\n}}\n"
        )
        .unwrap();
        writeln!(
            out,
            "{asyncness}fn error_fallback_unit_{flavour}(error: Error<ApiError>) -> Result<(), ApiError> {{\n{yield_}    answer(error, ())\n}}\n"
        )
        .unwrap();
    }
    out.push_str("#[rustfmt::skip]\nmod cases {\n    use super::*;\n\n");
    let mut calls = Vec::new();
    for shape in SHAPES {
        for flavour in ["sync", "async"] {
            for (combo, keys) in KEYS {
                if keys.contains("FALLBACK") && !shape.fallback {
                    continue;
                }
                let ret_kind = if shape.ret.contains("()") {
                    "unit"
                } else {
                    "u32"
                };
                let keys = fill(
                    keys,
                    shape.param,
                    ret_kind,
                    flavour,
                    &format!("fallback_{ret_kind}_{flavour}"),
                );
                let name = format!("{}_{flavour}_{combo}", shape.name);
                let asyncness = if flavour == "async" { "async " } else { "" };
                writeln!(
                    out,
                    "    #[circuit_breaker({keys})]\n    pub {asyncness}fn {name}({}: u32) -> {} {}\n",
                    shape.param, shape.ret, shape.body
                )
                .unwrap();
                calls.push((name, flavour == "async", shape.name == "impl_trait"));
            }
            // `#[retry]` above a breaker, and alone.
            for (combo, attributes) in RETRIED {
                if attributes.contains("FALLBACK") && !shape.fallback {
                    continue;
                }
                let ret_kind = if shape.ret.contains("()") {
                    "unit"
                } else {
                    "u32"
                };
                let attributes = fill(
                    attributes,
                    shape.param,
                    ret_kind,
                    flavour,
                    &format!("fallback_{ret_kind}_{flavour}"),
                );
                let name = format!("{}_{flavour}_{combo}", shape.name);
                let asyncness = if flavour == "async" { "async " } else { "" };
                writeln!(
                    out,
                    "    {attributes}\n    pub {asyncness}fn {name}({}: u32) -> {} {}\n",
                    shape.param, shape.ret, shape.body
                )
                .unwrap();
                calls.push((name, flavour == "async", shape.name == "impl_trait"));
            }
        }
    }
    // `#[async_trait]`: the boxed future is the body.
    out.push_str("    #[async_trait::async_trait]\n    pub trait Inventory {\n");
    let trait_shapes: Vec<_> = SHAPES.iter().filter(|s| s.fallback).collect();
    let trait_combos: Vec<&str> = KEYS
        .iter()
        .chain(RETRIED)
        .map(|(combo, _)| *combo)
        .collect();
    for shape in &trait_shapes {
        for combo in &trait_combos {
            writeln!(
                out,
                "        async fn {}_{combo}(&self, {}: u32) -> {};",
                shape.name, shape.param, shape.ret
            )
            .unwrap();
        }
    }
    out.push_str(
        "    }\n\n    pub struct Client {\n        pub base: u32,\n    }\n\n    impl Client {\n",
    );
    for ret_kind in ["u32", "unit"] {
        let ret = if ret_kind == "unit" { "()" } else { "u32" };
        writeln!(
            out,
            "        async fn fallback_{ret_kind}(&self, x: u32, error: Error<ApiError>) -> Result<{ret}, ApiError> {{\n            fallback_{ret_kind}_async(self.base + x, error).await\n        }}\n"
        )
        .unwrap();
    }
    out.push_str("    }\n\n    #[async_trait::async_trait]\n    impl Inventory for Client {\n");
    for shape in &trait_shapes {
        for (combo, keys) in KEYS {
            let ret_kind = if shape.ret.contains("()") {
                "unit"
            } else {
                "u32"
            };
            let keys = fill(
                keys,
                shape.param,
                ret_kind,
                "async",
                &format!("Self::fallback_{ret_kind}"),
            );
            let body = shape.body.replace("\n", "\n    ");
            writeln!(
                out,
                "        #[circuit_breaker({keys})]\n        async fn {}_{combo}(&self, {}: u32) -> {} {body}\n",
                shape.name, shape.param, shape.ret
            )
            .unwrap();
        }
        for (combo, attributes) in RETRIED {
            let ret_kind = if shape.ret.contains("()") {
                "unit"
            } else {
                "u32"
            };
            let attributes = fill(
                attributes,
                shape.param,
                ret_kind,
                "async",
                &format!("Self::fallback_{ret_kind}"),
            )
            .replace("\n    ", "\n        ");
            let body = shape.body.replace("\n", "\n    ");
            writeln!(
                out,
                "        {attributes}\n        async fn {}_{combo}(&self, {}: u32) -> {} {body}\n",
                shape.name, shape.param, shape.ret
            )
            .unwrap();
        }
    }
    out.push_str("    }\n}\n\n");

    // One test per shape, so each stays short; the calls also run them.
    for shape in SHAPES {
        writeln!(
            out,
            "#[rustfmt::skip]\n#[tokio::test]\nasync fn {}_compiles_without_warnings_and_runs() {{",
            shape.name
        )
        .unwrap();
        for (name, is_async, is_iter) in calls.iter().filter(|(name, _, _)| {
            name.strip_prefix(shape.name)
                .is_some_and(|rest| rest.starts_with("_sync_") || rest.starts_with("_async_"))
        }) {
            let await_ = if *is_async { ".await" } else { "" };
            let check = if *is_iter {
                ".map(Iterator::count).map(drop)"
            } else {
                ".map(drop)"
            };
            writeln!(
                out,
                "    assert_eq!(cases::{name}(2){await_}{check}, Ok(()));"
            )
            .unwrap();
        }
        out.push_str("}\n\n");
    }
    // Under `#[async_trait]`, one test per shape too.
    for (index, shape) in trait_shapes.iter().enumerate() {
        let blank = if index == 0 { "" } else { "\n" };
        writeln!(
            out,
            "{blank}#[rustfmt::skip]\n#[tokio::test]\nasync fn async_trait_{}_compiles_without_warnings_and_runs() {{\n    use cases::Inventory as _;\n\n    let client = cases::Client {{ base: 1 }};",
            shape.name
        )
        .unwrap();
        for combo in &trait_combos {
            writeln!(
                out,
                "    assert_eq!(client.{}_{combo}(2).await.map(drop), Ok(()));",
                shape.name
            )
            .unwrap();
        }
        out.push_str("}\n");
    }
    out
}

#[test]
fn lint_guard_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/calls/lint_guard.rs");
    let expected = generate();
    if std::env::var_os("FAILFAST_BLESS").is_some() {
        std::fs::write(path, &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        actual == expected,
        "tests/calls/lint_guard.rs is stale: run `FAILFAST_BLESS=1 cargo test --test calls lint_guard_gen`"
    );
}
