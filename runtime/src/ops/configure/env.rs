//! Overrides from environment variables, `FAILFAST__<BREAKER>__<KEY>`.

use super::*;

/// Applies the `FAILFAST__<BREAKER>__<KEY>` overrides among `vars`, all or
/// nothing (see [the scheme](super#environment-variables)): pass
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
/// [the scheme](super#environment-variables)).
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
