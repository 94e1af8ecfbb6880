//! The validating [`Builder`].

use std::borrow::Cow;
use std::time::Duration;

use failfast_rules::{self as rules, Concurrency, FailureRule, Setting, Written};

use super::{Config, Mode, Patch, broken};
use crate::core::clock::{Clock, ManualClock};
use crate::core::error::ConfigError;
use crate::core::name::Name;

/// Builds a [`Breaker`](crate::Breaker) from settings chosen at run time.
///
/// Every setting is checked by [`build`](Builder::build): a configuration that
/// cannot work is an error value, never a panic.
///
/// ```
/// use failfast_runtime::Breaker;
/// use std::time::Duration;
///
/// let breaker = Breaker::builder()
///     .name("payments")
///     .threshold(5)
///     .recovery(Duration::from_secs(30))
///     .build()?;
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    config: Config,
    /// What was set, for [`Breaker::reconfigure`](crate::Breaker::reconfigure).
    pub(crate) patch: Patch,
    /// The first setting given that is fixed once the breaker is built.
    pub(crate) fixed: Option<&'static str>,
    /// Every setting given, as given: what `failfast_rules::resolution`
    /// reads when building, as the attribute's check does.
    pub(super) written: Written,
    clock: Clock,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            config: Config::new("unnamed"),
            patch: Patch::default(),
            fixed: None,
            written: Written::NOTHING,
            clock: Clock::System,
        }
    }
}

