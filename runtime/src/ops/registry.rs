//! Every breaker, reachable by name.
//!
//! Breakers declared by `#[circuit_breaker]` are listed from program start,
//! before their first call: each adds itself at link time to a slice the
//! registry reads the first time it is used (see [Declared breakers](#declared-breakers)).
//! Breakers built with [`Breaker::builder`] are registered with [`register`].
//!
//! ```
//! use failfast_runtime::{registry, Breaker};
//! use std::sync::Arc;
//!
//! let payments = Arc::new(Breaker::builder().name("payments").build()?);
//! registry::register(&payments);
//!
//! let handle = registry::get("payments").expect("registered");
//! handle.set_mode(failfast_runtime::Mode::ForcedOpen);
//! assert_eq!(payments.state(), failfast_runtime::State::Open);
//! handle.set_mode(failfast_runtime::Mode::Normal);
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! Registration takes a lock, once per breaker, and costs O(1) amortised, as
//! does [`get`]; calls through a breaker never touch the registry.
//!
//! [`integration::watch`](crate::integration::watch) hands every breaker to a callback, those registered already and
//! those registered later (an attribute breaker on its first call): what a
//! fleet of instances uses to take every breaker of the process along.
//!
//! # Declared breakers
//!
//! Every `#[circuit_breaker]` puts a reference to its breaker in a
//! [`linkme`](https://docs.rs/linkme) distributed slice: the linker gathers
//! the entries of every crate of the program into one array, so nothing runs
//! before `main` and nothing is registered by hand. The first use of the
//! registry (a lookup, [`all`], a `register`, or any attribute breaker's
//! first call) adds every declared breaker, so [`get`] finds a breaker whose
//! function has never run, and `set_mode(failfast_runtime::Mode::ForcedOpen)` before any traffic works.
//! (`linkme` rather than `inventory`: a static array filled by the linker
//! costs nothing at start-up and runs no code before `main`, where
//! `inventory` runs one constructor per entry at load time. It supports
//! Linux, macOS, Windows, the BSDs and illumos.)
//!
//! Names should be unique among declared breakers. Two `#[circuit_breaker]`s
//! of one crate given the same `name = "…"` (or functions whose default names
//! meet, see the attribute's `name` key) are a programming error, reported
//! when the registry is first used: in a debug build (tests) that use panics
//! with both declaration sites, on every run, so the first test that touches
//! a breaker shows it. A release build never panics for it: it keeps both
//! and reports them as below.
//!
//! Two crates of one program may pick the same name without knowing of each
//! other (two libraries that both call their breaker `"redis"`), and the
//! program's author can fix neither: that never panics, in any build. Both
//! breakers are kept and work as declared; [`all`] lists both, [`get`] finds
//! the first declared, [`configure::apply`](crate::configure::apply) applies a change to
//! every breaker of the name, and with the `tracing` feature the registry's
//! first use logs a warning naming both crates and sites.
//!
//! Breakers and keyed families built at run time may share a name with
//! each other (two instances of one client, or the same service built by
//! two tests), as two crates' declared breakers may: both are kept and
//! work as built, [`all`] and `families` list both, [`get`] returns the
//! first registered that still exists, and
//! [`configure::apply`](crate::configure::apply) changes every one of the
//! name. Nothing panics or is refused: a name built at run time (`format!`
//! of a host) is often not the program author's to pick.
//!
//! With the `testing` feature, inside a scope of `testing::isolate`,
//! [`get`], [`all`] and `families` show the scope's breakers and families
//! in place of the declared ones they stand for, and list a breaker or
//! family [`register`]ed in a scope in that
//! scope alone: two tests running in parallel, each building its service
//! under the same names inside its own scope, each find, list and
//! configure their own, and neither is listed outside its scope.
//!
//! A keyed family (`Family`, feature `keyed`) is listed by [`families`];
//! [`all`] lists its members too, after the registered breakers, so one
//! call gives an admin page every breaker with its state, snapshot and
//! settings, and [`get`] finds a member by its name, `family[key]`. Each
//! breaker's [`Snapshot`](crate::Snapshot) holds the settings in force and
//! where each setting not as declared came from (a file, the environment,
//! a change from code: see [`configure`](crate::configure#where-each-setting-came-from));
//! with the `serde` feature it serialises, settings and origins included,
//! for an admin endpoint.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::core::breaker::Breaker;
use crate::core::listed::{DECLARED, Declared};
use crate::core::name::Name;
pub use crate::policy::handle::BreakerRef;
#[cfg(feature = "keyed")]
pub use crate::policy::keyed::FamilyRef;
#[cfg(feature = "keyed")]
use crate::policy::listed::DECLARED_FAMILIES;

