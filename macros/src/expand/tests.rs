use super::*;
use crate::check::shape::async_trait_body;
use proc_macro2::TokenStream;

fn expand(args: &str, item: &str) -> String {
    circuit_breaker(args.parse().unwrap(), item.parse().unwrap()).to_string()
}

#[test]
fn a_mistake_still_emits_the_function_as_written() {
    let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
    let out = expand("treshold = 5", item);
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.ends_with(item), "{out}");
    assert!(!out.contains("__FAILFAST_BREAKER"), "{out}");
}

#[test]
fn a_threshold_with_a_window_counts_the_failures_within_it() {
    let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
    for args in [
        r#"threshold = 5, window = "10s""#,
        "window = 20, threshold = 5",
        "threshold = LIMIT, window = 20",
    ] {
        let out = expand(args, item);
        assert!(out.contains(". failures_within ()"), "{args}: {out}");
        assert!(!out.contains("compile_error"), "{args}: {out}");
    }
    for args in ["threshold = 5", r#"failure_rate = 0.5, window = "10s""#] {
        let out = expand(args, item);
        assert!(!out.contains("failures_within"), "{args}: {out}");
    }
    // A constant threshold is checked against the count window it
    // counts within, by const evaluation.
    let out = expand("threshold = LIMIT, window = 20", item);
    assert!(
        out.contains(
            "threshold_within (:: failfast :: __private :: consts :: threshold (LIMIT) , 20)"
        ),
        "{out}"
    );
}

#[test]
fn shed_alone_has_no_threshold_and_measures_over_its_own_window() {
    let item = "fn fetch () -> Result < u32 , E > { Ok (1) }";
    let minute = "(:: core :: time :: Duration :: new (60 , 0))";
    for args in [
        "shed = 2",
        "shed = 2.0, min_calls = 20",
        r#"shed = 2, slow = "1s""#,
    ] {
        let out = expand(args, item);
        assert!(!out.contains("compile_error"), "{args}: {out}");
        assert!(out.contains(". without_threshold ()"), "{args}: {out}");
        assert!(!out.contains(". threshold ("), "{args}: {out}");
        // The shedding window is 10 s unless written: the runtime's
        // default, not a `window`.
        assert!(!out.contains("window"), "{args}: {out}");
        assert!(out.contains(". shed (2.0)"), "{args}: {out}");
    }
    // With a trip rule of its own, the breaker keeps it.
    for (args, rule) in [
        ("shed = 3, threshold = 7", ". threshold (7)"),
        ("failure_rate = 0.5, shed = 3", ". failure_rate (0.5)"),
        ("threshold = LIMIT, shed = 3", "consts :: threshold (LIMIT)"),
    ] {
        let out = expand(args, item);
        assert!(!out.contains("compile_error"), "{args}: {out}");
        assert!(!out.contains("without_threshold"), "{args}: {out}");
        assert!(out.contains(rule), "{args}: {out}");
        assert!(out.contains(". shed (3.0)"), "{args}: {out}");
        assert!(!out.contains("window"), "{args}: {out}");
        assert!(!out.contains("failures_within"), "{args}: {out}");
    }
    // `shed_window` is the window shedding measures over; `window`,
    // with `threshold`, the one the failures are counted within.
    let out = expand(
        r#"shed = 2, shed_window = "1m", window = 20, threshold = 5"#,
        item,
    );
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains(&format!(". shed_window {minute}")), "{out}");
    assert!(out.contains(". window_calls (20)"), "{out}");
    assert!(out.contains(". failures_within ()"), "{out}");
    // Without shed, no trace of it.
    let out = expand("threshold = 5", item);
    assert!(
        !out.contains("shed") && !out.contains("window_time"),
        "{out}"
    );
    // A constant multiplier is checked by const evaluation; a constant
    // `min_calls` is not held to a count window: graded shedding's
    // is a time.
    let out = expand("shed = K, min_calls = N", item);
    assert!(
        out.contains(". shed (:: failfast :: __private :: consts :: shed (K))"),
        "{out}"
    );
    assert!(
        out.contains(". min_calls (:: failfast :: __private :: consts :: min_calls (N))"),
        "{out}"
    );
    assert!(out.contains(". without_threshold ()"), "{out}");
    // Beside a failure rate, it is held to the rate rule's window.
    let out = expand("failure_rate = 0.5, shed = 2, min_calls = N", item);
    assert!(out.contains("min_calls_within"), "{out}");
}

