//! Settings changed while the program runs: overrides by name before
//! traffic ([`apply`], [`from_env`], and with the `serde` feature a
//! [`Builder`](crate::Builder) per breaker read from a TOML or YAML section), and live
//! changes of a running breaker ([`Breaker::reconfigure`](crate::Breaker::reconfigure), also on a
//! [`registry::get`] handle). With the `keyed` feature a name may also be a
//! keyed family's, for every key's breaker, or `family[key]`, for one key's
//! (see [`apply`]).
//!
//! Two ways to change settings by name:
//!
//! - **Patches** ([`apply`], [`from_env`], `reconfigure`): the keys a patch
//!   sets change, every other setting stays as it is in force. Nothing
//!   goes back by itself: a value set stays until another patch changes it.
//! - **Documents** ([`reload`]): a whole configuration file's sections,
//!   each breaker or family named getting its *declared* settings with its
//!   section applied, and each name the previous reload named and this one
//!   no longer does going back to its declared settings. A reload after a
//!   section (or a key of one) was deleted from the file puts that breaker
//!   back; `reload` of an empty document puts back everything reloads
//!   changed, and a section with no keys puts its breaker back whatever
//!   changed it. A `mode` from the file is put in force when it changes and,
//!   deleted, back to normal, but an operator's
//!   [`set_mode`](crate::Breaker::set_mode) since the last reload is left
//!   alone (see [`reload`]).
//!
//! ```
//! use failfast_runtime::{configure, registry, Breaker};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let payments = Arc::new(Breaker::builder().name("payments::charge").threshold(5).build()?);
//! registry::register(&payments);
//!
//! configure::apply(
//!     "payments::charge",
//!     Breaker::builder().threshold(10).recovery(Duration::from_secs(60)),
//! )?;
//! assert_eq!(payments.config().threshold(), 10);
//!
//! // A patch that cannot work is refused whole, naming breaker, key and reason.
//! let refused = payments.reconfigure(&Breaker::builder().recovery(Duration::from_secs(5)).threshold(0));
//! assert_eq!(refused.unwrap_err().to_string(), "breaker `payments::charge`: `threshold` must be at least 1");
//! assert_eq!(payments.config().threshold(), 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Where each setting came from
//!
//! Each breaker records, setting by setting, where the value in force came
//! from, as an [`Origin`]: [`Declared`](Origin::Declared) (the attribute,
//! `breaker!` or the builder), [`File`](Origin::File) (a section of the
//! document [`reload`] put in force), [`Environment`](Origin::Environment)
//! ([`from_env`]) or [`RunTime`](Origin::RunTime) ([`apply`],
//! [`Breaker::reconfigure`](crate::Breaker::reconfigure),
//! [`FamilyRef::reconfigure`](crate::ops::registry::FamilyRef::reconfigure)).
//! A key a change sets takes that change's origin, whether or not its
//! value changed, and keeps it until another change sets it; a reload
//! gives every setting its declared origin but those its section sets, so
//! a section (or a key of one) dropped from the file reads as declared
//! again. A keyed family's members take their family's origins, with any
//! change made to one by its name. A change refused records nothing; the
//! `mode` is manual control and has no origin. The listing shows them:
//! [`registry::all`] gives every breaker, and each one's
//! [`Snapshot`](crate::Snapshot) holds its settings in force
//! (`settings`) and the origin of each setting not as declared
//! (`origins`, by key).
//!
//! ```
//! use failfast_runtime::configure::{self, Origin};
//! use failfast_runtime::{registry, Breaker};
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! let search = Arc::new(Breaker::builder().name("origins::search").threshold(5).build()?);
//! registry::register(&search);
//! configure::from_env([("FAILFAST__ORIGINS_SEARCH__THRESHOLD", "3")]).map_err(|e| e[0].clone())?;
//!
//! let row = registry::all().into_iter().find(|b| b.name() == "origins::search").unwrap();
//! let snapshot = row.snapshot();
//! assert_eq!(snapshot.settings.threshold(), 3);
//! assert_eq!(snapshot.origins, BTreeMap::from([("threshold", Origin::Environment)]));
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! # What can change
//!
//! The values of the rules the breaker was declared with: `threshold`,
//! `failure_rate`, `min_calls`, `slow_rate`, `recovery`, `max_recovery`,
//! `jitter`, `trial_calls`, `success_threshold`, `shed` and `shed_window`
//! (graded shedding's, for a breaker that sheds), and the `mode`
//! (`observe_only`: calls always pass while the rules keep running, so
//! events, `state()` and snapshots show what the breaker would have done;
//! `normal`: back to normal operation, closed); and, for a breaker with a
//! rate rule, the `window`'s shape (below). Which rules are in force
//! (consecutive failures, failure rate, slow calls) and the `slow` duration
//! are part of how calls are counted and stay as declared: a patch changing
//! them is refused (so is a `window` for a breaker without a rate rule). A
//! changed value applies from the next decision that reads it: a new
//! `threshold` at the next failure, a new `recovery` at the next opening, a
//! new `trial_calls` at the next half-open admission.
//!
//! A keyed family's own bounds change by its name, beside its members'
//! settings: `max_keys` (lowered, the family evicts down to it as far as
//! members may be evicted) and `max_ejection_percent` (lowered, the
//! members open stay open until they recover, and none trips until fewer
//! are open than the new share); see [`Builder::max_keys`](crate::Builder::max_keys)
//! and [`Builder::max_ejection_percent`](crate::Builder::max_ejection_percent).
//! A breaker, or a key's breaker by its name, refuses them.
//!
//! # Limits of the calls in flight
//!
//! A breaker declared with a time limit (`timeout`) can change it: a call
//! reads the limit once, as it starts (one relaxed load, only on calls that
//! have a limit), so a call already running keeps the limit it started
//! with, and every call that starts after the change gets the new one. A
//! breaker declared without one refuses a `timeout` (its calls are not
//! timed). The limit is held to the settings beside it as when declared:
//! `slow` shorter than it, graded shedding's `shed_window` at least as
//! long; a patch breaking either is refused whole. `reload` puts it back to
//! the declared value with the rest.
//!
//! A concurrency limit (`max_concurrent`, a fixed one or an adaptive
//! range) and its `max_wait` change too, on a breaker declared with them:
//! the calls running keep their places, a lower limit admits none until
//! fewer than it run, a higher one admits calls at once and wakes those
//! waiting, and a changed wait applies to the calls that start waiting
//! after it (see [`Builder::adaptive_concurrency`](crate::Builder::adaptive_concurrency)
//! and [`Builder::max_wait`](crate::Builder::max_wait)).
//!
//! # The window's shape
//!
//! A patch that changes the window's shape (a count window's size, a time
//! window's length, or a count window for a time window or the other way)
//! resets the window: the breaker starts a fresh, empty window of the new
//! shape, so the rate verdict starts again from zero calls and needs
//! `min_calls` new calls before it can trip. Nothing else is reset: the
//! state, the consecutive count and the running totals of
//! [`Snapshot`](crate::Snapshot) (`calls`, `failures`, …) go on. A patch
//! giving the shape the window already has changes nothing. A count window
//! smaller than `min_calls` could never trip and is refused, unless the same
//! patch lowers `min_calls` to fit.
//!
//! ```
//! use failfast_runtime::{Breaker, State};
//! use std::time::Duration;
//!
//! let b = Breaker::builder().failure_rate(0.5).window_calls(100).min_calls(10).build()?;
//! for _ in 0..5 {
//!     let _ = b.call(|| Err::<(), _>("down"));
//! }
//! assert_eq!(b.snapshot().window_failures, 5);
//! b.reconfigure(&Breaker::builder().window_time(Duration::from_secs(60)).min_calls(4))?;
//! let s = b.snapshot();
//! assert_eq!((s.window_calls, s.window_failures, s.failures), (0, 0, 5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The new window and the settings that describe it are published one
//! after the other, the window first. A call that read the window just
//! before the swap records into the old one: its outcome is counted in the
//! totals but lost to the new window (and a verdict it brings is taken on
//! the old window with whichever settings it reads). A call is never lost
//! to the totals, and no call is recorded twice. The old window (a count
//! window of N calls takes about N / 4 + 512 bytes, a time window about
//! 1 KiB) is freed once no call reads it: a thread still recording into it
//! holds it until it is done. However often a breaker is reconfigured, it
//! holds the window in force and those that calls are still recording into.
//!
//! # Cost
//!
//! The closed-call path never reads an override: the values above are read
//! where a breaker decides something (a failure, a trip, a trial). There a
//! breaker never reconfigured reads one flag; a reconfigured one holds the
//! settings in force while it reads them, with a guard that costs a couple
//! of atomic operations on a line of the calling thread's own and writes
//! nothing that other threads read or write. Each reconfiguration publishes
//! an immutable copy of the settings (one `Config`, 144 bytes at most); the
//! copy it replaces is freed once no call reads it. The window sits behind a
//! guard of the same kind, taken by every call that reads the window (a
//! failed or slow call, a success that consults it), whether its shape ever
//! changed or not.
//!
//! # Environment variables
//!
//! [`from_env`] reads `FAILFAST__<BREAKER>__<KEY>=<value>`: `<BREAKER>` is
//! the name of a breaker or of a keyed family (every key's breaker, as by
//! [`apply`]) in upper case with every run of characters other than
//! letters and digits written `_` (`payments::charge` →
//! `PAYMENTS_CHARGE`), `<KEY>` the key in upper case (`THRESHOLD`,
//! `FAILURE_RATE`, `RECOVERY`, `WINDOW`, `MODE`, …), durations written as
//! in the attribute (`30s`, `250ms`, `1m 30s`; a `WINDOW` is a number of
//! calls or a duration):
//!
//! ```text
//! FAILFAST__PAYMENTS_CHARGE__THRESHOLD=10
//! FAILFAST__PAYMENTS_CHARGE__RECOVERY=1m
//! FAILFAST__INVENTORY__MODE=observe_only
//! ```
//!
//! Every variable is checked before any is applied: an unknown breaker or
//! key, a value that does not parse or does not fit, and nothing changes.
//! (A file's sections are applied each on its own: see [`apply`].)
//!
//! Different names can map to one name in variables (`pay.charge` and
//! `pay-charge` are both `PAY_CHARGE`): a variable that matches more than
//! one name of breakers or families is refused, with the names it matched
//! (set them by name with [`apply`]). A name with no ASCII
//! letter or digit (`платежи`, `支付`) maps to the empty name: such a
//! breaker cannot be set from the environment, and a variable naming the
//! empty breaker (`FAILFAST____THRESHOLD`) is refused. Breakers built at run
//! time that share a name are all changed, as by [`apply`]. A key's
//! breaker (`family[key]`) has no name in variables: set it with
//! [`apply`]. A variable
//! under `FAILFAST__` whose name or value is not UTF-8 is refused (shown with
//! `�` for the bytes that are not); every other variable is ignored, UTF-8
//! or not.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};