enum Entry {
    Static(&'static Breaker),
    Shared(Weak<Breaker>),
}

impl Entry {
    fn upgrade(&self) -> Option<BreakerRef> {
        match self {
            Entry::Static(b) => Some(BreakerRef::Static(b)),
            Entry::Shared(w) => w.upgrade().map(BreakerRef::Shared),
        }
    }

    fn is_live(&self) -> bool {
        match self {
            Entry::Static(_) => true,
            Entry::Shared(w) => w.strong_count() > 0,
        }
    }
}

/// The test scope (`testing::isolate`) entered on this thread, if any: a
/// breaker or family registered in one is listed in that scope alone.
/// Always `None` without the `testing` feature.
fn scope() -> Option<u64> {
    #[cfg(feature = "testing")]
    return crate::core::scope::current();
    #[cfg(not(feature = "testing"))]
    None
}

/// Whether what was registered in `scope` is listed `here`: registered
/// outside every scope, or in this one.
fn listed_here(scope: Option<u64>, here: Option<u64>) -> bool {
    scope.is_none() || scope == here
}

/// Breakers in order of registration, each with the test scope it was
/// registered in, and an index from name to their positions. Registration
/// and lookup by name cost O(1) amortised; entries of dropped breakers are
/// swept once they make up half the list.
#[derive(Default)]
struct Registry {
    entries: Vec<(Entry, Option<u64>)>,
    #[cfg(feature = "keyed")]
    families: Vec<(
        std::sync::Weak<dyn crate::policy::keyed::Listing>,
        Option<u64>,
    )>,
    /// Families declared by `#[circuit_breaker(key = …)]` and
    /// `breaker!(… max_keys = …)`, listed from program start.
    #[cfg(feature = "keyed")]
    declared_families: Vec<Arc<dyn crate::policy::keyed::Listing>>,
    by_name: HashMap<Name, Vec<usize>>,
    /// Live entries at the last sweep, doubled: the next sweep is due when the
    /// list grows past it.
    sweep_at: usize,
    /// Callbacks of [`watch`], called for each breaker registered from now on.
    watchers: Vec<(u64, Arc<Watcher>)>,
}

pub(crate) type Watcher = dyn Fn(&BreakerRef) + Send + Sync;

impl Registry {
    fn push(&mut self, name: Name, entry: Entry, scope: Option<u64>) {
        if self.entries.len() >= self.sweep_at {
            self.sweep();
        }
        self.by_name
            .entry(name)
            .or_default()
            .push(self.entries.len());
        self.entries.push((entry, scope));
    }

    /// The breakers listed `here`, in order of registration.
    fn listed(&self, here: Option<u64>) -> impl Iterator<Item = BreakerRef> + '_ {
        self.entries
            .iter()
            .filter(move |(_, scope)| listed_here(*scope, here))
            .filter_map(|(entry, _)| entry.upgrade())
    }

    /// Drops the entries of breakers that no longer exist and rebuilds the
    /// index: O(n), at most once per n registrations.
    fn sweep(&mut self) {
        self.entries.retain(|(entry, _)| entry.is_live());
        self.by_name.clear();
        for (i, (entry, _)) in self.entries.iter().enumerate() {
            if let Some(b) = entry.upgrade() {
                self.by_name.entry(b.shared_name()).or_default().push(i);
            }
        }
        self.sweep_at = (self.entries.len() * 2).max(16);
    }
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// A duplicate name that is kept: a `tracing` warning with that feature.
fn report(message: &str) {
    #[cfg(feature = "tracing")]
    ::tracing::warn!(target: "failfast", "{message}");
    #[cfg(not(feature = "tracing"))]
    let _ = message;
}

impl Declared {
    fn krate(&self) -> &'static str {
        self.module.split("::").next().unwrap_or(self.module)
    }
}

/// What to do about `again`, declared with the name of `first`.
#[derive(Debug, PartialEq, Eq)]
enum Duplicate {
    /// Panic with the message: both in one crate, in a debug build (tests).
    Panic(String),
    /// Keep both and report the message.
    Report(String),
}