impl Builder {
    /// The name under which [`registry`](crate::ops::registry) finds the breaker and that
    /// [`Rejected`](crate::Rejected) reports. Default `"unnamed"`.
    ///
    /// A `&'static str` is kept as it is; a name built at run time
    /// (`format!("payments@{host}")`) is stored once, in an `Arc<str>`, and
    /// shared from there by every rejection, snapshot and event: naming a
    /// breaker allocates once, calling it never does.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.config.name = Name::from(name.into());
        self.fixed.get_or_insert("name");
        self
    }

    /// Trip after this many consecutive counted failures (default 5); with
    /// a window ([`window_time`](Self::window_time) or
    /// [`window_calls`](Self::window_calls)), after this many counted
    /// failures within it, successes in between or not.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, State};
    /// use std::time::Duration;
    ///
    /// // Five failures within ten seconds.
    /// let breaker = Breaker::builder()
    ///     .threshold(5)
    ///     .window_time(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// for _ in 0..4 {
    ///     let _ = breaker.call(|| Err::<(), _>("down"));
    ///     let _ = breaker.call(|| Ok::<_, &str>(()));
    /// }
    /// assert_eq!(breaker.state(), State::Closed);
    /// let _ = breaker.call(|| Err::<(), _>("down"));
    /// assert_eq!(breaker.state(), State::Open);
    /// ```
    pub fn threshold(mut self, n: u32) -> Self {
        self.config = self.config.with_threshold(n);
        self.patch.threshold = Some(n);
        self.written.threshold = Setting::Set(n);
        self
    }

    /// How long the breaker stays open before it admits a trial (default 30 s).
    pub fn recovery(mut self, d: Duration) -> Self {
        self.config = self.config.with_recovery(d);
        self.patch.recovery = Some(d);
        self.written.recovery = Setting::Set(d);
        self
    }

    /// Let the open time grow: it doubles each time the breaker opens again without
    /// a healthy pause, up to `max`; see the crate docs on growing open time.
    pub fn max_recovery(mut self, max: Duration) -> Self {
        // Zero means "not growing" in `Config`: `build` checks the value
        // given, zero included.
        self.config = self.config.with_max_recovery(max);
        self.patch.max_recovery = Some(max);
        self.written.max_recovery = Setting::Set(max);
        self
    }

    /// Spread each open period at random by up to this fraction (in `[0, 1)`), so
    /// a fleet of instances does not probe in lockstep.
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.config = self.config.with_jitter(fraction);
        self.patch.jitter = Some(fraction);
        self
    }

    /// Trial calls admitted at once while half-open (default 1).
    pub fn trial_calls(mut self, n: u32) -> Self {
        self.config = self.config.with_trial_calls(n);
        self.patch.trial_calls = Some(n);
        self
    }

    /// Successful trials needed to close again (default 1).
    pub fn success_threshold(mut self, n: u32) -> Self {
        self.config = self.config.with_success_threshold(n);
        self.patch.success_threshold = Some(n);
        self
    }

    /// Trip when this share (0 < rate ≤ 1) of the window's calls failed. Replaces
    /// the consecutive rule; cannot be combined with [`threshold`](Self::threshold).
    /// Over a count window the share is exact on one thread and within one
    /// call per extra thread sharing the breaker (see
    /// [`window_calls`](Self::window_calls)).
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.config = self.config.with_failure_rate(rate);
        self.patch.failure_rate = Some(rate);
        self.written.failure_rate = Setting::Set(rate);
        self
    }

    /// A sliding window of the last `n` calls (default 100).
    ///
    /// Only failed and slow calls are stored, numbered by the calls each
    /// thread counts on a line of its own, so a successful call writes
    /// nothing shared. Exact on one thread; with threads sharing the breaker
    /// a failure can be placed up to (threads − 1) calls from its true place
    /// (the `window` module of the source says how), so it leaves the window
    /// that many calls early or late: with two threads the share of failures
    /// a verdict sees is within one call of the share among the last `n`.
    pub fn window_calls(mut self, n: u32) -> Self {
        self.config = self.config.with_window_calls(n);
        self.patch.window = Some(self.config.window);
        self.written.window = Setting::Set(rules::Window::Calls(n));
        self
    }

    /// A sliding window of the calls that ended within the last `d`, in 20
    /// buckets of `d / 20` (a call leaves it between `d − d/20` and `d`
    /// after it ended).
    ///
    /// Like a count window it stores only the calls that failed (or were
    /// slow): a success writes nothing shared, except the first call of each
    /// bucket's period, which notes where the bucket starts. The calls in the
    /// window are counted from the per-thread counts: exact on one thread;
    /// with threads sharing the breaker a reading can miss the calls other
    /// threads are finishing at that moment, so it is off by at most
    /// (threads − 1) calls.
    pub fn window_time(mut self, d: Duration) -> Self {
        self.config = self.config.with_window_time(d);
        self.patch.window = Some(self.config.window);
        self.written.window = Setting::Set(rules::Window::Time(d));
        self
    }

    /// Graded shedding: refuse at random the calls beyond `k` times those
    /// the dependency accepts, `1 ≤ k ≤ 10` (2 is the usual choice); see
    /// [`Reason::Shed`](crate::Reason::Shed).
    ///
    /// Over its window (a time, 10 s unless
    /// [`shed_window`](Self::shed_window) says otherwise) each call is
    /// refused with chance
    /// `max(0, (sent − k × accepted) / sent)`: *sent* counts the calls let
    /// through that ended other than neutral, and those still running past
    /// the patience (the longest successful call timed in the window);
    /// *accepted* those of them that succeeded. A refused call is a request,
    /// in neither figure. A dependency failing a share `f` of its calls has
    /// `1 − k(1 − f)` of the calls refused; one that can serve a share `c`
    /// of the load is sent `√(k·c)` of it (the SRE book's
    /// `(requests − K × accepts) / (requests + 1)`, which counts refusals as
    /// requests not accepted, sends `K·c`: `k = K²·c` sends as much; the
    /// guide on outcomes has the table).
    ///
    /// No call is refused before the window holds
    /// [`min_calls`](Self::min_calls) requests (a window holding a refusal
    /// goes on below it), and a dependency that accepts nothing is still
    /// probed, so its recovery is seen: the first call after its last
    /// failure has left the window, and one call per period (`shed_window / 20`)
    /// at random from 400 requests a window on, in proportion fewer below
    /// (at most one in twenty, `failfast_rules::SHED_PROBE_SHARE`).
    ///
    /// It works while the breaker is closed. Without a `threshold`,
    /// `failure_rate` or `slow`, it is the breaker's only rule and the
    /// breaker never opens on its own; with one, that rule can still open
    /// it. Its multiplier can change at run time; whether a breaker sheds is
    /// fixed where it is built.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Reason};
    ///
    /// let breaker = Breaker::builder().name("pricing").shed(2.0).build()?;
    /// // The dependency fails every call: once the window holds `min_calls`
    /// // requests, all but the probes are refused.
    /// let (mut shed, mut tried) = (0, 0);
    /// for _ in 0..1000 {
    ///     match breaker.call(|| Err::<(), _>("overloaded")) {
    ///         Err(failfast_runtime::Error::Rejected(r)) => {
    ///             assert_eq!(r.reason(), Reason::Shed);
    ///             shed += 1;
    ///         }
    ///         _ => tried += 1,
    ///     }
    /// }
    /// assert!(shed > 900 && tried >= 10, "{shed} shed, {tried} tried");
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn shed(mut self, k: f64) -> Self {
        self.config = self.config.with_shed(k);
        self.patch.shed = Some(k);
        self.written.shed = Setting::Set(k);
        self
    }

    /// The time graded shedding ([`shed`](Self::shed)) measures over:
    /// 10 s unless set. Its own key: [`window_time`](Self::window_time) and
    /// [`window_calls`](Self::window_calls) are the window of a trip rule
    /// (a `failure_rate`, a `slow` rate, or a `threshold` counting the
    /// failures within it). So beside `shed`, a `window` with no such rule
    /// is refused, and so is a `window` that would turn a `threshold` from
    /// failures in a row into failures within it, unless `shed_window` is
    /// set too: both say to set `shed_window` for the shedding window. It
    /// can change at run time.
    ///
    /// ```
    /// use failfast_runtime::Breaker;
    /// use std::time::Duration;
    ///
    /// // Ten failures in a row open it; shedding measures over 5 s.
    /// let breaker = Breaker::builder()
    ///     .threshold(10)
    ///     .shed(2.0)
    ///     .shed_window(Duration::from_secs(5))
    ///     .build()?;
    /// # drop(breaker);
    ///
    /// // `window` here would make the ten failures any ten within it.
    /// let refused = Breaker::builder()
    ///     .threshold(10)
    ///     .shed(2.0)
    ///     .window_time(Duration::from_secs(5))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(refused.key(), "window");
    /// assert!(refused.to_string().contains("`shed_window`"), "{refused}");
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn shed_window(mut self, d: Duration) -> Self {
        self.config = self.config.with_shed_window(d);
        self.patch.shed_window = Some(d);
        self.written.shed_window = Setting::Set(d);
        self
    }

    /// An adaptive concurrency limit: at most that many closed calls at
    /// once, a limit between `min` and `max` (`1 ≤ min ≤ max ≤ 65535`)
    /// moved by the latency of the calls it admits and cut by their
    /// failures. It starts at `max`.
    ///
    /// - A *sample* is a closed call admitted with a place that ends in a
    ///   success: its time from admission to outcome. Refusals, neutral
    ///   outcomes (calls dropped unfinished included), failures and
    ///   half-open trials are none.
    /// - Samples are averaged over a *window*, closed by the first sample
    ///   that finds it at least `2 × baseline` (and 10 ms) long with 8
    ///   samples, or at least 1 s long with one.
    /// - The *baseline* is the least window average of the last 10 to 20 s
    ///   (two periods of 10 s); 8 windows in a row over `1.5 × baseline`,
    ///   while the limit is at or under what the throughput needs, make the
    ///   least of theirs the baseline (a dependency slower for good).
    /// - A window at most `1.5 × baseline` raises the limit by `(max − min)
    ///   × t / 20 s`, `t` the window's length (5 s at most): back from `min`
    ///   to `max` within 20 s of healthy calls, at any rate, however few
    ///   places are in use.
    /// - A window over `1.5 × baseline` is a queue: the limit falls toward
    ///   what the window's throughput needs without one, by Little's law
    ///   `need = throughput × baseline`, the throughput being `samples / t`
    ///   or `taken / latency` (places taken over the window's average
    ///   latency), the higher: to `1.5 × need` once a window of this 10 s
    ///   period was clean (at most `9/8 × baseline`), else to `need`
    ///   itself, which drains the queue. By half at most, never below `min`;
    ///   not at all when at most half the limit was in use over the window
    ///   (`samples × latency / t`) and its average is at most `2 ×
    ///   baseline`: that latency is not our queue, and it counts toward the
    ///   baseline.
    /// - A counted failure (a timeout included) cuts the limit by a tenth
    ///   of its whole places at once, down to `min`.
    ///
    /// A call that finds every place taken is refused at once with
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit),
    /// which moves no counter of the breaker but `rejected`. The limit in
    /// force is [`Snapshot::concurrency_limit`](crate::Snapshot::concurrency_limit).
    ///
    /// Every call admitted writes the count of places taken, one line
    /// shared by the threads calling the breaker, and reads the clock at
    /// its start and end: unlike the rest of a closed call's path, it costs
    /// two threads more than one. The attribute's form is `max_concurrent =
    /// 10..=200`.
    ///
    /// The range can change at run time on a breaker built or declared with
    /// one: the limit in force is brought within the new range (to its most
    /// when it was at the old most), the calls running keep their places,
    /// and no call is admitted while as many as the limit run. On a breaker
    /// declared with a fixed `max_concurrent = N`, whose limit is a bulkhead
    /// in front of it, `adaptive_concurrency(n, n)` is the new limit of `n`
    /// places (a lower one lets the calls running finish and admits none
    /// until fewer than `n` run, a higher one admits calls at once and
    /// hands places to the calls waiting); a range is refused there, and on
    /// a breaker declared without a limit any limit is.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, ManualClock, Outcome, Reason};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let breaker = Breaker::builder()
    ///     .name("search")
    ///     .adaptive_concurrency(2, 4)
    ///     .threshold(20)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// assert_eq!(breaker.snapshot().concurrency_limit, Some(4));
    /// // Failures cut the limit down to 2 places …
    /// for _ in 0..10 {
    ///     breaker.acquire().unwrap().record(Outcome::Failure);
    /// }
    /// assert_eq!(breaker.snapshot().concurrency_limit, Some(2));
    /// let (first, second) = (breaker.acquire().unwrap(), breaker.acquire().unwrap());
    /// assert_eq!(breaker.acquire().unwrap_err().reason(), Reason::ConcurrencyLimit);
    /// drop((first, second));
    /// // … and 20 s of calls at their usual latency bring it back.
    /// for _ in 0..20 {
    ///     clock.advance(Duration::from_secs(1));
    ///     let permit = breaker.acquire().unwrap();
    ///     clock.advance(Duration::from_millis(10));
    ///     permit.record(Outcome::Success);
    /// }
    /// assert_eq!(breaker.snapshot().concurrency_limit, Some(4));
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn adaptive_concurrency(mut self, min: u32, max: u32) -> Self {
        self.written.max_concurrent = Setting::Set(Concurrency::Adaptive { min, max });
        self.config = self
            .config
            .with_adaptive_concurrency(min.min(0xFFFF), max.min(0xFFFF));
        self.patch.max_concurrent = Some((min, max));
        self
    }

    /// How long a call waits for a place under a fixed `max_concurrent = N`
    /// (the attribute's `max_wait = "50ms"`), for
    /// [`Breaker::reconfigure`](crate::Breaker::reconfigure) and
    /// [`FamilyRef::reconfigure`](crate::registry::FamilyRef::reconfigure):
    /// a call reads it once, as it starts waiting, so a call already
    /// waiting keeps the time it started with. Only a breaker declared with
    /// `max_wait` takes one (the others' calls do not wait); a breaker built
    /// by hand has no bulkhead, and [`build`](Self::build) refuses it.
    /// Given to [`Family::builder`](crate::Family::builder) beside
    /// [`FamilyBuilder::max_concurrent`](crate::keyed::FamilyBuilder::max_concurrent)
    /// (and members without an adaptive limit), a call that finds every
    /// place of its key taken waits in turn that long at most: the
    /// attribute's calls and the reqwest middleware's requests wait; the
    /// tower layer refuses at once all the same (a service's `call` does
    /// not wait).
    ///
    /// ```
    /// use failfast_runtime::Breaker;
    /// use std::time::Duration;
    ///
    /// let built = Breaker::builder().max_wait(Duration::from_millis(50)).build();
    /// assert_eq!(built.unwrap_err().key(), "max_wait");
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn max_wait(mut self, d: Duration) -> Self {
        self.written.max_wait = Setting::Set(d);
        self.config = self.config.with_max_wait(d);
        self.patch.max_wait = Some(d);
        self
    }

    /// The wait given to [`max_wait`](Self::max_wait), taken out of the
    /// settings (zero if none): a family's members wait in the bulkheads
    /// the family makes them.
    #[cfg(feature = "keyed")]
    pub(crate) fn take_max_wait(&mut self) -> Duration {
        self.written.max_wait = Setting::Unset;
        self.config.max_wait = 0;
        self.patch.max_wait.take().unwrap_or_default()
    }

    /// The fixed concurrency limit of a bulkhead in front of the breaker,
    /// as a serialized `Config` holds it.
    #[cfg(feature = "serde")]
    pub(crate) fn bulkhead(mut self, max: u32) -> Self {
        self.written.max_concurrent = Setting::Set(Concurrency::Fixed(max));
        self.config = self.config.with_bulkhead(max);
        self
    }

    /// A time limit on each async call through the breaker (none unless
    /// set): past it the call's future is dropped and the call counts as a
    /// failure, whatever its error would have been. It is the attribute's
    /// `timeout = "2s"`: the limit of the calls of an `async fn` guarded by
    /// the breaker or a keyed family's member, and of
    /// [`Breaker::call_async`](crate::Breaker::call_async) (with the `tokio`
    /// feature). `slow` must be shorter, and graded shedding's
    /// `shed_window` at least as long.
    ///
    /// It can change at run time on a breaker declared with one: a call
    /// reads the limit once, when it starts, so a call running keeps the
    /// limit it started with and the calls that start after the change get
    /// the new one. A breaker declared without a time limit refuses one (its
    /// calls are not timed).
    ///
    /// ```
    /// use failfast_runtime::Breaker;
    /// use std::time::Duration;
    ///
    /// let breaker = Breaker::builder()
    ///     .timeout(Duration::from_secs(2))
    ///     .build()?;
    /// breaker.reconfigure(&Breaker::builder().timeout(Duration::from_millis(500)))?;
    ///
    /// // `slow` must stay shorter than the limit: refused whole.
    /// let slow = Breaker::builder()
    ///     .slow(Duration::from_secs(1))
    ///     .timeout(Duration::from_secs(2))
    ///     .build()?;
    /// let refused = slow.reconfigure(&Breaker::builder().timeout(Duration::from_secs(1)));
    /// assert_eq!(refused.unwrap_err().key(), "slow");
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn timeout(mut self, d: Duration) -> Self {
        self.config = self.config.with_timeout(d);
        self.patch.timeout = Some(d);
        self.written.timeout = Setting::Set(d);
        self
    }

    /// A keyed family's bound: at most `n` members are stored (the
    /// attribute's `max_keys`,
    /// default 1024; see [the family's docs](crate::keyed#bounded)). A
    /// family's own setting, not its members': given to
    /// [`Family::builder`](crate::Family::builder) it is the family's, and
    /// it changes while the family runs by the family's name
    /// ([`FamilyRef::reconfigure`](crate::registry::FamilyRef::reconfigure),
    /// [`configure::apply`](crate::configure::apply) and
    /// [`reload`](crate::configure::reload), a file's section,
    /// `FAILFAST__<FAMILY>__MAX_KEYS`), checked whole with the rest of the
    /// patch. A breaker refuses it: [`build`](Self::build),
    /// [`Breaker::reconfigure`](crate::Breaker::reconfigure) and a key's
    /// breaker by its name (`family[key]`).
    ///
    /// Raised, new keys are stored at once up to the new bound. Lowered
    /// below the members stored, the family evicts down to it at once, the
    /// members it picks as a new key's eviction picks them (least recently
    /// used of a sample), as far as members may be evicted: one with a
    /// call running through it (a lease), one open that callers keep
    /// trying, or one changed by its own name stays, and is evicted when a
    /// new key finds it evictable. Until the family is within the new bound
    /// no new key is stored: each runs through the overflow breaker
    /// `family[*]`, as in a family full of members it may not evict.
    ///
    /// ```
    /// # #[cfg(feature = "keyed")] {
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// let hosts: Family<String> = Family::builder(Breaker::builder().name("hosts").max_keys(4)).build()?;
    /// for host in ["a", "b", "c", "d"] {
    ///     let _ = hosts.get(host).call(|| Ok::<_, ()>(()));
    /// }
    /// hosts.reconfigure(&Breaker::builder().max_keys(2))?;
    /// assert_eq!((hosts.stats().stored, hosts.stats().evicted), (2, 2));
    ///
    /// let refused = Breaker::builder().name("one").max_keys(2).build();
    /// assert_eq!(refused.unwrap_err().key(), "max_keys");
    /// # }
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn max_keys(mut self, n: usize) -> Self {
        self.patch.max_keys = Some(n);
        self
    }

    /// An ejection budget, as Envoy's outlier detection has: a member
    /// trips from Closed only if, after the trip, at most `percent` % of
    /// the stored members (rounded down, and at least one) are Open or
    /// HalfOpen. Of four replicas at 50 %, two may be open; of three at
    /// 50 %, one (1.5, rounded down), not two. A failure that would trip a
    /// member beyond the budget leaves it Closed, still counting (each
    /// further failure asks again), and is counted by
    /// [`FamilyStats::spared`](crate::keyed::FamilyStats::spared). The budget is read and the trip made as one
    /// decision: members failing at the same moment never open more of the
    /// family between them than it allows.
    ///
    /// Only a trip from Closed asks. A failed trial reopens as usual (its
    /// member is ejected already); a member forced open
    /// ([`Breaker::set_mode`](crate::Breaker::set_mode)) or opened on a verdict reached elsewhere
    /// ([`integration::open_remote`](crate::integration::open_remote)) is
    /// not held back, and counts toward the budget while it is, as every
    /// Open or HalfOpen stored member does. The overflow breaker asks too,
    /// and is not counted.
    ///
    /// For a client failing over between replicas: when most of them
    /// fail at once, the fault is more likely the client's own (its
    /// network, its credentials) or a shared dependency's, and opening
    /// every breaker would refuse all traffic; with a budget, the rest
    /// keep being called. `percent` is from 1 to 100; 100 (the default)
    /// sets no budget. The attribute's `max_ejection_percent`; a family's
    /// own setting, given and changed as [`max_keys`](Self::max_keys) is.
    ///
    /// ```
    /// # #[cfg(feature = "keyed")] {
    /// use failfast_runtime::{Breaker, Family, State};
    ///
    /// let members = Breaker::builder()
    ///     .name("replicas")
    ///     .threshold(1)
    ///     .max_ejection_percent(50);
    /// let replicas: Family<String> = Family::builder(members)
    ///     .build()?;
    /// let all = ["a", "b", "c"];
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Ok::<_, ()>(()));
    /// }
    /// // Then every replica fails: the client's network is down.
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Err::<(), _>("connection refused"));
    /// }
    /// // 50 % of three is 1.5: one may be ejected. `b` and `c` stay Closed,
    /// // still called.
    /// assert_eq!(replicas.get("a").state(), State::Open);
    /// assert_eq!(replicas.get("b").state(), State::Closed);
    /// assert_eq!(replicas.failover(&all).copied().collect::<Vec<_>>(), ["b", "c"]);
    /// assert_eq!(replicas.stats().spared, 2);
    /// # }
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    ///
    /// Changed at run time, the new share holds from the next trip: lowered
    /// while more members are open than it allows, those open stay open
    /// until they recover (a failed trial reopens one as before) and no
    /// member trips from Closed until fewer are open than the new share;
    /// raised, more may trip from the next failure. Members are counted
    /// whatever the share, 100 % included, so a share set later holds at
    /// once.
    ///
    /// ```
    /// # #[cfg(feature = "keyed")] {
    /// use failfast_runtime::{Breaker, Family, State};
    ///
    /// let replicas: Family<String> =
    ///     Family::builder(Breaker::builder().name("replicas::budget").threshold(1)).build()?;
    /// let _ = replicas.get("a").call(|| Err::<(), _>("down"));
    /// let _ = replicas.get("b").call(|| Ok::<_, ()>(()));
    /// replicas.reconfigure(&Breaker::builder().max_ejection_percent(50))?;
    /// // One of two may be open: `a` is.
    /// let _ = replicas.get("b").call(|| Err::<(), _>("down"));
    /// assert_eq!(replicas.get("b").state(), State::Closed);
    /// assert_eq!(replicas.stats().max_ejection_percent, 50);
    /// # }
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn max_ejection_percent(mut self, percent: u8) -> Self {
        self.patch.max_ejection_percent = Some(percent);
        self
    }

    /// No rate verdict before the window holds this many calls (default 10, or
    /// the whole window when a count window holds fewer calls).
    pub fn min_calls(mut self, n: u32) -> Self {
        self.config = self.config.with_min_calls(n);
        self.patch.min_calls = Some(n);
        self.written.min_calls = Setting::Set(n);
        self
    }

    /// A call that takes longer than `d` is a slow call (even when it succeeds).
    pub fn slow(mut self, d: Duration) -> Self {
        let rate = self.config.slow_rate;
        self.config = self.config.with_slow(d);
        // A `slow_rate` given before is kept, and checked, as it was given.
        if self.patch.slow_rate.is_some() {
            self.config.slow_rate = rate;
        }
        self.written.slow = Setting::Set(d);
        self.fixed.get_or_insert("slow");
        self
    }

    /// Trip when this share (0 < rate ≤ 1) of the window's calls were slow
    /// (default 1.0 once [`slow`](Self::slow) is set).
    pub fn slow_rate(mut self, rate: f64) -> Self {
        self.config = self.config.with_slow_rate(rate);
        self.patch.slow_rate = Some(rate);
        self.written.slow_rate = Setting::Set(rate);
        self
    }

    /// How long a half-open trial permit may stay unresolved before it is
    /// presumed lost (default: ten times `recovery`, and at least 60 s).
    ///
    /// A trial is never replaced while it runs, however slow, until its lease
    /// has passed: only then does a permit that was leaked (`mem::forget`) or
    /// is stuck give its slot to a new round of trials. Set it above the
    /// longest a call can take (its timeout, if it has one).
    pub fn trial_lease(mut self, lease: Duration) -> Self {
        self.config = self.config.with_trial_lease(lease);
        self.written.trial_lease = Setting::Set(lease);
        self.fixed.get_or_insert("trial_lease");
        self
    }

    /// Read time from `clock` instead of the system's monotonic clock.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Clock::Manual(clock);
        self.fixed.get_or_insert("clock");
        self
    }

    /// A builder with the settings of `patch` given, as its setters give them.
    #[cfg(feature = "serde")]
    pub(crate) fn from_patch(patch: Patch) -> Self {
        let mut b = Self::default();
        macro_rules! set {
            ($($field:ident),*) => {$(
                if let Some(v) = patch.$field {
                    b = b.$field(v);
                }
            )*};
        }
        set!(
            threshold,
            failure_rate,
            min_calls,
            slow_rate,
            recovery,
            max_recovery
        );
        set!(
            jitter,
            trial_calls,
            success_threshold,
            shed,
            shed_window,
            timeout,
            max_wait,
            mode
        );
        if let Some((min, max)) = patch.max_concurrent {
            b = b.adaptive_concurrency(min, max);
        }
        set!(max_keys, max_ejection_percent);
        match patch.window {
            Some(super::Window::Calls(n)) => b.window_calls(n),
            Some(super::Window::Time(t)) => b.window_time(Duration::from_nanos(t)),
            None => b,
        }
    }

    /// The mode the breaker runs in: [`Mode::Normal`](crate::Mode::Normal)
    /// unless set (a breaker can start observe-only, for a shadow roll-out).
    /// On a running breaker, as [`Breaker::set_mode`](crate::Breaker::set_mode).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.patch.mode = Some(mode);
        self
    }

    /// The settings and the clock, checked as [`build`](Self::build) checks
    /// them.
    pub(crate) fn checked_with_clock(self) -> Result<(Config, Clock), ConfigError> {
        let clock = self.clock.clone();
        Ok((self.checked()?, clock))
    }

    /// The settings, checked as [`build`](Self::build) checks them; an
    /// error names the breaker.
    pub(crate) fn checked(self) -> Result<Config, ConfigError> {
        let name = self.config.name.clone();
        self.checked_unnamed().map_err(|e| e.of(&name))
    }

    /// The name given, or the default.
    pub(crate) fn given_name(&self) -> &str {
        &self.config.name
    }

    fn checked_unnamed(mut self) -> Result<Config, ConfigError> {
        // What the settings mean together, resolved as the attribute
        // resolves its keys.
        let rules = rules::resolve(&self.written).map_err(broken)?;
        match rules.failures {
            FailureRule::Off => self.config.threshold = 0,
            FailureRule::WithinWindow => self.config.within = true,
            FailureRule::Consecutive | FailureRule::Rate => {}
        }
        if let Some(n) = rules.implied_min_calls {
            self.config.min_calls = n;
        }
        self.config.validate()?;
        Ok(self.config)
    }
}
