//! Transitions as `tracing` events (feature `tracing`).
//!
//! Every transition of every breaker is one event with target `failfast`:
//! into Open at `WARN`, back to Closed at `INFO`, into HalfOpen at `DEBUG`.
//! Nothing is emitted per call. Fields:
//!
//! | field | value |
//! |---|---|
//! | `breaker` | the breaker's name |
//! | `from`, `to` | `closed`, `open`, `half-open` |
//! | `reason` | [`TransitionReason::as_str`](crate::ops::events::TransitionReason::as_str): `threshold_reached`, `failure_rate`, … |
//! | `mode` | manual control in force: `Normal`, `ForcedOpen`, `ForcedClosed`, `Disabled` |
//! | `observe_only` | `true` when the mode is `Disabled` (observe-only): the breaker moved, but calls still pass; the message says so too |
//! | `consecutive_failures`, `window_calls`, `window_failures`, `window_slow`, `trial_successes` | the counts that decided it ([`Counts`](crate::ops::events::Counts)) |
//! | `open_for_secs` | the open time chosen, in seconds, when it opened on its own |
//! | `seq` | the breaker's transition number |
//! | `dropped` | events of the breaker dropped just before this one, unlogged ([`Transition::dropped`](crate::ops::events::Transition::dropped)) |
//!
//! | `shedding` | graded shedding's chance of refusing a call after the event ([`Transition::shedding`](crate::ops::events::Transition::shedding)) |
//! | `concurrency_limit` | the adaptive concurrency limit after the event, 0 without one |
//!
//! Graded shedding (`shed`) starting and stopping, and an adaptive
//! concurrency limit leaving its most places and coming back, are events
//! too, from and to the same state, with reasons `shedding_started` and
//! `limit_lowered` at `WARN`, `shedding_stopped` and `limit_restored` at
//! `INFO`.
//!
//! Events are emitted like any listener's delivery (see
//! [`events`](crate::ops::events#delivery)): in order per breaker, on the thread
//! delivering them (the transitioning one, unless another was delivering that
//! breaker's events at the time), inside the span that thread is in. A
//! subscriber that panics is caught: the breaker, its caller and the delivery
//! of later events carry on.

use ::tracing::{Level, event};

use crate::core::breaker::transition::{DELIVERED, Transition, TransitionReason, WANTED};
use crate::core::breaker::{Breaker, Mode};
use crate::core::error::State;

macro_rules! emit {
    ($level:expr, $t:expr, $($message:tt)+) => {{
        let t = $t;
        let c = &t.counts;
        event!(
            target: "failfast",
            $level,
            breaker = %t.name,
            from = t.from.as_str(),
            to = t.to.as_str(),
            reason = t.reason.as_str(),
            mode = ?t.mode,
            observe_only = t.mode == Mode::ObserveOnly,
            consecutive_failures = c.consecutive_failures,
            window_calls = c.window_calls,
            window_failures = c.window_failures,
            window_slow = c.window_slow,
            trial_successes = c.trial_successes,
            open_for_secs = t.open_for.map(|d| d.as_secs_f64()),
            seq = t.seq,
            dropped = t.dropped,
            shedding = t.shedding,
            concurrency_limit = c.concurrency_limit,
            $($message)+
        )
    }};
}

/// Every transition as a `tracing` event.
#[linkme::distributed_slice(DELIVERED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static EMIT: fn(&Breaker, &Transition) = |_, t| transition(t);

#[linkme::distributed_slice(WANTED)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static WANTED_BY_TRACING: fn() -> bool = || true;

/// Emits `t` at its level.
fn transition(t: &Transition) {
    let observe_only = if t.mode == Mode::ObserveOnly {
        "; observe only, calls still pass"
    } else {
        ""
    };
    let limit = t.counts.concurrency_limit;
    match t.reason {
        TransitionReason::SheddingStarted => emit!(
            Level::WARN,
            t,
            "circuit breaker `{}` sheds load: refuses {}% of calls{observe_only}",
            t.name,
            // To a tenth of a percent, never up: all but the probes is not
            // all.
            (t.shedding * 1000.0).floor() / 10.0
        ),
        TransitionReason::SheddingStopped => emit!(
            Level::INFO,
            t,
            "circuit breaker `{}` stopped shedding load",
            t.name
        ),
        TransitionReason::LimitLowered => emit!(
            Level::WARN,
            t,
            "circuit breaker `{}` lowered its concurrency limit to {limit}{observe_only}",
            t.name
        ),
        TransitionReason::LimitRestored => emit!(
            Level::INFO,
            t,
            "circuit breaker `{}` concurrency limit back at {limit}",
            t.name
        ),
        _ => match t.to {
            State::Open => emit!(Level::WARN, t, "{}{observe_only}", moved(t)),
            State::Closed => emit!(Level::INFO, t, "{}{observe_only}", moved(t)),
            State::HalfOpen => emit!(Level::DEBUG, t, "{}{observe_only}", moved(t)),
        },
    }
}

/// A transition's message: "circuit breaker `name` from → to (reason)".
fn moved(t: &Transition) -> String {
    format!(
        "circuit breaker `{}` {} → {} ({})",
        t.name, t.from, t.to, t.reason
    )
}