fn duplicate(first: &Declared, again: &Declared, debug: bool) -> Duplicate {
    let (one, other) = (first.krate(), again.krate());
    if one == other {
        let message = format!(
            "two #[circuit_breaker] functions are named `{}` (at {} and at {}): a name \
             picks one breaker in the registry, in metrics and in events; give one of \
             them another `name = \"…\"`",
            first.breaker.name(),
            first.at,
            again.at,
        );
        if debug {
            Duplicate::Panic(message)
        } else {
            Duplicate::Report(message)
        }
    } else {
        Duplicate::Report(format!(
            "crates `{one}` and `{other}` both declare a #[circuit_breaker] named `{}` \
             (at {} and at {}): both are kept, `registry::get` finds the first, \
             `registry::all` lists both, and their metrics share one label",
            first.breaker.name(),
            first.at,
            again.at,
        ))
    }
}

impl Registry {
    /// The registry holding every declared breaker, or the message naming
    /// two declared breakers that share a name.
    fn with_declared() -> Registry {
        Self::with(&DECLARED, cfg!(debug_assertions))
    }

    /// The registry holding `declared`; `debug`: whether one crate's
    /// duplicate names panic.
    fn with(declared: &'static [Declared], debug: bool) -> Registry {
        let mut seen: HashMap<&str, &Declared> = HashMap::new();
        for again in declared {
            let Some(first) = seen.get(again.breaker.name()) else {
                seen.insert(again.breaker.name(), again);
                continue;
            };
            match duplicate(first, again, debug) {
                Duplicate::Panic(message) => panic!("{message}"),
                Duplicate::Report(message) => report(&message),
            }
        }
        let mut registry = Registry::default();
        for declared in declared {
            if declared.breaker.mark_registered() {
                registry.push(
                    declared.breaker.shared_name(),
                    Entry::Static(declared.breaker),
                    None,
                );
            }
        }
        #[cfg(feature = "keyed")]
        for declared in DECLARED_FAMILIES.iter() {
            registry.add_slot(declared.slot);
        }
        registry
    }

    #[cfg(feature = "keyed")]
    fn add_slot(&mut self, slot: &'static crate::policy::keyed::Slot) {
        let view: Arc<dyn crate::policy::keyed::Listing> =
            Arc::new(crate::policy::keyed::SlotView(slot));
        if view.mark_registered() {
            self.declared_families.push(view);
        }
    }
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    // The registry holds no invariant a panic could break halfway; a
    // duplicate declared name panics before anything is stored, so every
    // use reports it again.
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let fresh = registry.is_none();
    let result = f(registry.get_or_insert_with(Registry::with_declared));
    drop(registry);
    // The declared breakers announced, outside the lock: a watcher (the
    // metrics' recorder) may look breakers up.
    if fresh {
        for declared in DECLARED.iter() {
            crate::core::listed::registered(declared.breaker);
        }
        // Before anything can change their settings: every change goes
        // through the registry.
        crate::policy::bulkhead::attach_declared();
    }
    result
}

/// Adds `entry` and returns the watchers to tell, to be called once the
/// registry's lock is released (a watcher may look breakers up).
fn add(name: Name, entry: Entry) -> Vec<Arc<Watcher>> {
    let scope = scope();
    with_registry(|r| {
        r.push(name, entry, scope);
        r.watchers.iter().map(|(_, w)| w.clone()).collect()
    })
}

fn tell(watchers: &[Arc<Watcher>], breaker: &BreakerRef) {
    for watcher in watchers {
        watcher(breaker);
    }
}

/// Registers a breaker, so [`get`] and [`all`] find it: one built at run
/// time (`&Arc<Breaker>`, held weakly: once every `Arc` is dropped it
/// disappears) or one in a `static` (`&'static Breaker`), or anything else
/// that converts into a [`BreakerRef`]. With the `keyed` feature, a keyed
/// family (`&Family<K>`, held weakly too), so that [`families`] and
/// [`family`] find it and [`get`] its members by their names
/// (`family[key]`); a family's member is listed through its family, never
/// on its own. Registering the same breaker or family twice has no effect.
///
/// ```
/// # #[cfg(feature = "keyed")] {
/// use failfast_runtime::{registry, Breaker, Family};
///
/// let replicas: Family<String> =
///     Family::builder(Breaker::builder().name("register::replica")).build()?;
/// registry::register(&replicas);
/// let _ = replicas.get("a:80").call(|| Ok::<_, ()>(()));
/// assert!(registry::family("register::replica").is_some());
/// assert!(registry::get("register::replica[a:80]").is_some());
/// # }
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
pub fn register(breaker: impl Registrable) {
    breaker.register();
}

