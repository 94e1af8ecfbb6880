//! Retries outside the breaker: the policy `#[retry]` keeps per function
//! ([`Retry`], its documentation is the module's), handed to the expansion by
//! `__private`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(test)]
use crate::ManualClock;
use crate::core::clock::Clock;
use crate::core::totals::Count;
use crate::{Breaker, State};

/// The first backoff delay when not told otherwise.
pub(crate) const DEFAULT_BACKOFF_MIN: Duration = Duration::from_millis(100);
/// The longest backoff delay when not told otherwise.
pub(crate) const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(2);
/// The share of extra calls retries may add when not told otherwise.
pub(crate) const DEFAULT_BUDGET: f64 = 0.2;
/// The span of time the budget looks back on.
pub(crate) const BUDGET_WINDOW: Duration = Duration::from_secs(10);
/// Retries always allowed per [`BUDGET_WINDOW`], whatever the share, so that
/// a function called a few times a minute can still retry.
pub(crate) const MIN_RETRIES: u64 = 10;

/// One slot per second of the window.
#[allow(clippy::cast_possible_truncation)] // 10
const SLOTS: usize = BUDGET_WINDOW.as_secs() as usize;
const SECOND: u64 = 1_000_000_000;
/// A slot's word: the second it counts (24 bits, compared modulo 2^24),
/// calls (24 bits) and retries (16 bits), both saturating: past 16 million
/// calls or 65,535 retries in one second, the slot undercounts calls or
/// stops granting retries, which only makes the budget stricter.
const CALLS_BITS: u32 = 24;
const RETRIES_BITS: u32 = 16;
const CALLS_MAX: u64 = (1 << CALLS_BITS) - 1;
const RETRIES_MAX: u64 = (1 << RETRIES_BITS) - 1;
const EPOCH_BITS: u32 = 24;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
/// The dating word: the second of the last dating, from which the calls
/// counted since are dated (24 bits), and the count of calls dated so far,
/// modulo 2^40 (far beyond any count between two decisions).
const UNDATED_BITS: u32 = 64 - EPOCH_BITS;
const UNDATED_MASK: u64 = (1 << UNDATED_BITS) - 1;

#[inline]
const fn pack(epoch: u64, calls: u64, retries: u64) -> u64 {
    (epoch & EPOCH_MASK) << (CALLS_BITS + RETRIES_BITS) | calls << RETRIES_BITS | retries
}

#[inline]
const fn unpack(word: u64) -> (u64, u64, u64) {
    (
        word >> (CALLS_BITS + RETRIES_BITS),
        (word >> RETRIES_BITS) & CALLS_MAX,
        word & RETRIES_MAX,
    )
}

/// A retry policy, for retries outside the breaker: a bounded number of
/// attempts, exponential backoff between two bounds with optional jitter,
/// and a retry budget. `const`-constructible, so it can live in a `static`
/// next to the function it serves: `#[retry]` makes one per function.
///
/// A retry multiplies the load on a dependency exactly when it is least able
/// to take it. [`Retry`] keeps that in check with a **budget**: over a sliding
/// window of 10 seconds, retries may add at most `budget` (a share,
/// 0.2 by default) to the calls made, plus 10 retries so that a function
/// called rarely can still retry. When the budget is spent, a failed attempt
/// is returned as it is.
///
/// The budget is per [`Retry`] value (per function, with `#[retry]`), kept
/// in atomic words: no lock, and no allocation but the per-thread lines of
/// its count, made on its first call.
///
/// - A call is counted on a line of the calling thread's own, as a breaker
///   counts its running totals (the `totals` module): threads calling one
///   function at once write nothing shared, and no clock is read on a call
///   that needs no retry.
/// - Deciding a retry reads the clock and the count, dates the calls
///   counted since the last decision to that decision's second (the oldest
///   they can be from, so the budget only errs on the strict side) in one of
///   ten one-second slots, and takes a token with a compare-and-swap on the
///   current second's slot, so concurrent retries can never overspend it.
///
/// A rejection is never retried: the breaker already said the dependency is
/// sick, and asking again is the retry storm it is there to prevent.
#[derive(Debug)]
pub struct Retry {
    attempts: u32,
    min: u64,
    max: u64,
    jitter: f64,
    budget: f64,
    clock: Clock,
    /// Calls made, on per-thread lines.
    calls: Count,
    /// The last dating's second and the calls dated so far (see
    /// `UNDATED_BITS`).
    dated: AtomicU64,
    slots: [AtomicU64; SLOTS],
}

