//! Reloading a whole configuration document: each name it holds gets its
//! declared settings with its section applied, each name it dropped goes back.

use super::target::Target;
#[cfg(feature = "keyed")]
use super::target::{key_breaker, key_family};
use super::*;

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
            let (next, bounds) = family.declared_with(patch).map_err(refused)?;
            let origins = from_file(Origins::DECLARED);
            found.push((Target::Family(family, bounds), next, origins, Mode::Normal));
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