/// What [`register`] takes: breakers (through [`BreakerRef`]) and, with the
/// `keyed` feature, keyed families. Sealed: implemented here only.
mod sealed {
    use super::*;

    pub trait Registrable {
        /// Adds it to the registry.
        fn register(self);
    }

    impl<T: Into<BreakerRef>> Registrable for T {
        fn register(self) {
            match self.into() {
                BreakerRef::Shared(breaker) => register_shared(&breaker),
                BreakerRef::Static(breaker) => register_static(breaker),
                #[cfg(feature = "keyed")]
                BreakerRef::Member(_) => {}
            }
        }
    }

    #[cfg(feature = "keyed")]
    impl<K> Registrable for &crate::policy::keyed::Family<K>
    where
        K: Clone + std::hash::Hash + Eq + Send + Sync + 'static,
    {
        fn register(self) {
            crate::policy::keyed::Family::register(self);
        }
    }
}
use sealed::Registrable;

fn register_shared(breaker: &Arc<Breaker>) {
    if breaker.mark_registered() {
        let weak = Arc::downgrade(breaker);
        let watchers = add(breaker.shared_name(), Entry::Shared(weak));
        crate::core::listed::registered(breaker);
        tell(&watchers, &BreakerRef::Shared(breaker.clone()));
    }
}

/// Registers a breaker that lives in a `static`.
pub(crate) fn register_static(breaker: &'static Breaker) {
    if breaker.mark_registered() {
        let watchers = add(breaker.shared_name(), Entry::Static(breaker));
        crate::core::listed::registered(breaker);
        tell(&watchers, &BreakerRef::Static(breaker));
    }
}

/// The breaker registered under `name`. When several share a name (two
/// functions given the same `name = "…"`), the first registered that still
/// exists. A name `family[key]` also finds the member of a registered
/// keyed family (to reach a key's breaker before its first call, see
/// [`FamilyRef::member`]).
#[must_use]
pub fn get(name: &str) -> Option<BreakerRef> {
    let here = scope();
    let found = with_registry(|r| {
        let positions = r.by_name.get(name)?;
        positions.iter().find_map(|&i| {
            let (entry, scope) = &r.entries[i];
            listed_here(*scope, here).then(|| entry.upgrade()).flatten()
        })
    });
    #[cfg(feature = "testing")]
    let found = found.map(seen);
    #[cfg(feature = "keyed")]
    let found = found.or_else(|| member(name));
    found
}

#[cfg(feature = "keyed")]
fn member(name: &str) -> Option<BreakerRef> {
    let (family, _) = name.strip_suffix(']')?.split_once('[')?;
    families()
        .into_iter()
        .filter(|f| f.name() == family)
        .find_map(|f| f.0.named(name, false))
        .map(BreakerRef::Member)
}

/// What the registry does when a family tells: lists it.
#[cfg(feature = "keyed")]
#[linkme::distributed_slice(crate::policy::keyed::OBSERVERS)]
#[allow(unsafe_code)] // linkme places the entry in a link section
static LIST_FAMILIES: fn(crate::policy::keyed::Seen<'_>) = |seen| {
    use crate::policy::keyed::Seen;
    match seen {
        Seen::Registered(listing) => register_family(listing),
        Seen::SlotBuilt(slot) => register_slot(slot),
        Seen::Evicted(..) => {}
    }
};

/// Lists a declared family whose slot the linker did not gather (it is,
/// on the platforms `linkme` supports): on its first call.
#[cfg(feature = "keyed")]
pub(crate) fn register_slot(slot: &'static crate::policy::keyed::Slot) {
    with_registry(|r| r.add_slot(slot));
}

#[cfg(feature = "keyed")]
pub(crate) fn register_family(family: &Arc<dyn crate::policy::keyed::Listing>) {
    if family.mark_registered() {
        let weak = Arc::downgrade(family);
        let scope = scope();
        with_registry(|r| {
            r.families.retain(|(f, _)| f.strong_count() > 0);
            r.families.push((weak, scope));
        });
    }
}

