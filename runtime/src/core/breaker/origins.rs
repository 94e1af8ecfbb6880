//! Where each setting in force came from: as declared, a configuration
//! file's section, an environment variable, or a change made from code
//! while the program runs. Kept per setting, by its `failfast_rules::Key`,
//! two bits each in one word beside the settings.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use failfast_rules::Key;

use super::Breaker;
use crate::core::config::Patch;

/// Where a setting in force came from: what
/// [`Snapshot::origins`](crate::Snapshot::origins) says of each setting
/// changed since the breaker was declared.
///
/// With the `serde` feature it serialises as `"declared"`, `"file"`,
/// `"environment"` or `"run_time"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Origin {
    /// As declared: the attribute, `breaker!`, or the builder the breaker
    /// (or its keyed family) was built with (the default).
    #[default]
    Declared,
    /// A configuration file's section, put in force by
    /// [`configure::reload`](crate::configure::reload).
    File,
    /// A `FAILFAST__<BREAKER>__<KEY>` variable, put in force by
    /// [`configure::from_env`](crate::configure::from_env).
    Environment,
    /// A change made from code while the program runs:
    /// [`Breaker::reconfigure`](crate::Breaker::reconfigure),
    /// [`FamilyRef::reconfigure`](crate::registry::FamilyRef::reconfigure) or
    /// [`configure::apply`](crate::configure::apply).
    RunTime,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Declared => "declared",
            Origin::File => "file",
            Origin::Environment => "environment",
            Origin::RunTime => "run time",
        })
    }
}

/// Two bits per key of `Key::ALL`, in one `u64`.
const BITS: usize = 2;
const _: () = assert!(
    Key::ALL.len() * BITS <= 64,
    "a source per key fits one word"
);

/// The source of each setting, by its key's place in `Key::ALL`: every
/// key, those added to `Key` later included, without a line per key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Origins(u64);

impl Origins {
    /// Every setting as declared.
    pub(crate) const DECLARED: Origins = Origins(0);

    fn shift(key: Key) -> u32 {
        let at = Key::ALL
            .iter()
            .position(|k| *k == key)
            .expect("every key is in `Key::ALL`");
        u32::try_from(at * BITS).expect("fits a word")
    }

    /// The source of `key`.
    pub(crate) fn get(self, key: Key) -> Origin {
        match (self.0 >> Self::shift(key)) & 0b11 {
            0 => Origin::Declared,
            1 => Origin::File,
            2 => Origin::Environment,
            _ => Origin::RunTime,
        }
    }

    /// These origins with each of `keys` from `source`.
    #[must_use]
    pub(crate) fn with(self, keys: impl IntoIterator<Item = Key>, source: Origin) -> Origins {
        let bits = match source {
            Origin::Declared => 0,
            Origin::File => 1,
            Origin::Environment => 2,
            Origin::RunTime => 3,
        };
        keys.into_iter().fold(self, |Origins(word), key| {
            let shift = Self::shift(key);
            Origins(word & !(0b11 << shift) | bits << shift)
        })
    }

    /// Each setting not as declared, by its key's name.
    pub(crate) fn changed(self) -> BTreeMap<&'static str, Origin> {
        Key::ALL
            .iter()
            .map(|&key| (key.name(), self.get(key)))
            .filter(|(_, source)| *source != Origin::Declared)
            .collect()
    }
}

impl Patch {
    /// The settings this patch sets, by key (its `mode` aside: manual
    /// control, in a snapshot's `mode`). Every field named, so that a
    /// setting added to `Patch` cannot be left out.
    pub(crate) fn keys(&self) -> impl Iterator<Item = Key> + use<> {
        let Patch {
            threshold,
            failure_rate,
            min_calls,
            window,
            slow_rate,
            recovery,
            max_recovery,
            jitter,
            trial_calls,
            success_threshold,
            shed,
            shed_window,
            timeout,
            max_concurrent,
            max_wait,
            mode: _,
            max_keys,
            max_ejection_percent,
        } = self;
        [
            (threshold.is_some(), Key::Threshold),
            (failure_rate.is_some(), Key::FailureRate),
            (min_calls.is_some(), Key::MinCalls),
            (window.is_some(), Key::Window),
            (slow_rate.is_some(), Key::SlowRate),
            (recovery.is_some(), Key::Recovery),
            (max_recovery.is_some(), Key::MaxRecovery),
            (jitter.is_some(), Key::Jitter),
            (trial_calls.is_some(), Key::TrialCalls),
            (success_threshold.is_some(), Key::SuccessThreshold),
            (shed.is_some(), Key::Shed),
            (shed_window.is_some(), Key::ShedWindow),
            (timeout.is_some(), Key::Timeout),
            (max_concurrent.is_some(), Key::MaxConcurrent),
            (max_wait.is_some(), Key::MaxWait),
            (max_keys.is_some(), Key::MaxKeys),
            (max_ejection_percent.is_some(), Key::MaxEjectionPercent),
        ]
        .into_iter()
        .filter_map(|(set, key)| set.then_some(key))
    }
}

impl Breaker {
    /// Where each setting in force came from.
    pub(crate) fn origins(&self) -> Origins {
        Origins(self.origins.load(Ordering::Relaxed))
    }

    /// Records where each setting in force came from: under the right to
    /// publish settings, or before the breaker is shared.
    pub(crate) fn record_origins(&self, origins: Origins) {
        self.origins.store(origins.0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::set_from_text;

    #[test]
    fn each_key_keeps_its_own_source() {
        let origins = Origins::DECLARED
            .with([Key::Threshold, Key::Recovery], Origin::File)
            .with([Key::Recovery], Origin::Environment)
            .with([Key::Backoff], Origin::RunTime);
        assert_eq!(origins.get(Key::Threshold), Origin::File);
        assert_eq!(origins.get(Key::Recovery), Origin::Environment);
        assert_eq!(origins.get(Key::Backoff), Origin::RunTime);
        assert_eq!(origins.get(Key::Window), Origin::Declared);
        let back = origins.with([Key::Threshold], Origin::Declared);
        assert_eq!(
            back.changed(),
            BTreeMap::from([
                ("backoff", Origin::RunTime),
                ("recovery", Origin::Environment)
            ])
        );
        for &key in Key::ALL {
            for source in [Origin::File, Origin::Environment, Origin::RunTime] {
                let one = Origins::DECLARED.with([key], source);
                assert_eq!(one.changed(), BTreeMap::from([(key.name(), source)]));
            }
        }
    }

    /// Every key a variable can set (`set_from_text`, the names of
    /// `Key::ALL`) is the one key its patch reports: a setting made live
    /// later is listed with its source without more code here.
    #[test]
    fn a_patch_reports_every_key_it_sets() {
        let mut live = 0;
        for &key in Key::ALL {
            let set = ["1", "0.5", "1s"].into_iter().find_map(|text| {
                let mut patch = Patch::default();
                set_from_text(&mut patch, key.name(), text).ok()?;
                Some(patch)
            });
            if let Some(patch) = set {
                assert_eq!(patch.keys().collect::<Vec<_>>(), [key], "{key:?}");
                live += 1;
            }
        }
        assert!(live >= 12, "{live} keys set from text");
        let mut mode = Patch::default();
        set_from_text(&mut mode, "mode", "observe_only").unwrap();
        assert_eq!(mode.keys().count(), 0, "the mode is no keyed setting");
    }
}