impl Retry {
    /// `attempts` tries in all (the call and `attempts - 1` retries; 0 is
    /// taken as 1), with the default backoff (100 ms, doubling up to 2 s)
    /// and budget (0.2).
    #[must_use]
    pub const fn new(attempts: u32) -> Self {
        Self {
            attempts: if attempts == 0 { 1 } else { attempts },
            min: DEFAULT_BACKOFF_MIN.as_nanos() as u64,
            max: DEFAULT_BACKOFF_MAX.as_nanos() as u64,
            jitter: 0.0,
            budget: DEFAULT_BUDGET,
            clock: Clock::System,
            calls: Count::new(),
            dated: AtomicU64::new(0),
            slots: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    /// Waits `min` before the first retry, doubling each time up to `max`
    /// (`max` below `min` is taken as `min`).
    #[must_use]
    pub const fn backoff(mut self, min: Duration, max: Duration) -> Self {
        let min = min.as_nanos();
        let max = max.as_nanos();
        self.min = if min > u64::MAX as u128 {
            u64::MAX
        } else {
            min as u64
        };
        self.max = if max > u64::MAX as u128 {
            u64::MAX
        } else if (max as u64) < self.min {
            self.min
        } else {
            max as u64
        };
        self
    }

    /// Shortens each delay by a random fraction of up to `fraction` (in
    /// `[0, 1]`; out-of-range values are clamped), so that callers that failed
    /// together do not retry together. The delay never exceeds the backoff.
    #[must_use]
    pub const fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction.clamp(0.0, 1.0);
        self
    }

    /// Over the last 10 seconds, retries may add at most this share of the
    /// calls made (plus 10 retries); negative values are taken as 0.
    #[must_use]
    pub const fn budget(mut self, share: f64) -> Self {
        self.budget = share.max(0.0);
        self
    }

    /// Reads `clock` for the budget's window instead of the system's
    /// monotonic clock.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Clock::Manual(clock);
        self
    }