#[test]
fn the_breaker_is_a_const_initialised_static_inside_the_body() {
    let out = expand(
        r#"recovery = "30s..10m", window = 5, failure_rate = 0.5"#,
        "pub fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
    );
    assert!(
        out.starts_with("pub fn fetch (id : u32) -> Result < u32 , E > {"),
        "{out}"
    );
    assert!(out.contains("static __FAILFAST_BREAKER : :: failfast :: __private :: Breaker"));
    assert!(
        out.contains(". recovery (:: core :: time :: Duration :: new (30 , 0))"),
        "{out}"
    );
    assert!(out.contains(". max_recovery (:: core :: time :: Duration :: new (600 , 0))"));
    // A window smaller than the default `min_calls` waits for a full window.
    assert!(out.contains(". window_calls (5) . min_calls (5)"), "{out}");
    assert!(
        !out.contains(". threshold"),
        "a rate rule replaces the default rule: {out}"
    );
}

#[test]
fn the_body_moves_its_arguments_only_without_a_fallback() {
    let sync = "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }";
    assert!(expand("", sync).contains("run (move || ->"));
    assert!(expand("fallback = cached", sync).contains("run (|| ->"));
    let out = expand("fallback = cached", sync);
    // One call of the fallback, for rejections and counted failures
    // alike, so a fallback that does not fit is one error.
    assert_eq!(out.matches("cached (").count(), 1, "{out}");
    assert!(
        out.contains("return cached (id , __failfast_fallback_error) ;"),
        "{out}"
    );
    // A closure fallback is given the error alone: the body moves.
    let out = expand("fallback = |error| cached(error)", sync);
    assert!(out.contains("run (move || ->"), "{out}");
    assert!(
        out.contains(
            "return __failfast_fallback (__failfast_fallback_error , | error | cached (error)) ;"
        ),
        "{out}"
    );
}

/// Found by the grammar fuzz: `fallback = cached<u32>` was taken as a
/// type path and emitted as `cached<u32>(..)`, which is not an expression.
#[test]
fn fallback_paths_are_expression_paths() {
    let sync = "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }";
    for fallback in ["cached::<u32>", "<Self as Cache>::cached", "Self::cached"] {
        let out: TokenStream = expand(&format!("fallback = {fallback}"), sync)
            .parse()
            .unwrap();
        let parsed = syn::parse2::<ItemFn>(out.clone());
        assert!(parsed.is_ok(), "{fallback}: {:?} {out}", parsed.err());
    }
    let out = expand("fallback = cached<u32>", sync);
    assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    assert!(out.contains("`fallback = cached::<u32>`"), "{out}");
}

#[test]
fn a_fallback_block_runs_before_the_call_is_admitted() {
    let out = expand(
        "fallback = { let kept = id; move |error| cached(kept, error) }",
        "fn fetch(id: u32) -> Result<u32, E> { Ok(id) }",
    );
    let prepared = out.find("let __failfast_fallback_fn =").expect("prepared");
    let acquire = out.find("__private :: acquire").expect("acquire");
    assert!(prepared < acquire, "{out}");
    assert!(out.contains("run (move || ->"), "{out}");
    assert!(
        out.contains("__failfast_fallback (__failfast_fallback_error , __failfast_fallback_fn)"),
        "{out}"
    );
}

#[test]
fn crate_path_replaces_every_runtime_path() {
    let out = expand("crate = my::ff", "fn fetch() -> Result<u32, E> { Ok(1) }");
    assert!(!out.contains(":: failfast"), "{out}");
    assert!(out.contains("my :: ff :: __private :: acquire"), "{out}");
}