/// Every registered keyed family: those declared by `#[circuit_breaker(key
/// = …)]` and `breaker!(… max_keys = …)` from program start (before their
/// first call they have no members, but [`FamilyRef::member`] and
/// [`FamilyRef::reconfigure`] work), then those registered at run time.
#[cfg(feature = "keyed")]
#[must_use]
pub fn families() -> Vec<FamilyRef> {
    let here = scope();
    let families: Vec<FamilyRef> = with_registry(|r| {
        let registered = r.families.iter();
        let registered = registered.filter(|(_, scope)| listed_here(*scope, here));
        r.declared_families
            .iter()
            .cloned()
            .chain(registered.filter_map(|(f, _)| f.upgrade()))
            .map(FamilyRef)
            .collect()
    });
    #[cfg(feature = "testing")]
    let families = families.into_iter().map(FamilyRef::seen).collect();
    families
}

#[cfg(all(feature = "keyed", feature = "testing"))]
impl FamilyRef {
    /// Inside a scope of `testing::isolate`, the scope's family in place of
    /// a declared one.
    fn seen(self) -> Self {
        match self.0.slot().and_then(crate::core::scope::stand_in) {
            Some(own) => FamilyRef(Arc::new(crate::policy::keyed::SlotView(own))),
            None => self,
        }
    }
}

/// The registered keyed family named `name`.
#[cfg(feature = "keyed")]
#[must_use]
pub fn family(name: &str) -> Option<FamilyRef> {
    families().into_iter().find(|f| f.name() == name)
}

/// Every breaker of the process: those registered (declared by the
/// attribute, or [`register`]ed), in order of registration, then the
/// members each registered keyed family holds now (as [`families`] lists
/// the families; each family's members by name, its overflow breaker
/// `family[*]` once used). What an admin page lists: each handle has the
/// breaker's [`state`](crate::Breaker::state),
/// [`snapshot`](crate::Breaker::snapshot), which holds the settings in
/// force (`settings`, as [`config`](crate::Breaker::config) reports them)
/// and where each came from (`origins`): a member's are its family's, with
/// any change made to the family or to the member by name.
///
/// ```
/// # #[cfg(feature = "keyed")] {
/// use failfast_runtime::{registry, Breaker, Family};
///
/// let replicas: Family<String> =
///     Family::builder(Breaker::builder().name("listing::replica").threshold(3)).build()?;
/// registry::register(&replicas);
/// let _ = replicas.get("a:80").call(|| Ok::<_, ()>(()));
///
/// let row = registry::all()
///     .into_iter()
///     .find(|b| b.name() == "listing::replica[a:80]")
///     .expect("a member is listed");
/// assert_eq!((row.snapshot().calls, row.config().threshold()), (1, 3));
/// # }
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// Takes the registry's lock, then each family's insertion lock in turn,
/// once; calls through the breakers never wait for it.
#[must_use]
pub fn all() -> Vec<BreakerRef> {
    #[allow(unused_mut)]
    let mut all = registered();
    #[cfg(feature = "keyed")]
    for family in families() {
        let mut members = family.members();
        members.sort_by(|a, b| a.name().cmp(b.name()));
        all.extend(members.into_iter().map(BreakerRef::Member));
    }
    all
}

/// The registered breakers, in order of registration: [`all`] without
/// the families' members (what `configure` addresses by name).
pub(crate) fn registered() -> Vec<BreakerRef> {
    let here = scope();
    let all: Vec<BreakerRef> = with_registry(|r| r.listed(here).collect());
    // Inside a scope of `testing::isolate`, its breakers in place of the
    // declared ones.
    #[cfg(feature = "testing")]
    let all = all.into_iter().map(seen).collect();
    all
}

/// What the registry shows for `found`: inside a scope of
/// `testing::isolate`, the scope's breaker in place of a declared one.
#[cfg(feature = "testing")]
fn seen(found: BreakerRef) -> BreakerRef {
    match found {
        BreakerRef::Static(shared) => {
            crate::core::scope::listed(shared).map_or(found, BreakerRef::Static)
        }
        found => found,
    }
}

static NEXT_WATCH: AtomicU64 = AtomicU64::new(1);

