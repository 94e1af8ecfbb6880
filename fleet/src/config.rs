//! What a process needs to join a fleet: where the store is, who it is, and the
//! limits every remote effect is held to.

use std::fmt;
use std::time::Duration;

/// Configuration of one process's membership in a fleet.
///
/// Build it with [`FleetConfig::new`] (defaults below), change the public fields you
/// need, and hand it to [`crate::join`] or [`crate::Fleet::start`]. Every duration is
/// a local, monotonic duration: nothing here is compared with another host's clock.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `quorum` | 2 | instances that must vote within `vote_window` before the fleet opens |
/// | `vote_window` | 10 s | how long a vote counts (the votes key expires after it) |
/// | `open_base` / `open_cap` | 2 s / 60 s | fleet open duration: `min(open_base · 2^level, open_cap)`, `level` = opens since the last close |
/// | `max_remote_open` | 60 s | the longest remote open this instance accepts, whatever the store says |
/// | `probe_lease` | 5 s | lifetime of the single-probe lease; must outlast a probe (`probe_lead` + `call_timeout` + `command_timeout`) |
/// | `call_timeout` | none | the time limit of the joined breakers' calls (`timeout = "1s"`, `Builder::timeout`), which a probe can take |
/// | `probe_lead` | 200 ms | how long before the fleet deadline the lease is requested |
/// | `max_lost_leases` | 3 | lost leases without a result before this instance probes on its own |
/// | `lease_jitter` | 250 ms | random spread added when a loser waits |
/// | `close_jitter` | 1 s | a fleet close's ramp: every instance released at once, admitting a rising share of its calls over it |
/// | `hung_after` / `hung_calls` | none / 5 | with `hung_after` set, an instance with `hung_calls` calls running longer than it votes, before their time limit ends them |
/// | `veto_successes` | 5 | recent local successes (and no failure) that veto a remote open; 0 disables |
/// | `poll_interval` | 2 s (±20 %) | how often every joined breaker is read back from the store |
/// | `command_timeout` | 100 ms | bound on every store command |
/// | `reconnect_min` / `reconnect_max` | 100 ms / 5 s | backoff between health checks while the store is unreachable |
/// | `state_ttl` | 1 h | expiry of the generation key (every other key expires sooner) |
/// | `hmac_key` | none | when set, events are signed with HMAC-SHA256 and unsigned or badly signed events are dropped |
/// | `breakers` | [`Breakers::All`] | which of the process's registered failfast breakers join by themselves |
#[derive(Clone)]
pub struct FleetConfig {
    /// Where the store is, e.g. `redis://127.0.0.1:6379/0`.
    ///
    /// - **Redis Cluster**: `redis+cluster://10.0.0.1:6379/` (or
    ///   `rediss+cluster://`, and any user and password as below): any node
    ///   of the cluster, or several comma-separated
    ///   (`redis+cluster://10.0.0.1:6379,10.0.0.2:6379/`) so that the first
    ///   connection does not depend on one node; the client learns the
    ///   others, sends each breaker's scripts to the node that owns its
    ///   slot, follows `MOVED`/`ASK` and keeps the subscription across
    ///   failovers. A plain `redis://` URL pointed at a cluster node runs
    ///   local-only ([`crate::LocalOnly::Refused`] with
    ///   [`crate::Refusal::Redirected`], and a warning) as soon as a breaker's
    ///   slot lives on another node.
    /// - **ACL user**: `redis://user:password@host:6379/0` logs in as `user`
    ///   on every connection and reconnection (`redis://:password@host/`:
    ///   the `default` user). Give the fleet a user limited to its
    ///   namespace's keys and channel, e.g. `ACL SETUSER fleet on >secret
    ///   ~failfast:{payments/prod/* &failfast:{payments/prod}:* +@read
    ///   +@write +@scripting +@pubsub +ping +time` (`TIME`, the vote
    ///   script's clock, is in no read or write category). `Debug` hides
    ///   the password.
    /// - **TLS**: `rediss://user:password@host:6380/0` with this crate's `tls`
    ///   feature (rustls; the system's root certificates, or those
    ///   `SSL_CERT_FILE` / `SSL_CERT_DIR` name); without the feature a
    ///   `rediss://` URL is refused by [`crate::join`].
    pub url: String,
    /// Service and environment this fleet belongs to, e.g. `payments/prod`.
    /// Characters allowed: ASCII letters, digits and `._-:/`; at most 64.
    pub namespace: String,
    /// This process's identity in the fleet (letters, digits, `._-`; at most 64).
    /// [`FleetConfig::new`] draws a random one.
    pub instance: String,
    /// Instances that must vote within [`vote_window`](Self::vote_window) before
    /// the fleet opens (`1` lets a single instance open the fleet).
    pub quorum: u32,
    /// How long a vote counts towards the quorum.
    pub vote_window: Duration,
    /// First fleet open duration; doubled on every reopen without a close.
    pub open_base: Duration,
    /// Longest fleet open this instance writes.
    pub open_cap: Duration,
    /// Longest remote open this instance applies, whatever the store or a peer says.
    pub max_remote_open: Duration,
    /// Lifetime of the single-probe lease. It is taken
    /// [`probe_lead`](Self::probe_lead) before the probe starts and the
    /// probe's result is reported within
    /// [`command_timeout`](Self::command_timeout) of its end, so with a
    /// [`call_timeout`](Self::call_timeout) it must be longer than the three
    /// together: a lease that lapsed while its probe still hung would let a
    /// second instance's probe start in the same recovery period.
    /// [`validate`](Self::validate) refuses a shorter one.
    pub probe_lease: Duration,
    /// The time limit of the calls through the joined breakers (the
    /// attribute's `timeout = "1s"`, `Builder::timeout`): the longest a
    /// probe of a hanging dependency runs. `None` (the default): calls have
    /// no limit the fleet knows of, and a probe that hangs past
    /// [`probe_lease`](Self::probe_lease) loses its lease to the next
    /// instance. Set it to the longest limit among the joined breakers.
    pub call_timeout: Option<Duration>,
    /// How long before the fleet deadline the lease is requested.
    pub probe_lead: Duration,
    /// Leases lost without any result before this instance probes on its own.
    pub max_lost_leases: u32,
    /// Upper bound of the random delay a lease loser adds to the winner's lease.
    pub lease_jitter: Duration,
    /// How long a fleet close takes to give the dependency the whole
    /// traffic back. Every instance is released as soon as it learns of
    /// the close, and admits a rising share of its calls over this time:
    /// in each tenth of it, calls for the first `k` tenths of the slot
    /// (`k` = 1, 2, …) and refusals for the rest, the refusals as an open
    /// breaker's (a remote open of the rest of the slot, which ends by
    /// itself; the next call is a trial, so a dependency failing again
    /// reopens the breaker on its own evidence and ends the ramp).
    /// `Duration::ZERO`: no ramp, the whole traffic at once.
    pub close_jitter: Duration,
    /// Votes from calls in flight: with `Some(bound)`, an instance whose
    /// breaker is closed and has [`hung_calls`](Self::hung_calls) calls
    /// under a time limit running longer than `bound` votes, as it would
    /// on opening, without waiting for their limit to end them. Against a
    /// dependency that hangs, every instance's calls fail only at their
    /// timeout, all at once; a vote after `bound` lets `quorum` instances
    /// open the fleet that much sooner. The vote counts towards `quorum`
    /// like any other, so one instance's local problem still opens
    /// nothing. Choose `bound` well above the dependency's slowest healthy
    /// calls: calls that are merely slow for longer than it, on `quorum`
    /// instances at once, open the fleet. `None` (the default): only opens
    /// are voted. Counted for failfast breakers from their
    /// `timed_started` / `timed_ended` totals (calls through `timeout` or
    /// `call_timeout`), sampled every 25 ms; other members report through
    /// [`FleetMember::calls_hung`](crate::FleetMember::calls_hung).
    pub hung_after: Option<Duration>,
    /// Calls running longer than [`hung_after`](Self::hung_after) that
    /// make a vote (at least 1).
    pub hung_calls: u32,
    /// Recent local successes (with no failure) that veto a remote open; `0` disables the veto.
    pub veto_successes: u32,
    /// Interval of the read-back of every joined breaker (randomised ±20 %).
    pub poll_interval: Duration,
    /// Bound on every store command.
    pub command_timeout: Duration,
    /// First delay between health checks while the store is unreachable.
    pub reconnect_min: Duration,
    /// Longest delay between health checks while the store is unreachable.
    pub reconnect_max: Duration,
    /// Expiry of the generation key.
    pub state_ttl: Duration,
    /// Optional key for HMAC-SHA256 signatures on events.
    pub hmac_key: Option<Vec<u8>>,
    /// Which of the process's registered failfast breakers join the fleet by
    /// themselves, those registered already and those registered later (an
    /// attribute breaker registers on its first call).
    pub breakers: Breakers,
}

