//! The compile errors of failfast's attributes live in `tests/ui`, checked by
//! `tests/ui.rs` with trybuild; this crate holds them so that trybuild builds
//! only the few crates they use.
