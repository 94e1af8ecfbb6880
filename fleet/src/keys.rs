//! Where a breaker's fleet state lives in the store.
//!
//! ```text
//! failfast:{<namespace>/<breaker>}:votes   sorted set  instance votes, scored by store time (TTL: vote window)
//! failfast:{<namespace>/<breaker>}:open    string      generation of the current fleet open (TTL: the open)
//! failfast:{<namespace>/<breaker>}:probe   string      `<instance>:<generation>` of the probe lease (TTL: the lease)
//! failfast:{<namespace>/<breaker>}:gen     hash        `gen`, `level`, `closed` (TTL: state_ttl)
//! failfast:{<namespace>/<breaker>}:check   (none)      deleted by the health check after a refusal: a write in the slot
//! failfast:{<namespace>}:ev                channel     signed nudges: `open` / `close`
//! ```
//!
//! The braces are a cluster hash tag: the keys of one breaker live in one slot,
//! so one Lua script can touch them all on Redis Cluster too, and is routed to
//! the node that owns that slot. An ACL user limited to
//! `~failfast:{<namespace>/*` keys and `&failfast:{<namespace>}:*` channels is enough.

/// The four keys of one breaker, in the order the scripts take them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerKeys {
    /// Sorted set of votes.
    pub votes: String,
    /// The fleet open: its value is the generation, its TTL the open's remaining time.
    pub open: String,
    /// The single-probe lease.
    pub probe: String,
    /// Generation counter, reopen level and last closed generation.
    pub generation: String,
    /// Never holds a value: the health check deletes it, to see that the
    /// store takes a write in this breaker's slot again.
    pub check: String,
}

impl BreakerKeys {
    /// The keys of `breaker` in `namespace`.
    pub fn new(namespace: &str, breaker: &str) -> Self {
        let base = format!("failfast:{{{namespace}/{breaker}}}");
        BreakerKeys {
            votes: format!("{base}:votes"),
            open: format!("{base}:open"),
            probe: format!("{base}:probe"),
            generation: format!("{base}:gen"),
            check: format!("{base}:check"),
        }
    }
}

/// The event channel of `namespace`.
pub fn channel(namespace: &str) -> String {
    format!("failfast:{{{namespace}}}:ev")
}

/// Whether `name` can be a fleet breaker name: 1 to 160 bytes, no control characters.
pub fn valid_breaker_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 160 && !name.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The part of a key Redis Cluster hashes.
    fn hash_tag(key: &str) -> &str {
        let open = key.find('{').unwrap();
        let close = open + key[open..].find('}').unwrap();
        &key[open + 1..close]
    }

    #[test]
    fn the_four_keys_share_one_hash_tag() {
        let k = BreakerKeys::new("payments/prod", "inventory::check");
        let tags = [&k.votes, &k.open, &k.probe, &k.generation, &k.check].map(|key| hash_tag(key));
        assert!(
            tags.iter().all(|t| *t == "payments/prod/inventory::check"),
            "{tags:?}"
        );
        assert_eq!(k.open, "failfast:{payments/prod/inventory::check}:open");
        assert_eq!(channel("payments/prod"), "failfast:{payments/prod}:ev");
    }

    #[test]
    fn names_with_control_characters_or_too_long_are_refused() {
        assert!(valid_breaker_name("a::b c"));
        assert!(!valid_breaker_name(""));
        assert!(!valid_breaker_name("a\nb"));
        assert!(!valid_breaker_name(&"x".repeat(161)));
    }
}