/// Which registered failfast breakers join a fleet by themselves; see
/// [`FleetConfig::breakers`]. Any breaker can also join by hand with
/// [`Fleet::attach_breaker`](crate::Fleet::attach_breaker).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Breakers {
    /// Every registered breaker (when several share a name, the first).
    #[default]
    All,
    /// The registered breakers with one of these names.
    Named(Vec<String>),
    /// None: breakers join only through `attach_breaker` or `attach` (e.g.
    /// several instances of a fleet simulated in one process, each with its
    /// own breakers of the same names).
    Explicit,
}

impl fmt::Debug for FleetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetConfig")
            .field("url", &redact(&self.url))
            .field("namespace", &self.namespace)
            .field("instance", &self.instance)
            .field("quorum", &self.quorum)
            .field("vote_window", &self.vote_window)
            .field("open_base", &self.open_base)
            .field("open_cap", &self.open_cap)
            .field("max_remote_open", &self.max_remote_open)
            .field("probe_lease", &self.probe_lease)
            .field("probe_lead", &self.probe_lead)
            .field("call_timeout", &self.call_timeout)
            .field("hung_after", &self.hung_after)
            .field("hung_calls", &self.hung_calls)
            .field("max_lost_leases", &self.max_lost_leases)
            .field("command_timeout", &self.command_timeout)
            .field("hmac_key", &self.hmac_key.as_ref().map(|_| "set"))
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}