pub use crate::core::breaker::Origin;
use crate::core::breaker::Origins;
use crate::core::config::Builder;
use crate::core::config::{Config, Mode};
use crate::core::config::{FIXED, Patch, set_from_text};
use crate::core::error::ConfigError;
use crate::core::name::Name;
use crate::ops::registry::{self, BreakerRef};

mod env;
mod reload;
mod target;

pub use env::from_env;
pub use reload::reload;
use target::targets;

/// Overrides the settings of the breaker registered under `name` (every
/// `#[circuit_breaker]` is, from program start): checked whole, applied
/// whole or not at all.
///
/// Breakers built at run time may share a name (see
/// [`registry`]): the patch then applies to every live
/// breaker of that name. It is checked against each of them first, and
/// applied to none if any of them refuses it.
///
/// With the `keyed` feature, `name` may also be a registered keyed
/// family's: the patch then changes every key's breaker, now and later
/// ([`FamilyRef::reconfigure`](crate::ops::registry::FamilyRef::reconfigure)),
/// checked first against the family's settings and its members'. And
/// `family[key]` (`inventory[10.0.0.3]`) changes that key's breaker alone,
/// made before the key's first call if need be
/// ([`FamilyRef::member`](crate::ops::registry::FamilyRef::member)); a breaker
/// changed so is never evicted.
///
/// ```
/// # #[cfg(feature = "keyed")] {
/// use failfast_runtime::{configure, registry, Breaker, Family};
///
/// let replicas: Family<String> =
///     Family::builder(Breaker::builder().name("replicas").threshold(5)).build()?;
/// registry::register(&replicas);
/// configure::apply("replicas", Breaker::builder().threshold(3))?;
/// configure::apply("replicas[10.0.0.3]", Breaker::builder().threshold(1))?;
/// assert_eq!(replicas.get("10.0.0.1").config().threshold(), 3);
/// assert_eq!(replicas.get("10.0.0.3").config().threshold(), 1);
///
/// let unknown = configure::apply("replica", Breaker::builder().threshold(3));
/// assert_eq!(
///     unknown.unwrap_err().to_string(),
///     "`replica` matches no registered breaker or family"
/// );
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A configuration file's section (with the `serde` feature, a
/// `BTreeMap<String, Builder>`) is one `apply` per name: each section is
/// applied whole or not at all, and a section refused keeps no other from
/// being applied. (To reload a file, so that a section deleted since puts
/// its breaker back to its declared settings, use [`reload`].)
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use failfast_runtime::{configure, registry, Breaker, Builder, ConfigError};
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
///
/// let inventory = Arc::new(Breaker::builder().name("inventory").build().unwrap());
/// registry::register(&inventory);
///
/// // e.g. `toml::from_str` of the `[failfast]` table of the service's file.
/// let section: BTreeMap<String, Builder> = serde_json::from_str(
///     r#"{ "inventory": { "threshold": 3, "recovery": "10s" },
///          "invetory": { "threshold": 4 } }"#,
/// ).unwrap();
/// let refused: Vec<ConfigError> = section
///     .into_iter()
///     .filter_map(|(name, settings)| configure::apply(&name, settings).err())
///     .collect();
/// assert_eq!(refused[0].to_string(), "`invetory` matches no registered breaker or family");
/// assert_eq!(inventory.config().threshold(), 3, "the good section applied");
/// # }
/// ```
///
/// # Errors
///
/// [`ConfigError`]: no breaker or family of that name (key `name`), or a
/// value that cannot work (for a breaker of that name; the first such
/// refusal).
pub fn apply(name: &str, settings: Builder) -> Result<(), ConfigError> {
    if let Some(key) = settings.fixed {
        return Err(ConfigError::refused(name, key, FIXED));
    }
    let patches = BTreeMap::from([(name.to_owned(), settings.patch)]);
    match apply_counted(&patches, Origin::RunTime) {
        Ok(_) => Ok(()),
        Err(errors) => Err(errors
            .into_iter()
            .next()
            .expect("a refusal carries at least one error")),
    }
}

