//! The limits and defaults of a breaker's settings.

use std::time::Duration;

/// Default number of consecutive counted failures that trips a breaker.
pub const DEFAULT_THRESHOLD: u32 = 5;
/// Largest consecutive-failure `threshold` a breaker accepts (2^24 − 1: the
/// runtime keeps the count in 24 bits of its state word).
pub const MAX_THRESHOLD: u32 = (1 << 24) - 1;
/// Default number of trial calls admitted at once in half-open.
pub const DEFAULT_TRIAL_CALLS: u32 = 1;
/// Default number of successful trials needed to close.
pub const DEFAULT_SUCCESS_THRESHOLD: u32 = 1;
/// Largest `trial_calls` and `success_threshold` a breaker accepts (the
/// runtime keeps them in 8 bits).
pub const MAX_TRIALS: u32 = 0xFF;
/// Default size of a failure-rate window, in calls.
pub const DEFAULT_WINDOW_CALLS: u32 = 100;
/// Largest count window, in calls.
pub const MAX_WINDOW_CALLS: u32 = 1 << 20;
/// Default number of calls a window must hold before a rate can trip the
/// breaker (see [`default_min_calls`](crate::default_min_calls) for a count
/// window smaller than that).
pub const DEFAULT_MIN_CALLS: u32 = 10;
/// Default time a breaker stays open before it admits a trial call.
pub const DEFAULT_RECOVERY: Duration = Duration::from_secs(30);
/// Shortest default trial lease: a trial permit is presumed lost after ten
/// times `recovery`, and never before this.
pub const MIN_DEFAULT_LEASE: Duration = Duration::from_secs(60);
/// Number of buckets a time window is divided into.
pub const TIME_BUCKETS: u32 = 20;
/// How many breakers a keyed family holds unless `max_keys` says otherwise.
pub const DEFAULT_MAX_KEYS: u32 = 1024;
/// Largest `max_ejection_percent`, and its default: 100 sets no ejection
/// budget.
pub const MAX_EJECTION_PERCENT: u32 = 100;
/// How many times `#[retry]` tries a call unless `attempts` says otherwise.
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// Smallest `shed` multiplier: at 1 a window admits no more calls than the
/// dependency accepted (and sheds none while every call succeeds).
pub const MIN_SHED: f64 = 1.0;
/// Largest `shed` multiplier.
pub const MAX_SHED: f64 = 10.0;
/// The most calls graded shedding lets through at random to a dependency
/// that accepts nothing, as a share of the calls asked for: one in twenty,
/// at 400 requests a window, where it is one call per period
/// (`shed_window / 20`); fewer in proportion below, one per period above. (The
/// dependency also gets the first call after its last failure has left the
/// window.)
pub const SHED_PROBE_SHARE: f64 = 0.05;
/// The window graded shedding measures over unless `shed_window` says
/// otherwise.
pub const DEFAULT_SHED_WINDOW: Duration = Duration::from_secs(10);
/// Largest upper bound of an adaptive `max_concurrent = MIN..=MAX`.
pub const MAX_ADAPTIVE_CONCURRENCY: u32 = u16::MAX as u32;