/// The URL without its password, for logs and `Debug`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}

impl FleetConfig {
    /// A configuration with the defaults of the table above and a random instance name.
    pub fn new(url: impl Into<String>, namespace: impl Into<String>) -> Self {
        FleetConfig {
            url: url.into(),
            namespace: namespace.into(),
            instance: format!("i{:016x}", fastrand::u64(..)),
            quorum: 2,
            vote_window: Duration::from_secs(10),
            open_base: Duration::from_secs(2),
            open_cap: Duration::from_secs(60),
            max_remote_open: Duration::from_secs(60),
            probe_lease: Duration::from_secs(5),
            probe_lead: Duration::from_millis(200),
            call_timeout: None,
            max_lost_leases: 3,
            lease_jitter: Duration::from_millis(250),
            close_jitter: Duration::from_secs(1),
            hung_after: None,
            hung_calls: 5,
            veto_successes: 5,
            poll_interval: Duration::from_secs(2),
            command_timeout: Duration::from_millis(100),
            reconnect_min: Duration::from_millis(100),
            reconnect_max: Duration::from_secs(5),
            state_ttl: Duration::from_secs(3600),
            hmac_key: None,
            breakers: Breakers::All,
        }
    }

    /// Checks names and limits; [`crate::Fleet::start`] calls it.
    pub fn validate(&self) -> Result<(), FleetConfigError> {
        let name_ok = |s: &str, extra: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.bytes().all(|b| {
                    b.is_ascii_alphanumeric()
                        || b"._-".contains(&b)
                        || extra.as_bytes().contains(&b)
                })
        };
        if !name_ok(&self.namespace, ":/") {
            return Err(FleetConfigError(
                "`namespace`: 1 to 64 of ASCII letters, digits and `._-:/`",
            ));
        }
        if !name_ok(&self.instance, "") {
            return Err(FleetConfigError(
                "`instance`: 1 to 64 of ASCII letters, digits and `._-`",
            ));
        }
        if self.quorum == 0 {
            return Err(FleetConfigError("`quorum` must be at least 1"));
        }
        if self.hung_after.is_some_and(|b| b.is_zero()) || self.hung_calls == 0 {
            return Err(FleetConfigError(
                "`hung_after` must be greater than zero and `hung_calls` at least 1",
            ));
        }
        let positive = [
            self.vote_window,
            self.open_base,
            self.max_remote_open,
            self.probe_lease,
            self.poll_interval,
            self.command_timeout,
            self.reconnect_min,
            self.state_ttl,
        ];
        if positive.iter().any(Duration::is_zero) {
            return Err(FleetConfigError("durations must be greater than zero"));
        }
        if self.open_cap < self.open_base {
            return Err(FleetConfigError("`open_cap` must be at least `open_base`"));
        }
        if self.probe_lease <= self.probe_lead {
            return Err(FleetConfigError(
                "`probe_lease` must be longer than `probe_lead`",
            ));
        }
        if let Some(timeout) = self.call_timeout
            && self.probe_lease <= self.probe_lead + timeout + self.command_timeout
        {
            return Err(FleetConfigError(
                "`probe_lease` must outlast a probe: longer than `probe_lead` + \
                 `call_timeout` + `command_timeout` (a lease that lapses while its \
                 probe hangs lets a second probe start)",
            ));
        }
        if self.reconnect_max < self.reconnect_min {
            return Err(FleetConfigError(
                "`reconnect_max` must be at least `reconnect_min`",
            ));
        }
        if self.state_ttl < self.open_cap.max(self.vote_window) {
            return Err(FleetConfigError(
                "`state_ttl` must outlive `open_cap` and `vote_window`",
            ));
        }
        Ok(())
    }
}