/// Applies every patch, coming `from` there, or none if any is refused:
/// how many breakers and families it changed. An `Err` holds at least one
/// error.
fn apply_counted(
    patches: &BTreeMap<String, Patch>,
    from: Origin,
) -> Result<usize, Vec<ConfigError>> {
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut fitting = Vec::new();
    for (name, patch) in patches {
        match targets(name, patch) {
            Ok(targets) => fitting.push((targets, patch)),
            Err(refused) => errors.extend(refused),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut changed = 0;
    for (targets, patch) in fitting {
        for target in targets {
            // Checked above; a concurrent change in between is reported here.
            match target.reconfigure(patch, from) {
                Ok(()) => changed += 1,
                Err(error) => errors.push(error),
            }
        }
    }
    if errors.is_empty() {
        Ok(changed)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::breaker::Breaker;
    use std::time::Duration;

    /// Two threads deciding on a breaker (failures read the threshold, a
    /// check reads the whole settings) while it is reconfigured again and
    /// again: every reading is one published whole, and the latest one
    /// decides the next trip.
    #[test]
    fn reconfiguring_while_two_threads_call() {
        use crate::core::error::State;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        const HIGH: u32 = 1_000_000;
        let b = Breaker::builder()
            .threshold(HIGH)
            .recovery(Duration::from_secs(u64::from(HIGH)))
            .clock(crate::ManualClock::new())
            .build()
            .unwrap();
        let stop = AtomicBool::new(false);
        let readings = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                let (b, stop, readings) = (&b, &stop, &readings);
                s.spawn(move || {
                    let mut last = HIGH;
                    while !stop.load(Ordering::Relaxed) {
                        let c = b.settings();
                        // Published together: threshold n, recovery n seconds.
                        assert_eq!(
                            u64::from(c.threshold()),
                            c.recovery().as_secs(),
                            "a torn reading"
                        );
                        assert!(c.threshold() <= last, "went back in time");
                        last = c.threshold();
                        let _ = b.call(|| Err::<(), _>(()));
                        let _ = b.call(|| Ok::<_, ()>(()));
                        readings.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            for n in (HIGH - 2000..HIGH).rev() {
                let patch = Breaker::builder()
                    .threshold(n)
                    .recovery(Duration::from_secs(u64::from(n)));
                b.reconfigure(&patch).unwrap();
            }
            while readings.load(Ordering::Relaxed) < 1000 {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(b.state(), State::Closed);
        b.reconfigure(&Breaker::builder().threshold(2)).unwrap();
        let _ = b.call(|| Err::<(), _>(()));
        assert_eq!(b.state(), State::Closed);
        let _ = b.call(|| Err::<(), _>(()));
        assert_eq!(b.state(), State::Open, "the latest threshold decides");
        assert_eq!(b.reconfigurations(), 2001);
    }

    /// The memory each reconfiguration keeps, as the module docs state it.
    #[test]
    fn a_published_config_is_144_bytes_at_most() {
        assert!(std::mem::size_of::<Config>() <= 144);
    }
}
