//! Helpers shared by the benches that include this directory with
//! `#[path = "support/mod.rs"] mod support;`.

pub mod cpu_time;
pub mod threads;
