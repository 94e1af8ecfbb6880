//! Compile-time behaviour of `#[circuit_breaker]`: every supported function
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
}
