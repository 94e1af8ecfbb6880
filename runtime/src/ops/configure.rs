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
//! an immutable copy of the settings (one `Config`, 136 bytes at most); the
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
/// use failfast_runtime::{configure, Breaker, Family};
///
/// let replicas: Family<String> =
///     Family::builder(Breaker::builder().name("replicas").threshold(5)).build()?;
/// replicas.register();
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

/// Makes the run-time settings those of a whole document: each breaker or
/// family it names gets its declared settings with its section applied
/// (not the settings in force: a key the section no longer writes goes back
/// to its declared value), and each name the previous `reload` named and
/// this one does not goes back to its declared settings. `reload` of an
/// empty document puts back everything the reloads changed; reloading a
/// breaker named with an empty section (`Breaker::builder()`) puts it back
/// to its declared settings, whatever changed it.
///
/// ```
/// use failfast_runtime::{configure, registry, Breaker, Builder, Mode};
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
///
/// let search = Arc::new(Breaker::builder().name("reload::search").threshold(5).build()?);
/// registry::register(&search);
///
/// // e.g. `toml::from_str` of the `[failfast]` table, with the `serde` feature.
/// let file = BTreeMap::from([(
///     "reload::search".to_owned(),
///     Breaker::builder().threshold(2).mode(Mode::ObserveOnly),
/// )]);
/// configure::reload(file).map_err(|refused| refused[0].clone())?;
/// assert_eq!(search.config().threshold(), 2);
/// assert_eq!(search.snapshot().mode, Mode::ObserveOnly);
///
/// // The section deleted from the file: back to the declared settings.
/// configure::reload(BTreeMap::<String, Builder>::new()).map_err(|refused| refused[0].clone())?;
/// assert_eq!(search.config().threshold(), 5);
/// assert_eq!(search.snapshot().mode, Mode::Normal);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// Names are those of [`apply`]: a breaker (every live breaker of that
/// name), a keyed family (every member, now and later, but those the
/// document names by `family[key]`, whatever was changed on them before)
/// and a key's breaker, `family[key]`, whose settings are its family's (as
/// this document leaves them) with its section applied; dropped, it goes
/// back to its family's settings and mode.
///
/// **What a reload leaves alone.** Only the names of its documents: a
/// breaker no reload named keeps what [`apply`], [`from_env`] or
/// [`Breaker::reconfigure`](crate::Breaker::reconfigure) gave it (call
/// them after `reload` to lay them over the file).
///
/// **The mode** is manual control, and a document sets it only when it
/// changes: a section's `mode` is put in force when the previous reload's
/// section for that name did not set that same mode; one unchanged since
/// is not set again, so that an operator's
/// [`set_mode`](crate::Breaker::set_mode) since then stays. A `mode` the
/// document no longer sets (the key or the whole section deleted) goes
/// back to [`Mode::Normal`](crate::Mode::Normal) (a key's breaker: to its
/// family's mode) only if the breaker is still in the mode the previous
/// reload set; a breaker an operator forced open meanwhile stays open.
///
/// **Refusals.** Each section is checked whole against the settings it
/// replaces and applied whole or not at all, as by [`apply`]; a refused
/// section leaves that name as it was (and as the previous reload left
/// it, should a later reload drop it), and keeps no other from being
/// applied. Names the previous reload named are put back whatever is
/// refused.
///
/// **Calls in flight** finish as for [`Breaker::reconfigure`](crate::Breaker::reconfigure):
/// each decision reads the settings in force when it is taken, each
/// breaker's settings are published whole (a call reads the old or the
/// new, never a mix), a new window shape starts a fresh window, and no
/// call is lost to the running totals. Breakers change one after the
/// other, not all at one instant. A breaker whose settings are already
/// those of the document is not touched: reloading the same document
/// publishes nothing. Reloads run one at a time.
///
/// # Errors
///
/// One [`ConfigError`] per refused section, as [`apply`] reports it (its
/// first refusal): a name that matches no registered breaker or family
/// (key `name`), a key fixed once built, or a value that cannot work.
/// Every other section was applied.
pub fn reload(sections: BTreeMap<String, Builder>) -> Result<(), Vec<ConfigError>> {
    static LAST: Mutex<BTreeMap<String, Option<Mode>>> = Mutex::new(BTreeMap::new());
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    let keep = |member: &str| sections.contains_key(member);
    let mut errors = Vec::new();
    let mut now = BTreeMap::new();
    let mut keys = Vec::new();
    let names = sections.keys().chain(last.keys().filter(|n| !keep(n)));
    let mut names: Vec<String> = names.cloned().collect();
    // Breakers and families first: a key's section applies to its
    // family's settings as this document leaves them.
    for key_phase in [false, true] {
        for name in std::mem::take(&mut names) {
            let name = &name;
            let section = sections.get(name);
            let patch = section.map(|s| s.patch.clone()).unwrap_or_default();
            let reloaded = match section.and_then(|s| s.fixed) {
                Some(key) => Err(ConfigError::refused(name, key, FIXED)),
                None => reloaded(name, &patch, section.is_some(), key_phase),
            };
            match reloaded {
                Ok(targets) if targets.is_empty() && !key_phase => keys.push(name.clone()),
                Ok(targets) if targets.is_empty() && section.is_some() => errors.push(
                    ConfigError::refused(name, "name", "matches no registered breaker or family"),
                ),
                Ok(targets) if targets.is_empty() => {}
                Ok(targets) => {
                    let (was, want) = (last.get(name).copied().flatten(), patch.mode);
                    for (target, next, origins, home) in targets {
                        target.replace(next, origins, &keep);
                        match (want, was) {
                            (Some(mode), was) if was != Some(mode) => target.set_mode(mode),
                            (None, Some(was)) if target.mode() == was => target.set_mode(home),
                            _ => {}
                        }
                    }
                    if section.is_some() {
                        now.insert(name.clone(), want);
                    }
                }
                Err(refused) => {
                    errors.push(refused);
                    if let Some(&was) = last.get(name) {
                        now.insert(name.clone(), was);
                    }
                }
            }
        }
        names = std::mem::take(&mut keys);
    }
    *last = now;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// What `name` addresses in a reload, each with the settings `patch` gives
/// it (on its declared settings, a key's on its family's), where they come
/// from (the file for those `patch` sets) and the mode it goes back to:
/// breakers and families, or else (`keys`) a key's breaker, made before its
/// first call only when `make`. None when it addresses nothing; the first
/// refusal when `patch` does not fit one.
fn reloaded(
    name: &str,
    patch: &Patch,
    make: bool,
    keys: bool,
) -> Result<Vec<(Target, Config, Origins, Mode)>, ConfigError> {
    let refused = |(key, reason)| ConfigError::refused(name, key, reason);
    let from_file = |origins: Origins| origins.with(patch.keys(), Origin::File);
    let mut found = Vec::new();
    if !keys {
        for breaker in registry::registered()
            .into_iter()
            .filter(|b| b.name() == name)
        {
            let next = patch.applied_to(breaker.declared()).map_err(refused)?;
            let origins = from_file(Origins::DECLARED);
            found.push((Target::Breaker(breaker), next, origins, Mode::Normal));
        }
        #[cfg(feature = "keyed")]
        for family in registry::families()
            .into_iter()
            .filter(|f| f.name() == name)
        {
            let next = patch.applied_to(&family.0.declared()).map_err(refused)?;
            let origins = from_file(Origins::DECLARED);
            found.push((Target::Family(family), next, origins, Mode::Normal));
        }
        return Ok(found);
    }
    #[cfg(feature = "keyed")]
    {
        let member = if make {
            key_breaker(name, patch).transpose()?
        } else {
            registry::get(name)
        };
        if let (Some(member), Some((family, _))) = (member, key_family(name)) {
            let mut base = family.config();
            base.name = member.shared_name();
            let next = patch.applied_to(&base).map_err(refused)?;
            let origins = from_file(family.0.origins());
            found.push((Target::Breaker(member), next, origins, family.0.mode()));
        }
    }
    #[cfg(not(feature = "keyed"))]
    let _ = make;
    Ok(found)
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

/// What a name in an override changes.
enum Target {
    /// A breaker: registered, or a family's member.
    Breaker(BreakerRef),
    /// Every breaker of a keyed family, now and later.
    #[cfg(feature = "keyed")]
    Family(registry::FamilyRef),
}

impl Target {
    fn reconfigure(&self, patch: &Patch, from: Origin) -> Result<(), ConfigError> {
        match self {
            Target::Breaker(breaker) => breaker.apply(patch, from),
            #[cfg(feature = "keyed")]
            Target::Family(family) => family.apply(patch, from),
        }
    }

    /// Replaces the settings in force with `next`, coming from `origins`;
    /// a family's members named by `keep` keep theirs.
    #[cfg_attr(not(feature = "keyed"), allow(unused_variables))]
    fn replace(&self, next: Config, origins: Origins, keep: &dyn Fn(&str) -> bool) {
        match self {
            Target::Breaker(breaker) => breaker.replace(next, origins),
            #[cfg(feature = "keyed")]
            Target::Family(family) => family.0.replace(&next, origins, keep),
        }
    }

    fn mode(&self) -> Mode {
        match self {
            Target::Breaker(breaker) => breaker.mode(),
            #[cfg(feature = "keyed")]
            Target::Family(family) => family.0.mode(),
        }
    }

    fn set_mode(&self, mode: Mode) {
        match self {
            Target::Breaker(breaker) => breaker.set_mode(mode),
            #[cfg(feature = "keyed")]
            Target::Family(family) => family.0.set_mode(mode),
        }
    }
}

/// What `name` addresses, each checked against `patch`: every live breaker
/// registered under `name` (breakers built at run time may share one) and
/// every keyed family of that name; else the breaker of a family's key
/// (`family[key]`). Every refusal, named `name`, when any.
fn targets(name: &str, patch: &Patch) -> Result<Vec<Target>, Vec<ConfigError>> {
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut check = |config: &Config| {
        if let Err((key, reason)) = patch.applied_to(config) {
            let error = ConfigError::refused(name, key, reason);
            if !errors.contains(&error) {
                errors.push(error);
            }
        }
    };
    let mut found: Vec<Target> = Vec::new();
    for breaker in registry::registered()
        .into_iter()
        .filter(|b| b.name() == name)
    {
        check(&breaker.config());
        found.push(Target::Breaker(breaker));
    }
    #[cfg(feature = "keyed")]
    for family in registry::families()
        .into_iter()
        .filter(|f| f.name() == name)
    {
        check(&family.config());
        for member in family.members() {
            check(&member.breaker().config());
        }
        found.push(Target::Family(family));
    }
    #[cfg(feature = "keyed")]
    if found.is_empty() {
        match key_breaker(name, patch) {
            Some(Ok(member)) => {
                check(&member.config());
                found.push(Target::Breaker(member));
            }
            Some(Err(error)) => errors.push(error),
            None => {}
        }
    }
    if found.is_empty() && errors.is_empty() {
        errors.push(ConfigError::refused(
            name,
            "name",
            "matches no registered breaker or family",
        ));
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// The breaker of `family[label]`: the member if the key has one (or the
/// overflow breaker `family[*]` once used), else one its first call adopts,
/// made only once `patch` fits the family's settings. `None` when `name`
/// names no registered family's key.
#[cfg(feature = "keyed")]
fn key_breaker(name: &str, patch: &Patch) -> Option<Result<BreakerRef, ConfigError>> {
    if let Some(member) = registry::get(name) {
        return Some(Ok(member));
    }
    let (family, label) = key_family(name)?;
    if let Err((key, reason)) = patch.applied_to(&family.config()) {
        return Some(Err(ConfigError::refused(name, key, reason)));
    }
    Some(family.member(&label).ok_or_else(|| {
        let (waiting, family) = (family.stats().max_keys, family.name());
        let reason = if label == "*" {
            format!(
                "is the overflow breaker of the family `{family}`, made when a key first finds \
                 the family full; set the family's settings by its name `{family}`"
            )
        } else {
            format!(
                "is a key of the family `{family}` with no breaker yet, and {waiting} keys \
                 already wait for their first call with breakers made before it: set the \
                 family's settings by its name `{family}`, or this key's after its first call"
            )
        };
        ConfigError::refused(name, "name", reason)
    }))
}

/// The registered family whose key `name` (`family[key]`) names, with
/// the key's label: the longest family name that fits, as a key may hold
/// brackets itself (`[::1]:80`).
#[cfg(feature = "keyed")]
fn key_family(name: &str) -> Option<(registry::FamilyRef, String)> {
    registry::families()
        .into_iter()
        .filter_map(|f| {
            let label = name
                .strip_prefix(f.name().as_str())?
                .strip_prefix('[')?
                .strip_suffix(']')?
                .to_owned();
            Some((f, label))
        })
        .max_by_key(|(f, _)| f.name().len())
}

/// Applies the `FAILFAST__<BREAKER>__<KEY>` overrides among `vars`, all or
/// nothing (see [the scheme](self#environment-variables)): pass
/// `std::env::vars_os()` for the process environment, or any `(name,
/// value)` pairs of `String`s, `&str`s or `OsString`s. Variables outside
/// the scheme are ignored, whether or not they are UTF-8. Returns how many
/// breakers were changed (every breaker of a name several share counts, a
/// keyed family once).
///
/// # Errors
///
/// Every variable refused (a name that is unknown, empty or ambiguous, an
/// unknown key, a name or value that is not UTF-8, unparsable value, a value that
/// cannot work), each with its breaker, key and reason; then nothing was
/// applied.
pub fn from_env<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Result<usize, Vec<ConfigError>>
where
    K: Into<OsString>,
    V: Into<OsString>,
{
    const PREFIX: &str = "FAILFAST__";
    // Each name in variables, with the breaker and family names that map to
    // it: more than one, and a variable cannot say which it means. A name
    // that maps to the empty name is left out: nothing can address it.
    let mut by_env: BTreeMap<String, Vec<Name>> = BTreeMap::new();
    let registered = registry::registered().into_iter().map(|b| b.shared_name());
    #[cfg(feature = "keyed")]
    let registered = registered.chain(registry::families().into_iter().map(|f| f.name()));
    for name in registered {
        let env = env_name(&name);
        if env.is_empty() {
            continue;
        }
        let names = by_env.entry(env).or_default();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut patches: BTreeMap<String, Patch> = BTreeMap::new();
    let mut errors = Vec::new();
    for (var, value) in vars {
        let (var, value): (OsString, OsString) = (var.into(), value.into());
        if !var.as_encoded_bytes().starts_with(PREFIX.as_bytes()) {
            continue;
        }
        let Some(var) = var.to_str() else {
            let lossy = var.to_string_lossy();
            errors.push(ConfigError::refused(
                &lossy[PREFIX.len()..],
                "",
                format!("`{lossy}` is not UTF-8, as the name of a `{PREFIX}` variable must be"),
            ));
            continue;
        };
        let rest = &var[PREFIX.len()..];
        let Some((breaker, key)) = rest.rsplit_once("__") else {
            errors.push(ConfigError::refused(
                rest,
                "",
                format!("`{var}` is not `FAILFAST__<BREAKER>__<KEY>`"),
            ));
            continue;
        };
        let name = match by_env.get(breaker).map(Vec::as_slice) {
            Some([name]) => name,
            Some(names) => {
                let mut names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                names.sort();
                errors.push(ConfigError::refused(
                    breaker,
                    "name",
                    format!(
                        "(from `{var}`) matches {} names of breakers or families, {}: they \
                         differ only in characters other than ASCII letters and digits, which \
                         variables cannot tell apart; set them by name with `configure` or \
                         `apply`",
                        names.len(),
                        names.join(", ")
                    ),
                ));
                continue;
            }
            None if breaker.is_empty() => {
                errors.push(ConfigError::refused(
                    breaker,
                    "name",
                    format!(
                        "(from `{var}`) is empty: a breaker or family whose name has no ASCII \
                         letter or digit cannot be set from the environment"
                    ),
                ));
                continue;
            }
            None => {
                errors.push(ConfigError::refused(
                    breaker,
                    "name",
                    format!("(from `{var}`) matches no registered breaker or family"),
                ));
                continue;
            }
        };
        let key = key.to_ascii_lowercase();
        let Some(text) = value.to_str() else {
            errors.push(ConfigError::refused(
                name,
                &key,
                format!("`{}` (from `{var}`) is not UTF-8", value.to_string_lossy()),
            ));
            continue;
        };
        let patch = patches.entry(name.to_string()).or_default();
        if let Err(reason) = set_from_text(patch, &key, text.trim()) {
            errors.push(ConfigError::refused(name, &key, reason));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    apply_counted(&patches, Origin::Environment)
}

/// A breaker's (or keyed family's) name as written in environment
/// variables: upper case, every run of characters other than ASCII letters
/// and digits as one `_`.
///
/// Empty for a name with no ASCII letter or digit (`платежи`): such a
/// breaker cannot be set from the environment. Names that differ only in
/// other characters (`pay.charge`, `pay-charge`) give the same result, and
/// a variable that matches more than one name is refused (see
/// [the scheme](self#environment-variables)).
#[must_use]
fn env_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_owned()
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
    fn a_published_config_is_136_bytes_at_most() {
        assert!(std::mem::size_of::<Config>() <= 136);
    }

    #[test]
    fn env_names_collapse_separators() {
        assert_eq!(env_name("payments::charge"), "PAYMENTS_CHARGE");
        assert_eq!(env_name("payments@host-3"), "PAYMENTS_HOST_3");
        assert_eq!(env_name("inventory"), "INVENTORY");
        assert_eq!(env_name("pay.charge"), env_name("pay-charge"));
        assert_eq!(env_name("платежи"), "");
        assert_eq!(env_name("支付"), "");
    }
}
