//! Compile-time behaviour of `#[circuit_breaker]` and `#[retry]`: every supported function
//! shape compiles (`tests/ui/pass/`), and every misconfiguration is exactly one
//! error at the offending token (`tests/ui/*.rs` with the expected `.stderr`).
//!
//! The `.stderr` files are pinned to the toolchain the project builds with;
//! regenerate them with `TRYBUILD=overwrite cargo test --test ui` and read each
//! diff before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
    // What a user without the `anyhow` feature sees: run by
    // `cargo test --test ui`, skipped under `--all-features`.
    #[cfg(not(feature = "anyhow"))]
    t.compile_fail("tests/ui/without_anyhow_feature/*.rs");
    // Async `#[retry]` waits on tokio's timer: with the `tokio` feature it
    // compiles, without it the runtime says which feature to enable.
    #[cfg(feature = "tokio")]
    {
        t.pass("tests/ui/pass_tokio/*.rs");
        t.compile_fail("tests/ui/tokio/*.rs");
    }
    #[cfg(not(feature = "tokio"))]
    t.compile_fail("tests/ui/without_tokio_feature/*.rs");
}