/// A [`FleetConfig`] that cannot work; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetConfigError(pub &'static str);

impl fmt::Display for FleetConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid fleet configuration: {}", self.0)
    }
}

impl std::error::Error for FleetConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_names_do_not() {
        let cfg = FleetConfig::new("redis://127.0.0.1/", "payments/prod");
        assert_eq!(cfg.validate(), Ok(()));
        let mut bad = cfg.clone();
        bad.namespace = "a{b}".into();
        assert!(bad.validate().is_err());
        let mut bad = cfg.clone();
        bad.instance = "has:colon".into();
        assert!(bad.validate().is_err());
        let mut bad = cfg;
        bad.quorum = 0;
        assert!(bad.validate().is_err());
    }

    #[test]
    fn the_probe_lease_must_outlast_a_probe_that_hangs_until_its_timeout() {
        let mut cfg = FleetConfig::new("redis://127.0.0.1/", "payments/prod");
        cfg.probe_lease = Duration::from_secs(2);
        cfg.call_timeout = Some(Duration::from_millis(1600));
        assert_eq!(cfg.validate(), Ok(()), "200 ms + 1.6 s + 100 ms < 2 s");
        cfg.call_timeout = Some(Duration::from_millis(1700));
        let refused = cfg
            .validate()
            .expect_err("a probe can hang for the whole lease");
        assert!(
            refused.0.contains("`probe_lease` must outlast a probe"),
            "{refused}"
        );
        cfg.probe_lease = Duration::from_millis(2001);
        assert_eq!(cfg.validate(), Ok(()));
        cfg.call_timeout = None;
        cfg.probe_lease = Duration::from_millis(300);
        assert_eq!(cfg.validate(), Ok(()), "without a timeout nothing is known");
    }

    #[test]
    fn debug_hides_the_password() {
        let cfg = FleetConfig::new("redis://user:secret@host:6379/0", "ns");
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("@host:6379"), "{shown}");
    }
}
