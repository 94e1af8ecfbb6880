//! Compile-time behaviour of `#[circuit_breaker]` and `#[retry]`: every
//! misconfiguration is exactly one error at the offending token
//! (`tests/ui/*.rs` with the expected `.stderr`). The shapes that compile are
//! ordinary tests (`tests/shapes/`): with no passing case, trybuild only
//! checks its cases, and builds no code for them or their dependencies.
//! The attribute's own argument errors are grouped by theme, one function per
//! case, in `tests/ui/args_*.rs`: trybuild compiles each file once.
//!
//! The `.stderr` files are pinned to the toolchain the project builds with;
//! regenerate them with `TRYBUILD=overwrite cargo test -p failfast-ui` and read each
//! diff before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    // The expected output is what a user with the default features (`tokio`
    // among them) sees: rustc's notes list the `From` impls in scope, tokio's
    // included, so without the feature only its own directory is run.
    #[cfg(feature = "tokio")]
    {
        t.compile_fail("tests/ui/*.rs");
        t.compile_fail("tests/ui/tokio/*.rs");
    }
    // What a user without the `anyhow` feature sees: run by
    // `cargo test -p failfast-ui`, skipped under `--all-features`.
    #[cfg(not(feature = "anyhow"))]
    t.compile_fail("tests/ui/without_anyhow_feature/*.rs");
    // What a user without the `tokio` feature sees `timeout` and an async
    // `#[retry]` do: run by `cargo test -p failfast-ui --no-default-features`.
    #[cfg(not(feature = "tokio"))]
    t.compile_fail("tests/ui/without_tokio_feature/*.rs");
}