#[test]
fn async_trait_output_is_recognised() {
    // What `#[async_trait]` makes of `async fn stock(&self) -> Result<u32, E>`.
    let func: ItemFn = syn::parse_quote! {
        fn stock<'life0, 'async_trait>(&'life0 self) -> ::core::pin::Pin<Box<
            dyn ::core::future::Future<Output = Result<u32, E>> + ::core::marker::Send + 'async_trait
        >> where 'life0: 'async_trait, Self: 'async_trait {
            Box::pin(async move {
                let __self = self;
                let __ret: Result<u32, E> = { Ok(1) };
                #[allow(unreachable_code)]
                __ret
            })
        }
    };
    let (_, _, output) = async_trait_body(&func).expect("recognised");
    assert_eq!(quote!(#output).to_string(), "Result < u32 , E >");
    let out = expand("", &quote!(#func).to_string());
    let (outer, inner) = out
        .split_once("let (__failfast_result , __failfast_permit)")
        .unwrap();
    assert!(outer.contains("Box :: pin (async move {"), "{out}");
    assert!(outer.contains("static __FAILFAST_BREAKER"), "{out}");
    assert!(
        inner.starts_with(
            " : (Result < u32 , E > , _) = :: failfast :: __private :: body \
             (__failfast_permit , async move { let __self = self ;"
        ),
        "{out}"
    );
}

#[test]
fn any_type_path_may_be_a_result_and_the_compiler_checks_it() {
    for ret in ["ApiResult<u32>", "Res<u32>", "io::Result<()>", "u32"] {
        let out = expand("", &format!("fn f() -> {ret} {{ todo!() }}"));
        assert!(!out.contains("compile_error"), "{ret}: {out}");
        assert!(
            out.contains("as :: failfast :: __private :: ResultParts < _ , _ >> :: into_result"),
            "{out}"
        );
    }
    for ret in [
        "()",
        "(u32, E)",
        "&'static str",
        "impl Future<Output = u32>",
        "[u8; 4]",
    ] {
        let out = expand("", &format!("fn f() -> {ret} {{ todo!() }}"));
        assert!(out.contains("compile_error"), "{ret}: {out}");
    }
    assert!(expand("", "fn f() {}").contains("compile_error"));
}

#[test]
fn anyhow_is_recognised_as_written() {
    for ret in [
        "anyhow::Result<u32>",
        "::anyhow::Result<()>",
        "Result<u32, anyhow::Error>",
    ] {
        assert!(is_anyhow(&syn::parse_str(ret).unwrap()), "{ret}");
    }
    for ret in ["Result<u32>", "Result<u32, E>", "io::Result<u32>", "u32"] {
        assert!(!is_anyhow(&syn::parse_str(ret).unwrap()), "{ret}");
    }
}

#[test]
fn an_adaptive_limit_is_in_the_config_and_no_bulkhead_is_made() {
    let item = "fn fetch (id : u32) -> Result < u32 , E > { Ok (id) }";
    let out = expand("max_concurrent = 2..=8", item);
    assert!(!out.contains("compile_error"), "{out}");
    assert!(
        out.contains(". adaptive_concurrency (2 , 8) . into_config ()"),
        "{out}"
    );
    for absent in [
        "Bulkhead",
        "enter",
        "concurrency_limit",
        "let mut __failfast_permit",
    ] {
        assert!(!out.contains(absent), "{absent}: {out}");
    }
    // Each key's breaker is built from the config, with the limit; the
    // family makes no bulkhead per key.
    let out = expand("key = id, max_concurrent = 2..=8", item);
    assert!(!out.contains("compile_error"), "{out}");
    assert!(
        out.contains(". adaptive_concurrency (2 , 8) . into_config ()"),
        "{out}"
    );
    assert!(
        out.contains(
            ". into_config () , 1024 , :: core :: option :: Option :: None , \
             :: core :: time :: Duration :: new (0 , 0) , 100)"
        ),
        "{out}"
    );
    assert!(!out.contains("enter_member"), "{out}");
    // A fixed limit is a bulkhead, and not in the config.
    let out = expand("max_concurrent = 8", item);
    assert!(!out.contains("adaptive_concurrency"), "{out}");
    assert!(out.contains("Bulkhead :: new (8)"), "{out}");
    let out = expand("key = id, max_concurrent = 8", item);
    assert!(!out.contains("adaptive_concurrency"), "{out}");
    assert!(
        out.contains(":: core :: option :: Option :: Some (8)"),
        "{out}"
    );
    assert!(out.contains("enter_member"), "{out}");
}

#[test]
fn impl_trait_becomes_inferred_in_the_annotation() {
    let out = expand(
        "",
        "fn f(v: &[u8]) -> Result<impl Iterator<Item = &u8>, E> { Ok(v.iter()) }",
    );
    assert!(out.contains("|| -> Result < _ , E >"), "{out}");
}