    /// Starts a call: counts it in the budget and returns its attempt
    /// counter. The first attempt needs no permission, and costs one
    /// increment on a line of this thread's own.
    #[inline]
    pub fn begin(&self) -> Attempts<'_> {
        self.calls.add();
        Attempts {
            retry: self,
            made: 1,
        }
    }

    /// Calls and retries counted over the budget's window.
    #[cfg(test)]
    fn window(&self) -> (u64, u64) {
        let epoch = self.epoch();
        self.date_calls(epoch);
        self.slots
            .iter()
            .map(|slot| unpack(slot.load(Ordering::Relaxed)))
            .filter(|(at, _, _)| in_window(*at, epoch))
            .fold((0, 0), |(c, r), (_, calls, retries)| {
                (c + calls, r + retries)
            })
    }

    #[inline]
    fn epoch(&self) -> u64 {
        self.clock.now() / SECOND
    }

    /// The backoff before retry number `retry` (1 for the first retry).
    fn delay(&self, retry: u32) -> Duration {
        let doubled = self
            .min
            .checked_shl(retry.saturating_sub(1))
            .filter(|d| d >> retry.saturating_sub(1) == self.min)
            .map_or(self.max, |d| d.min(self.max));
        Duration::from_nanos(jittered(doubled, self.jitter))
    }

    /// Takes one retry token if the window has one.
    fn spend(&self) -> bool {
        let epoch = self.epoch();
        self.date_calls(epoch);
        let current = slot_of(epoch);
        let (mut calls, mut retries) = (0, 0);
        for (i, slot) in self.slots.iter().enumerate() {
            let (at, c, r) = unpack(slot.load(Ordering::Relaxed));
            if i != current && in_window(at, epoch) {
                calls += c;
                retries += r;
            }
        }
        let slot = &self.slots[current];
        let mut word = slot.load(Ordering::Relaxed);
        loop {
            let (at, c, r) = unpack(word);
            let (c, r) = if at == epoch & EPOCH_MASK {
                (c, r)
            } else {
                (0, 0)
            };
            if !self.allows(calls + c, retries + r) || r == RETRIES_MAX {
                return false;
            }
            let new = pack(epoch, c, r + 1);
            match slot.compare_exchange_weak(word, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    /// Moves the calls counted since the last dating into the slot of that
    /// dating's second (dropped if that second has left the window), and
    /// dates the next ones from `epoch`.
    fn date_calls(&self, epoch: u64) {
        self.date_calls_counted(epoch, self.calls.sum());
    }

    /// `date_calls`, with `total` calls counted so far as this decision read
    /// them.
    fn date_calls_counted(&self, epoch: u64, total: u64) {
        let total = total & UNDATED_MASK;
        let mut word = self.dated.load(Ordering::Relaxed);
        let (since, calls) = loop {
            let (since, dated) = (word >> UNDATED_BITS, word & UNDATED_MASK);
            let calls = total.wrapping_sub(dated) & UNDATED_MASK;
            if calls > UNDATED_MASK / 2 {
                // Read just before a racing dating's count, and behind it:
                // nothing is new, and the word stays as that dating left it.
                return;
            }
            let new = (epoch & EPOCH_MASK) << UNDATED_BITS | total;
            match self
                .dated
                .compare_exchange_weak(word, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break (since, calls),
                Err(actual) => word = actual,
            }
        };
        if calls == 0 || !in_window(since, epoch) {
            return;
        }
        // The full second, from its low 24 bits: less than 10 s ago.
        let since = epoch - (epoch.wrapping_sub(since) & EPOCH_MASK);
        let slot = &self.slots[slot_of(since)];
        let mut word = slot.load(Ordering::Relaxed);
        loop {
            let (at, c, r) = unpack(word);
            // Within the window, one second per slot: the slot counts
            // `since` already, or an older second that has left the window.
            let new = if at == since & EPOCH_MASK {
                pack(since, (c + calls).min(CALLS_MAX), r)
            } else {
                pack(since, calls.min(CALLS_MAX), 0)
            };
            match slot.compare_exchange_weak(word, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether one more retry fits: `retries + 1 <= budget * calls + MIN_RETRIES`.
    #[allow(clippy::cast_precision_loss)] // exact below 2^53 calls
    fn allows(&self, calls: u64, retries: u64) -> bool {
        (retries + 1) as f64 <= self.budget * calls as f64 + MIN_RETRIES as f64
    }
}

#[inline]
#[allow(clippy::cast_possible_truncation)] // the remainder is below SLOTS
fn slot_of(epoch: u64) -> usize {
    (epoch % SLOTS as u64) as usize
}

/// Whether a slot stamped `at` (24 bits) counts in the window ending at `epoch`.
#[inline]
fn in_window(at: u64, epoch: u64) -> bool {
    (epoch.wrapping_sub(at) & EPOCH_MASK) < SLOTS as u64
}

/// `nanos` shortened by a random fraction of up to `jitter`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)] // durations in f64 lose only sub-nanosecond precision below 2^53 ns (104 days)
fn jittered(nanos: u64, jitter: f64) -> u64 {
    if jitter == 0.0 {
        return nanos;
    }
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    let random = STATE.with(|state| {
        let mut seed = state.get();
        if seed == 0 {
            seed = crate::core::clock::system_now() ^ (std::ptr::from_ref(state) as u64);
        }
        let (next, random) = crate::core::breaker::splitmix64(seed);
        state.set(next);
        random
    });
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    (nanos as f64 * (1.0 - jitter * unit)) as u64
}

/// `Some(time until the next trial)` when `breaker` is open, `None` when
/// it is not.
pub(crate) fn open_for(breaker: &Breaker) -> Option<Option<Duration>> {
    (breaker.state() == State::Open).then(|| breaker.snapshot().retry_after)
}

/// The attempts of one call; see [`Retry::begin`].
#[derive(Debug)]
pub struct Attempts<'r> {
    retry: &'r Retry,
    made: u32,
}

impl Attempts<'_> {
    /// After a failed attempt worth retrying: the delay to wait before the
    /// next attempt, or `None` to stop (no attempts left, or the budget is
    /// spent). A `Some` counts the next attempt as made and spends a token
    /// of the budget.
    pub fn next_delay(&mut self) -> Option<Duration> {
        if self.made >= self.retry.attempts {
            return None;
        }
        let delay = self.retry.delay(self.made);
        self.take(delay)
    }

    /// [`next_delay`](Self::next_delay) for an attempt made through a
    /// breaker that was open (`Some`, with the time until its next trial if
    /// known) or not (`None`) right after the failure ([`open_for`]): also
    /// stops at once when the breaker will not admit a trial before the
    /// delay has passed (the next attempt would only be rejected), or is
    /// forced open.
    pub(crate) fn next_delay_if_open(
        &mut self,
        open: Option<Option<Duration>>,
    ) -> Option<Duration> {
        if self.made >= self.retry.attempts {
            return None;
        }
        let delay = self.retry.delay(self.made);
        if let Some(retry_after) = open {
            match retry_after {
                Some(after) if after <= delay => {}
                _ => return None,
            }
        }
        self.take(delay)
    }

    fn take(&mut self, delay: Duration) -> Option<Duration> {
        if !self.retry.spend() {
            return None;
        }
        self.made += 1;
        Some(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(attempts: u32) -> (Retry, ManualClock) {
        let clock = ManualClock::new();
        let retry = Retry::new(attempts)
            .backoff(Duration::from_millis(100), Duration::from_millis(350))
            .clock(clock.clone());
        (retry, clock)
    }

    /// Makes `n` calls (each counted in the budget, none retried).
    fn make_calls(retry: &Retry, n: u64) {
        for _ in 0..n {
            let _ = retry.begin();
        }
    }

    #[test]
    fn backoff_bounds_beyond_u64_nanoseconds_saturate() {
        // 584 years and a bit: more nanoseconds than a u64 holds.
        let huge = Duration::new(u64::MAX / 1_000_000_000 + 1, 0);
        let retry = Retry::new(2).backoff(huge, huge);
        assert_eq!(retry.delay(1), Duration::from_nanos(u64::MAX));
        let retry = Retry::new(2).backoff(Duration::from_millis(1), huge);
        assert_eq!(retry.delay(1), Duration::from_millis(1));
        assert_eq!(retry.delay(100), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn delays_double_up_to_the_maximum() {
        let (retry, _) = policy(10);
        let delays: Vec<_> = (1..6).map(|n| retry.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350, 350]);
        // No overflow however many retries.
        assert_eq!(retry.delay(200), Duration::from_millis(350));
    }

    #[test]
    fn jitter_only_shortens() {
        let retry = Retry::new(3)
            .backoff(Duration::from_millis(100), Duration::from_secs(1))
            .jitter(0.5);
        let delays: Vec<_> = (0..200).map(|_| retry.delay(1)).collect();
        assert!(
            delays
                .iter()
                .all(|d| *d >= Duration::from_millis(50) && *d <= Duration::from_millis(100))
        );
        assert!(
            delays.iter().any(|d| *d != delays[0]),
            "jitter spreads the delays"
        );
    }

    /// Callers that fail together retry apart: each thread's draws start
    /// from a seed of its own, so the first delays of threads started
    /// together differ (a fixed first seed would send them back in step).
    #[test]
    fn the_first_jittered_delays_of_new_threads_differ() {
        let retry = Retry::new(3)
            .backoff(Duration::from_millis(100), Duration::from_secs(1))
            .jitter(0.5);
        let firsts: Vec<Duration> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8).map(|_| s.spawn(|| retry.delay(1))).collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(firsts.iter().any(|d| *d != firsts[0]), "{firsts:?}");
    }

    #[test]
    fn attempts_are_counted_to_the_limit() {
        let (retry, _) = policy(3);
        let mut attempts = retry.begin();
        assert_eq!(attempts.next_delay(), Some(Duration::from_millis(100)));
        assert_eq!(attempts.next_delay(), Some(Duration::from_millis(200)));
        assert_eq!(attempts.next_delay(), None);
        assert_eq!(attempts.made, 3);
    }

    #[test]
    fn the_budget_allows_a_share_of_the_calls_plus_a_floor() {
        let (retry, _) = policy(2);
        make_calls(&retry, 100);
        let mut granted = 0;
        for _ in 0..100 {
            if retry.begin().next_delay().is_some() {
                granted += 1;
            }
        }
        // 200 calls: 0.2 * 200 + 10 = 50 retries.
        assert_eq!(granted, 50);
        assert_eq!(retry.window(), (200, 50));
    }

    /// Calls and retries of the earlier seconds of the window count as much
    /// as this second's.
    #[test]
    fn the_budget_counts_every_second_of_its_window() {
        let (retry, clock) = policy(2);
        make_calls(&retry, 100);
        clock.advance(Duration::from_secs(1));
        let mut granted = 0;
        for _ in 0..5 {
            if retry.begin().next_delay().is_some() {
                granted += 1;
            }
        }
        clock.advance(Duration::from_secs(1));
        for _ in 0..100 {
            if retry.begin().next_delay().is_some() {
                granted += 1;
            }
        }
        // 205 calls over three seconds: 0.2 * 205 + 10 = 51 retries.
        assert_eq!(granted, 51);
        assert_eq!(retry.window(), (205, 51));
    }

    #[test]
    fn attempts_and_backoff_bounds_are_kept_as_given_or_corrected() {
        assert_eq!(Retry::new(3).attempts, 3);
        assert_eq!(Retry::new(0).attempts, 1, "at least the call itself");
        // A maximum below the minimum is the minimum: every delay is 200 ms.
        let retry = Retry::new(3).backoff(Duration::from_millis(200), Duration::from_millis(100));
        assert_eq!(retry.delay(1), Duration::from_millis(200));
        assert_eq!(retry.delay(3), Duration::from_millis(200));
    }

    /// Calls counted on several threads while other threads date them
    /// (every retry decision does) are each dated once: none lost, none
    /// counted twice, however the datings interleave with the counts.
    #[test]
    fn calls_counted_while_others_date_them_are_dated_once() {
        const THREADS: u64 = 4;
        const CALLS: u64 = 50_000;
        for _ in 0..10 {
            counted_while_dated(THREADS, CALLS);
        }
    }

    fn counted_while_dated(threads: u64, calls: u64) {
        let (retry, _) = policy(2);
        let counting = std::sync::atomic::AtomicU64::new(threads);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    make_calls(&retry, calls);
                    counting.fetch_sub(1, Ordering::Relaxed);
                });
            }
            for _ in 0..2 {
                s.spawn(|| {
                    while counting.load(Ordering::Relaxed) > 0 {
                        let (dated, retries) = retry.window();
                        assert!(dated <= threads * calls && retries == 0, "{dated}");
                    }
                });
            }
        });
        assert_eq!(retry.window(), (threads * calls, 0));
    }

    /// A decision whose count was read before a racing decision's, and is
    /// behind the count that one dated, dates nothing; a count up to half
    /// the dating word's range ahead is ahead.
    #[test]
    fn a_decision_behind_a_racing_one_dates_nothing() {
        let (retry, _) = policy(2);
        make_calls(&retry, 10);
        let epoch = retry.epoch();
        retry.date_calls_counted(epoch, 10);
        retry.date_calls_counted(epoch, 4);
        assert_eq!(retry.window(), (10, 0));
        retry.date_calls_counted(epoch, 10 + UNDATED_MASK / 2);
        assert_eq!(retry.window(), (CALLS_MAX, 0), "saturated, not wrapped");
    }

    /// A decision that read the clock a second before a racing decision
    /// dated the calls (the two straddled the turn of a second) finds the
    /// last dating's second ahead of its own, outside its window: it drops
    /// the calls counted in between (the strict side) and dates the next
    /// ones from its own second, without touching any slot.
    #[test]
    fn a_decision_a_second_behind_a_racing_dating_drops_the_calls_between() {
        let (retry, clock) = policy(2);
        clock.advance(Duration::from_secs(6));
        make_calls(&retry, 10);
        retry.date_calls_counted(6, 10);
        make_calls(&retry, 4);
        retry.date_calls_counted(5, 14);
        make_calls(&retry, 3);
        clock.advance(Duration::from_secs(8));
        // At 14 s: the 10 calls dated 0 s have left the window, the 4 were
        // dropped, the 3 made since were dated 5 s, by the late decision.
        assert_eq!(retry.window(), (3, 0));
        clock.advance(Duration::from_secs(1));
        assert_eq!(retry.window(), (0, 0));
    }

    /// Threads racing for the last tokens never take one too many: the
    /// token is taken by a compare-and-swap that rechecks the budget.
    #[test]
    fn racing_threads_never_overspend_the_budget() {
        let (retry, _) = policy(u32::MAX);
        let retry = retry.budget(0.5);
        make_calls(&retry, 1000);
        let granted = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut attempts = retry.begin();
                    for _ in 0..200 {
                        if attempts.next_delay().is_some() {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // 1,008 calls: 0.5 * 1008 + 10 = 514 tokens, not one more.
        assert_eq!(granted.load(Ordering::Relaxed), 514);
        assert_eq!(retry.window(), (1008, 514));
    }

    #[test]
    fn the_window_slides() {
        let (retry, clock) = policy(2);
        make_calls(&retry, 100);
        while retry.begin().next_delay().is_some() {}
        let (_, spent) = retry.window();
        clock.advance(Duration::from_secs(5));
        assert!(
            retry.begin().next_delay().is_none(),
            "still within the window"
        );
        clock.advance(Duration::from_secs(5));
        // Second 0 left the window, with the call made at 5 s: it was dated
        // to 0 s, when its count started (the strict side).
        assert_eq!(retry.window(), (0, 0), "{spent} retries aged out");
        assert!(
            retry.begin().next_delay().is_some(),
            "the floor is back after the window"
        );
    }

    #[test]
    fn calls_are_dated_when_a_retry_is_decided_never_later_than_made() {
        let (retry, clock) = policy(2);
        clock.advance(Duration::from_secs(3));
        assert_eq!(retry.window(), (0, 0)); // starts a count at 3 s
        make_calls(&retry, 50);
        clock.advance(Duration::from_secs(4));
        // Made between 3 s and 7 s, dated 3 s: still in the window at 12 s,
        // gone at 13 s.
        assert_eq!(retry.window(), (50, 0));
        clock.advance(Duration::from_secs(5));
        assert_eq!(retry.window(), (50, 0));
        clock.advance(Duration::from_secs(1));
        assert_eq!(retry.window(), (0, 0));
    }

    #[test]
    fn an_open_breaker_longer_than_the_delay_stops_at_once() {
        let clock = ManualClock::new();
        let breaker = Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_millis(150))
            .clock(clock.clone())
            .build()
            .unwrap();
        let _ = breaker.call(|| Err::<(), _>("down"));
        let (retry, _) = policy(5);
        let mut attempts = retry.begin();
        // Open for 150 ms, first delay 100 ms: the retry would be rejected.
        assert_eq!(attempts.next_delay_if_open(open_for(&breaker)), None);
        clock.advance(Duration::from_millis(60));
        // 90 ms left: the retry after 100 ms will be the trial.
        assert_eq!(
            attempts.next_delay_if_open(open_for(&breaker)),
            Some(Duration::from_millis(100))
        );
        breaker.set_mode(crate::Mode::ForcedOpen);
        assert_eq!(attempts.next_delay_if_open(open_for(&breaker)), None);
    }
}