/// Adds `watcher`: it is told of every breaker registered from now on.
/// Returns its id and the breakers registered already.
pub(crate) fn add_watcher(watcher: Arc<Watcher>) -> (u64, Vec<BreakerRef>) {
    let id = NEXT_WATCH.fetch_add(1, Ordering::Relaxed);
    let present = with_registry(|r| {
        r.watchers.push((id, watcher));
        r.entries
            .iter()
            .filter_map(|(entry, _)| entry.upgrade())
            .collect::<Vec<_>>()
    });
    (id, present)
}

/// Removes the watcher `id`.
pub(crate) fn remove_watcher(id: u64) {
    with_registry(|r| r.watchers.retain(|(w, _)| *w != id));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of dropped families are swept as families register: the
    /// list does not keep one for every family ever registered.
    #[cfg(feature = "keyed")]
    #[test]
    fn entries_of_dropped_families_are_swept() {
        for i in 0..200 {
            let family: crate::Family<u32> =
                crate::Family::builder(Breaker::builder().name(format!("swept-{i}")))
                    .build()
                    .unwrap();
            family.register();
        }
        let listed = with_registry(|r| r.families.len());
        assert!(
            listed < 100,
            "{listed} entries for at most a few live families"
        );
    }

    /// Entries of dropped breakers are swept as registrations go on, so the
    /// list stays within twice the live breakers (plus a small floor).
    /// Breakers registered before the watch and after it, from racing
    /// threads, each reach the watcher exactly once; none after it is dropped.
    #[test]
    fn a_watch_sees_every_breaker_once_and_nothing_after_it_ends() {
        use std::collections::HashMap;
        let before = Arc::new(Breaker::builder().name("watch-before").build().unwrap());
        register(&before);
        let seen = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
        let racers: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| {
                            let b = Arc::new(
                                Breaker::builder()
                                    .name(format!("watch-race-{t}-{i}"))
                                    .build()
                                    .unwrap(),
                            );
                            register(&b);
                            b
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let sink = seen.clone();
        let w = crate::integration::watch(move |b| {
            *sink.lock().unwrap().entry(b.name().to_owned()).or_default() += 1;
        });
        let kept: Vec<_> = racers.into_iter().flat_map(|r| r.join().unwrap()).collect();
        let after = Arc::new(Breaker::builder().name("watch-after").build().unwrap());
        register(&after);
        drop(w);
        let gone = Arc::new(Breaker::builder().name("watch-gone").build().unwrap());
        register(&gone);
        let seen = seen.lock().unwrap();
        for name in kept
            .iter()
            .map(|b| b.name())
            .chain(["watch-before", "watch-after"])
        {
            assert_eq!(seen.get(name), Some(&1), "{name}");
        }
        assert_eq!(seen.get("watch-gone"), None);
    }

    #[test]
    fn dropped_breakers_are_swept() {
        let keep: Vec<_> = (0..50)
            .map(|_| Arc::new(Breaker::builder().name("sweep-kept").build().unwrap()))
            .collect();
        for b in &keep {
            register(b);
        }
        for _ in 0..2_000 {
            let gone = Arc::new(Breaker::builder().name("sweep-gone").build().unwrap());
            register(&gone);
        }
        // Counted by upgrading, not by `is_live`, which the sweep uses.
        let (entries, live) = with_registry(|r| {
            let live = r
                .entries
                .iter()
                .filter(|(e, _)| e.upgrade().is_some())
                .count();
            (r.entries.len(), live)
        });
        assert!(live >= keep.len());
        assert!(
            entries <= 2 * live + 16,
            "{entries} entries for {live} live breakers"
        );
        assert!(get("sweep-gone").is_none());
        assert!(get("sweep-kept").is_some());
    }

    static REDIS_A: Breaker =
        Breaker::from_config(crate::__private::ConstConfig::new("dup-redis").into_config());
    static REDIS_B: Breaker =
        Breaker::from_config(crate::__private::ConstConfig::new("dup-redis").into_config());
    static OTHER: Breaker =
        Breaker::from_config(crate::__private::ConstConfig::new("dup-other").into_config());

    static ACROSS_CRATES: [Declared; 3] = [
        Declared {
            breaker: &REDIS_A,
            at: "cache/src/lib.rs:10",
            module: "cache::client",
        },
        Declared {
            breaker: &OTHER,
            at: "app/src/main.rs:3",
            module: "app",
        },
        Declared {
            breaker: &REDIS_B,
            at: "queue/src/lib.rs:20",
            module: "queue",
        },
    ];

    /// Two crates naming a breaker alike never panic, in any build: both
    /// are kept and listed, the first declared is the one found by name.
    #[test]
    fn one_name_in_two_crates_keeps_both_and_never_panics() {
        // A debug build, where one crate's duplicates panic.
        let registry = Registry::with(&ACROSS_CRATES, true);
        let named: Vec<_> = registry
            .listed(None)
            .filter(|b| b.name() == "dup-redis")
            .map(|b| std::ptr::from_ref::<Breaker>(&*b))
            .collect();
        assert_eq!(
            named,
            [std::ptr::from_ref(&REDIS_A), std::ptr::from_ref(&REDIS_B)]
        );
        let first = registry.by_name["dup-redis"][0];
        let found = registry.entries[first].0.upgrade().unwrap();
        assert!(std::ptr::eq(&*found, &REDIS_A));
        for debug in [true, false] {
            match duplicate(&ACROSS_CRATES[0], &ACROSS_CRATES[2], debug) {
                Duplicate::Report(message) => {
                    for part in [
                        "`cache`",
                        "`queue`",
                        "`dup-redis`",
                        "lib.rs:10",
                        "lib.rs:20",
                    ] {
                        assert!(message.contains(part), "{message}");
                    }
                }
                panic @ Duplicate::Panic(_) => panic!("{panic:?}"),
            }
        }
    }

    /// With `tracing`, a duplicate name that is kept is a WARN event of
    /// target `failfast` carrying the message.
    #[cfg(feature = "tracing")]
    #[test]
    fn a_kept_duplicate_is_a_tracing_warning() {
        use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

        struct Warnings(Arc<Mutex<Vec<String>>>);
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{value:?}");
                }
            }
        }
        impl<S: tracing::Subscriber> Layer<S> for Warnings {
            fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
                let meta = event.metadata();
                if *meta.level() == tracing::Level::WARN && meta.target() == "failfast" {
                    let mut message = String::new();
                    event.record(&mut Message(&mut message));
                    self.0.lock().unwrap().push(message);
                }
            }
        }

        static FIRST: Breaker =
            Breaker::from_config(crate::__private::ConstConfig::new("dup-traced").into_config());
        static AGAIN: Breaker =
            Breaker::from_config(crate::__private::ConstConfig::new("dup-traced").into_config());
        static TWO_CRATES: [Declared; 2] = [
            Declared {
                breaker: &FIRST,
                at: "one/src/lib.rs:1",
                module: "one",
            },
            Declared {
                breaker: &AGAIN,
                at: "two/src/lib.rs:2",
                module: "two",
            },
        ];
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Warnings(Arc::clone(&warnings)));
        tracing::subscriber::with_default(subscriber, || Registry::with(&TWO_CRATES, true));
        let warnings = warnings.lock().unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        for part in ["`one`", "`two`", "`dup-traced`", "lib.rs:1", "lib.rs:2"] {
            assert!(warnings[0].contains(part), "{warnings:?}");
        }
    }

    /// One crate's duplicate: loud in a debug build, kept and reported in a
    /// release build.
    #[test]
    fn one_name_twice_in_one_crate_panics_only_in_a_debug_build() {
        let one = Declared {
            breaker: &REDIS_A,
            at: "app/src/a.rs:1",
            module: "app::a",
        };
        let two = Declared {
            breaker: &REDIS_B,
            at: "app/src/b.rs:2",
            module: "app::b",
        };
        let Duplicate::Panic(message) = duplicate(&one, &two, true) else {
            panic!("one crate, debug build: a panic");
        };
        assert!(
            message.contains("a.rs:1") && message.contains("b.rs:2"),
            "{message}"
        );
        assert!(matches!(duplicate(&one, &two, false), Duplicate::Report(_)));
    }

    /// A declared family is listed once, however often it is added (by the
    /// linker's list and by its first call).
    #[cfg(feature = "keyed")]
    #[test]
    fn a_declared_family_is_listed_once() {
        static SLOT: crate::policy::keyed::Slot = crate::policy::keyed::Slot::new(
            crate::Config::new("registry-slot"),
            8,
            None,
            std::time::Duration::ZERO,
            100,
        );
        let mut registry = Registry::default();
        registry.add_slot(&SLOT);
        registry.add_slot(&SLOT);
        assert_eq!(registry.declared_families.len(), 1);
    }
}
