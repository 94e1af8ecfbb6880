//! What a name in an override addresses: registered breakers, keyed
//! families, a family's key (`family[key]`).

use super::*;

/// What a name in an override changes.
pub(super) enum Target {
    /// A breaker: registered, or a family's member.
    Breaker(BreakerRef),
    /// Every breaker of a keyed family, now and later, and the family's
    /// bounds a reload puts in force (those in force, for a patch).
    #[cfg(feature = "keyed")]
    Family(registry::FamilyRef, crate::policy::keyed::Bounds),
}

impl Target {
    pub(super) fn reconfigure(&self, patch: &Patch, from: Origin) -> Result<(), ConfigError> {
        match self {
            Target::Breaker(breaker) => breaker.apply(patch, from),
            #[cfg(feature = "keyed")]
            Target::Family(family, _) => family.apply(patch, from),
        }
    }

    /// Replaces the settings in force with `next`, coming from `origins`;
    /// a family's members named by `keep` keep theirs.
    #[cfg_attr(not(feature = "keyed"), allow(unused_variables))]
    pub(super) fn replace(&self, next: Config, origins: Origins, keep: &dyn Fn(&str) -> bool) {
        match self {
            Target::Breaker(breaker) => breaker.replace(next, origins),
            #[cfg(feature = "keyed")]
            Target::Family(family, bounds) => family.0.replace((&next, *bounds), origins, keep),
        }
    }

    pub(super) fn mode(&self) -> Mode {
        match self {
            Target::Breaker(breaker) => breaker.mode(),
            #[cfg(feature = "keyed")]
            Target::Family(family, _) => family.0.mode(),
        }
    }

    pub(super) fn set_mode(&self, mode: Mode) {
        match self {
            Target::Breaker(breaker) => breaker.set_mode(mode),
            #[cfg(feature = "keyed")]
            Target::Family(family, _) => family.0.set_mode(mode),
        }
    }
}

/// What `name` addresses, each checked against `patch`: every live breaker
/// registered under `name` (breakers built at run time may share one) and
/// every keyed family of that name; else the breaker of a family's key
/// (`family[key]`). Every refusal, named `name`, when any.
pub(super) fn targets(name: &str, patch: &Patch) -> Result<Vec<Target>, Vec<ConfigError>> {
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut refuse = |fits: Result<(), (&'static str, String)>| {
        if let Err((key, reason)) = fits {
            let error = ConfigError::refused(name, key, reason);
            if !errors.contains(&error) {
                errors.push(error);
            }
        }
    };
    let fits = |patch: &Patch, config: &Config| patch.applied_to(config).map(drop);
    let mut found: Vec<Target> = Vec::new();
    for breaker in registry::registered()
        .into_iter()
        .filter(|b| b.name() == name)
    {
        refuse(fits(patch, &breaker.config()));
        found.push(Target::Breaker(breaker));
    }
    #[cfg(feature = "keyed")]
    for family in registry::families()
        .into_iter()
        .filter(|f| f.name() == name)
    {
        // The family's bounds and settings, then each member's (its part).
        refuse(family.fits(patch));
        for member in family.members() {
            refuse(fits(&patch.for_members(), &member.breaker().config()));
        }
        let in_force = family.bounds();
        found.push(Target::Family(family, in_force));
    }
    #[cfg(feature = "keyed")]
    if found.is_empty() {
        match key_breaker(name, patch) {
            Some(Ok(member)) => {
                refuse(fits(patch, &member.config()));
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
pub(super) fn key_breaker(name: &str, patch: &Patch) -> Option<Result<BreakerRef, ConfigError>> {
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
pub(super) fn key_family(name: &str) -> Option<(registry::FamilyRef, String)> {
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
