//! Hooks for the runtime's own tests of event delivery, which reach the
//! state machine only through `__private`: not called by generated code.

use crate::core::breaker::Breaker;

/// For tests of event delivery: this thread's transitions so far, those of
/// them that waited for the one before to be queued, and those that gave
/// up waiting.
#[must_use]
pub fn thread_turns() -> (u64, u64, u64) {
    crate::core::breaker::transition::thread_turns()
}

/// For tests of event delivery: how many events of `breaker` wait now.
#[must_use]
pub fn backlog(breaker: &Breaker) -> usize {
    crate::core::breaker::transition::backlog(breaker)
}
