//! Sliding windows for the rate rules: the last N calls, or the calls of the last T.
//!
//! Both cost O(1) per call with no allocation and no scan of stored calls:
//!
//! - A **count window** stores only *events*, the calls that failed or were
//!   slow: one bit per call slot for "failed" and one for "slow" in a ring of
//!   N slots, plus running totals of the set bits. A plain success writes
//!   nothing here. Calls are numbered by the breaker's running totals, which
//!   every thread already counts on a line of its own (`totals` module): the
//!   breaker passes "successes and failures counted so far" in, less the
//!   outcomes the window must not hold (`adjust`), and that number is the
//!   call's *position*. An event takes the next position after the latest
//!   event's if its own is not beyond it (positions only grow), claims its
//!   slot and clears the slots of the successes since the previous event
//!   (they hold events N or more calls old), so after an event the bits are
//!   exactly the last N calls. A snapshot leaves out, the same way, the
//!   events that the successes since the last event pushed out. A clear
//!   notes the position it happened at (`start`): the window holds the calls
//!   after it.
//!
//!   So calls sharing a breaker write no shared line unless they fail or are
//!   slow. A success reads the window only while it fills up to `min_calls`
//!   after holding an event, and then sums the per-thread counts to bring a
//!   verdict at the call that reaches `min_calls`; otherwise the breaker's
//!   state word tells it that no verdict can come of it (see
//!   the `consult` module) and the window is not read at all.
//! - A **time window** of length T is [`TIME_BUCKETS`] buckets of T / 20.
//!   It too stores only events: a failed or slow call adds to its bucket's
//!   counters, a success writes nothing. Calls are counted the count
//!   window's way: the first call of a period starts its bucket (a bucket
//!   whose period has passed is reset by the first call that lands in it
//!   again) and notes the call's position there as the bucket's *base*, one
//!   write per bucket per period; the calls in the window are the position
//!   now less the earliest base among the live buckets. Calls fall out of
//!   the window between T − T/20 and T after they ended. On the system clock
//!   a window with buckets of ten or more of the kernel's coarse-clock
//!   resolutions places calls by that clock (see `clock`), up to one
//!   resolution (T/200 at most) earlier than the precise clock would. A success needs
//!   no verdict once a call of the same period found the window holding no
//!   event, or a verdict in it found `min_calls` calls (no call leaves the
//!   window before the period ends, so a success can only lower the
//!   shares); then it reads only its bucket's period and that mark.
//!   Otherwise it also reads the buckets and sums the per-thread counts.
//!   Every event brings its own verdict and sets the mark again. (A success
//!   that found no event while an event was being recorded may set the mark
//!   after that event's verdict cleared it: successes then bring no verdict
//!   until the next event or period, T/20 at most. A `min_calls` or rate
//!   changed at run time applies to successes from the next event or
//!   period on.)
//!
//! On one thread both windows are exact: the count window's verdicts are
//! those of a ring that every call writes, the time window's those of
//! buckets that count every call. Under concurrency they are bounded
//! approximations. A time window's call count is read from the per-thread
//! counts, which may miss the calls other threads are finishing at that
//! moment: with T threads a base or a reading can be off by up to T − 1
//! calls, and so can the calls in the window. A bucket being started is
//! out of the window for that instant (never read with its new period and
//! its old base or events), and an event racing the start of its bucket
//! may be lost, as it always could. For the count window:
//! an event's position is the count as its thread reads it, which may miss
//! the calls other threads are finishing at that moment, and events racing
//! for one position take the next free one, so an event can be placed up to
//! (threads − 1) positions from where a ring written by every call would put
//! it, and leaves the window that many calls early or late. (Further ahead
//! while events that arrive late, each taking the next free position,
//! outnumber the successes between them; each success takes one position
//! of that lead back.) With two threads
//! and a window of N, a verdict sees the share of failures among the last N
//! calls give or take one call, 1/N. A call recorded while the window
//! is being cleared (on a state change) may be lost or land in the fresh
//! window; the rules only ever look at rates, and one call out of a window of
//! many does not change a verdict in practice.
//!
//! Totals never drift from the bits: every change to a total is the count of
//! bits that one atomic operation actually flipped, clearing included (each
//! word is swapped to zero and its set bits subtracted). While records race
//! with a clear a total can be read one call early or late, so readings are
//! clamped to `[0, calls]`; once the racing calls are done, totals equal the
//! bits again. Time-window counters are 64-bit and cannot overflow in
//! practice; their events are clamped to the calls read with them.

use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crate::core::clock::COARSE_BUCKET_RESOLUTIONS;
use crate::core::config::{TIME_BUCKETS, Window as Shape};

/// Counts of one window at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) calls: u64,
    pub(crate) failures: u64,
    pub(crate) slow: u64,
}

/// Keeps a value on its own cache line, so writes to it do not slow readers of
/// its neighbours.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// What a rule needs from the breaker to record a call: each is asked only
/// when the window needs it.
pub(crate) struct Rule<Now, Calls, MinCalls, Trips> {
    /// The clock (time windows): the coarse clock's reading when given
    /// `true` (see `clock`).
    pub(crate) now: Now,
    /// Successes and failures counted by the breaker so far (count windows).
    pub(crate) calls: Calls,
    /// Calls the window must hold before a verdict.
    pub(crate) min_calls: MinCalls,
    /// The verdict on a tally.
    pub(crate) trips: Trips,
}

// One window per breaker; boxing the large variant would add an indirection to
// every call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Window {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    /// A window of `shape`; a time window reads a coarse clock of
    /// `coarse_resolution` nanoseconds if it has one and its buckets are
    /// wide enough (see `clock`).
    pub(crate) fn new(shape: Shape, coarse_resolution: Option<u64>) -> Self {
        match shape {
            Shape::Calls(n) => Window::Count(CountWindow::new(n)),
            Shape::Time(t) => Window::Time(TimeWindow::new(t, coarse_resolution)),
        }
    }

    /// Records a call and returns the rule's verdict on the window's totals
    /// after it, or `false` at once when the call cannot have changed it.
    #[inline]
    pub(crate) fn record(
        &self,
        failed: bool,
        slow: bool,
        rule: Rule<
            impl FnOnce(bool) -> u64,
            impl FnOnce() -> u64,
            impl FnOnce() -> u64,
            impl FnOnce(Tally) -> bool,
        >,
    ) -> bool {
        match self {
            Window::Count(w) if !failed && !slow => {
                !w.quiet() && w.success(rule.calls, rule.min_calls, rule.trips)
            }
            Window::Count(w) => (rule.trips)(w.event(failed, slow, (rule.calls)())),
            Window::Time(w) => w
                .record(
                    failed,
                    slow,
                    (rule.now)(w.coarse),
                    rule.calls,
                    rule.min_calls,
                )
                .is_some_and(rule.trips),
        }
    }

    /// Whether no success can bring a verdict until the window is cleared:
    /// a count window that has held `min_calls` calls since it was cleared.
    /// (A time window never is: its calls leave it as time passes.)
    pub(crate) fn settled(&self) -> bool {
        matches!(self, Window::Count(w) if w.settled.0.load(Relaxed))
    }

    /// Whether this is a time window, whose successes count calls into it.
    pub(crate) fn is_time(&self) -> bool {
        matches!(self, Window::Time(_))
    }

    /// A success or failure the breaker counted that is not the window's
    /// (a permit of an earlier period): it does not take a call slot.
    pub(crate) fn skip(&self) {
        self.adjust().fetch_add(1, Relaxed);
    }

    /// A call the window records that the breaker did not count as a success
    /// or failure (an abandoned slow call): it takes a call slot.
    pub(crate) fn extra(&self) {
        self.adjust().fetch_sub(1, Relaxed);
    }

    /// Outcomes the breaker counted that are not the window's, less calls
    /// the window holds that the breaker did not count: a call's position
    /// is the breaker's count less this. Wraps rather than underflows.
    fn adjust(&self) -> &AtomicU64 {
        match self {
            Window::Count(w) => &w.adjust,
            Window::Time(w) => &w.adjust,
        }
    }

    /// The window's totals at `now`, the breaker having counted `calls`
    /// successes and failures.
    pub(crate) fn tally(&self, now: u64, calls: u64) -> Tally {
        match self {
            Window::Count(w) => w.tally(calls),
            Window::Time(w) => w.tally(w.epoch(now), w.position(calls)),
        }
    }

    /// Empties the window, the breaker having counted `calls` successes and
    /// failures.
    pub(crate) fn clear(&self, calls: u64) {
        match self {
            Window::Count(w) => w.clear(calls),
            Window::Time(w) => w.clear(),
        }
    }
}

/// The window's events and the position of the latest; read by a success
/// only while the window is not settled, written by every event. On one
/// line: an event on another thread moves one line for all three.
#[derive(Debug, Default)]
struct Events {
    failures: AtomicU32,
    slow: AtomicU32,
    /// Position of the latest event (or clear): only ever grows.
    last: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct CountWindow {
    /// Successes need no verdict: the window has held `min_calls` calls
    /// since it was cleared (a success then only lowers the shares). Read
    /// by every event (to tell successes whether to consult the window) and
    /// by the successes that do, written only when the window is cleared or
    /// settles: on a line of its own, so that threads recording events
    /// (which write `events`) do not take it away from each other's reads.
    settled: Padded<AtomicBool>,
    events: Padded<Events>,
    /// Position of the latest clear: the window holds the calls after it.
    start: AtomicU64,
    /// See `Window::adjust`.
    adjust: AtomicU64,
    /// The failed calls' bits, then the slow calls' bits, in one allocation:
    /// for a window of up to 512 calls an event writes one line of them.
    bits: Box<[AtomicU64]>,
    size: u32,
}

impl CountWindow {
    fn new(size: u32) -> Self {
        let words = size.div_ceil(64) as usize;
        Self {
            settled: Padded(AtomicBool::new(false)),
            events: Padded(Events::default()),
            start: AtomicU64::new(0),
            adjust: AtomicU64::new(0),
            bits: (0..2 * words).map(|_| AtomicU64::new(0)).collect(),
            size,
        }
    }

    /// The failed calls' bits and the slow calls' bits.
    fn bitsets(&self) -> (&[AtomicU64], &[AtomicU64]) {
        self.bits.split_at(self.bits.len() / 2)
    }

    #[allow(clippy::cast_possible_truncation)] // the remainder is below `size`
    fn slot(&self, position: u64) -> u32 {
        (position % u64::from(self.size)) as u32
    }

    /// The position of a call, the breaker having counted `calls`, or
    /// `after` when that is behind it (a count read while other threads'
    /// counts are not yet seen, or a skip counted before its call).
    fn position(&self, calls: u64, after: u64) -> u64 {
        let position = calls.wrapping_sub(self.adjust.load(Relaxed));
        #[allow(clippy::cast_possible_wrap)] // a difference of two positions
        if (position.wrapping_sub(after) as i64) > 0 {
            position
        } else {
            after
        }
    }

    /// Calls in the window once a call at `position` was recorded.
    fn held(&self, position: u64) -> u64 {
        position
            .saturating_sub(self.start.load(Relaxed))
            .min(u64::from(self.size))
    }

    /// Whether a success can bring no verdict: the window holds no event,
    /// or has held `min_calls` calls since it was cleared.
    #[inline]
    fn quiet(&self) -> bool {
        let e = &self.events.0;
        self.settled.0.load(Relaxed) || (e.failures.load(Relaxed) == 0 && e.slow.load(Relaxed) == 0)
    }

    /// A success while the window fills up after holding an event: the call
    /// that brings it to `min_calls` may find the failures above the rate.
    /// Before the window is full no slot has been used twice, so the totals
    /// are exact.
    #[cold]
    #[inline(never)]
    fn success(
        &self,
        calls: impl FnOnce() -> u64,
        min_calls: impl FnOnce() -> u64,
        trips: impl FnOnce(Tally) -> bool,
    ) -> bool {
        let size = u64::from(self.size);
        let last = self.events.0.last.load(Acquire);
        let since = self
            .position(calls(), last)
            .saturating_sub(self.start.load(Relaxed));
        if since >= min_calls().min(size) {
            self.settled.0.store(true, Relaxed);
        }
        since <= size && trips(self.tally_at(since))
    }

    /// Records a failed or slow call, the breaker having counted `calls`.
    fn event(&self, failed: bool, slow: bool, calls: u64) -> Tally {
        let mut previous = self.events.0.last.load(Acquire);
        let position = loop {
            let position = self.position(calls, previous.wrapping_add(1));
            match self
                .events
                .0
                .last
                .compare_exchange_weak(previous, position, Relaxed, Acquire)
            {
                Ok(_) => break position,
                Err(actual) => previous = actual,
            }
        };
        // The successes since the previous event take their slots now.
        let successes = position - previous - 1;
        self.each_word(previous + 1, successes, |index, mask| {
            for (bits, total) in self.bits_and_totals() {
                let word = &bits[index];
                if word.load(Relaxed) & mask != 0 {
                    let cleared = (word.fetch_and(!mask, Relaxed) & mask).count_ones();
                    total.fetch_sub(cleared, Relaxed);
                }
            }
        });
        let slot = self.slot(position);
        let (word, mask) = ((slot / 64) as usize, 1u64 << (slot % 64));
        let (failed_bits, slow_bits) = self.bitsets();
        flip(&failed_bits[word], mask, failed, &self.events.0.failures);
        flip(&slow_bits[word], mask, slow, &self.events.0.slow);
        self.tally_at(self.held(position))
    }

    fn bits_and_totals(&self) -> [(&[AtomicU64], &AtomicU32); 2] {
        let (failed_bits, slow_bits) = self.bitsets();
        [
            (failed_bits, &self.events.0.failures),
            (slow_bits, &self.events.0.slow),
        ]
    }

    /// Calls `f(word index, mask)` for the slots of `len` positions from
    /// `first` on (every slot once `len` reaches the size).
    fn each_word(&self, first: u64, len: u64, mut f: impl FnMut(usize, u64)) {
        let size = u64::from(self.size);
        let (start, len) = if len >= size {
            (0, size)
        } else {
            (u64::from(self.slot(first)), len)
        };
        let end = start + len;
        let mut run = |from: u64, to: u64| {
            let mut slot = from;
            while slot < to {
                let word = slot / 64;
                let upto = to.min((word + 1) * 64);
                let width = upto - slot;
                let mask = if width == 64 {
                    u64::MAX
                } else {
                    ((1u64 << width) - 1) << (slot % 64)
                };
                #[allow(clippy::cast_possible_truncation)] // below size / 64
                f(word as usize, mask);
                slot = upto;
            }
        };
        run(start, end.min(size));
        if end > size {
            run(0, end - size);
        }
    }

    /// The totals when the window holds `calls` calls, clamped as the
    /// module docs say.
    fn tally_at(&self, calls: u64) -> Tally {
        let clamp = |total: &AtomicU32| u64::from(signed(total.load(Relaxed))).min(calls);
        Tally {
            calls,
            failures: clamp(&self.events.0.failures),
            slow: clamp(&self.events.0.slow),
        }
    }

    /// The totals now, the breaker having counted `calls`: the bits less the
    /// events that the successes since the latest event pushed out.
    fn tally(&self, calls: u64) -> Tally {
        let last = self.events.0.last.load(Acquire);
        let position = self.position(calls, last);
        let mut out = [0u64; 2];
        self.each_word(last + 1, position - last, |index, mask| {
            for (n, (bits, _)) in out.iter_mut().zip(self.bits_and_totals()) {
                *n += u64::from((bits[index].load(Relaxed) & mask).count_ones());
            }
        });
        let tally = self.tally_at(self.held(position));
        Tally {
            failures: tally.failures.saturating_sub(out[0]),
            slow: tally.slow.saturating_sub(out[1]),
            ..tally
        }
    }

    fn clear(&self, calls: u64) {
        let position = self.position(calls, self.events.0.last.load(Relaxed));
        self.start.store(position, Relaxed);
        // Published with the start: an event that sees this position sees
        // the start too.
        self.events.0.last.fetch_max(position, Release);
        self.settled.0.store(false, Relaxed);
        for (bits, total) in self.bits_and_totals() {
            for word in bits {
                let cleared = word.swap(0, Relaxed).count_ones();
                if cleared != 0 {
                    total.fetch_sub(cleared, Relaxed);
                }
            }
        }
    }
}

/// A total read as signed (it can dip below zero for an instant while a clear
/// races a record), clamped at zero.
#[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]
fn signed(total: u32) -> u32 {
    (total as i32).max(0) as u32
}

/// Sets the bit `mask` of `bits` to `on`, writing only if it changes, and keeps
/// `count` equal to the number of set bits.
#[inline]
fn flip(bits: &AtomicU64, mask: u64, on: bool, count: &AtomicU32) {
    let current = bits.load(Relaxed) & mask != 0;
    if current == on {
        return;
    }
    // Totals wrap rather than panic while a clear races this call; see
    // `signed`.
    if on {
        if bits.fetch_or(mask, Relaxed) & mask == 0 {
            count.fetch_add(1, Relaxed);
        }
    } else if bits.fetch_and(!mask, Relaxed) & mask != 0 {
        count.fetch_sub(1, Relaxed);
    }
}

/// A bucket's tag while a call starts it for a new period.
const STARTING: u64 = u64::MAX;

#[derive(Debug, Default)]
struct Bucket {
    /// Which period of `width` nanoseconds this bucket counts, plus one (0 = empty).
    epoch: AtomicU64,
    /// The window's position just before the bucket's first call: written
    /// once per period, by the call that starts it.
    base: AtomicU64,
    failures: AtomicU64,
    slow: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    width: u64,
    /// See `Window::adjust`.
    adjust: AtomicU64,
    /// The tag of a period whose successes need no verdict (0: none): the
    /// latest verdict in it found the window holding `min_calls` calls, or
    /// the window held no event. Until the period ends no call leaves the
    /// window, so a success, which only adds a call, cannot raise a share;
    /// the next event brings its own verdict and sets this again.
    settled: AtomicU64,
    /// Calls are placed by the coarse clock (see `clock`).
    coarse: bool,
}

/// What the live buckets hold.
struct Scan {
    failures: u64,
    slow: u64,
    /// The earliest base of a live bucket, if any is live.
    base: Option<u64>,
}

impl TimeWindow {
    fn new(length: u64, coarse_resolution: Option<u64>) -> Self {
        let width = (length / u64::from(TIME_BUCKETS)).max(1);
        Self {
            buckets: (0..TIME_BUCKETS).map(|_| Bucket::default()).collect(),
            width,
            adjust: AtomicU64::new(0),
            settled: AtomicU64::new(0),
            coarse: coarse_resolution
                .is_some_and(|resolution| width / COARSE_BUCKET_RESOLUTIONS >= resolution),
        }
    }

    fn bucket(&self, epoch: u64) -> &Bucket {
        #[allow(clippy::cast_possible_truncation)] // the remainder is below TIME_BUCKETS
        let index = (epoch % u64::from(TIME_BUCKETS)) as usize;
        &self.buckets[index]
    }

    /// The period of `width` nanoseconds that `now` falls in, kept two below
    /// `u64::MAX` so that its tag (`epoch + 1`) exists and is not `STARTING`.
    fn epoch(&self, now: u64) -> u64 {
        (now / self.width).min(u64::MAX - 2)
    }

    /// A call's position, the breaker having counted `calls`.
    fn position(&self, calls: u64) -> u64 {
        calls.wrapping_sub(self.adjust.load(Relaxed))
    }

    /// Records a call ending at `now`, the breaker having counted `calls`
    /// (this call included): the window's totals after it, or `None` when
    /// they cannot bring a verdict (no event in the window, or a success
    /// in a settled period). `calls` is read at most once: when the call
    /// starts a bucket, and for a verdict.
    fn record(
        &self,
        failed: bool,
        slow: bool,
        now: u64,
        calls: impl FnOnce() -> u64,
        min_calls: impl FnOnce() -> u64,
    ) -> Option<Tally> {
        let epoch = self.epoch(now);
        let tag = epoch + 1;
        let bucket = self.bucket(epoch);
        let mut calls = Some(calls);
        let mut read = None;
        let mut position =
            || *read.get_or_insert_with(|| self.position(calls.take().map_or(0, |calls| calls())));
        let seen = bucket.epoch.load(Relaxed);
        if seen < tag {
            self.start(bucket, seen, tag, position());
        }
        if failed {
            bucket.failures.fetch_add(1, Relaxed);
        }
        if slow {
            bucket.slow.fetch_add(1, Relaxed);
        }
        if !failed && !slow && self.settled.load(Relaxed) == tag {
            return None;
        }
        let scan = self.scan(epoch);
        if scan.failures == 0 && scan.slow == 0 {
            self.settle(tag, true);
            return None;
        }
        let tally = Self::tally_of(&scan, position());
        self.settle(tag, tally.calls >= min_calls());
        Some(tally)
    }

    /// Notes whether the successes of the period tagged `tag` need a
    /// verdict (a write only when that changes).
    fn settle(&self, tag: u64, settled: bool) {
        let value = if settled { tag } else { 0 };
        if self.settled.load(Relaxed) != value {
            self.settled.store(value, Relaxed);
        }
    }

    /// Starts `bucket` for the period tagged `tag`, unless another call
    /// did since it was `seen`; `position` is the starting call's.
    #[cold]
    #[inline(never)]
    fn start(&self, bucket: &Bucket, seen: u64, tag: u64, position: u64) {
        // Out of every window while it changes: no reading sees the new
        // period with the old base or events.
        if bucket
            .epoch
            .compare_exchange(seen, STARTING, Acquire, Relaxed)
            .is_ok()
        {
            bucket.base.store(position.wrapping_sub(1), Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
            bucket.epoch.store(tag, Release);
        }
    }

    /// The events of the buckets live at `epoch`, and their earliest base.
    fn scan(&self, epoch: u64) -> Scan {
        // Tag 0 is an empty bucket: never live.
        let oldest = (epoch + 1)
            .saturating_sub(u64::from(TIME_BUCKETS) - 1)
            .max(1);
        let mut scan = Scan {
            failures: 0,
            slow: 0,
            base: None,
        };
        for bucket in &*self.buckets {
            let tag = bucket.epoch.load(Acquire);
            if tag >= oldest && tag <= epoch + 1 {
                scan.failures = scan.failures.saturating_add(bucket.failures.load(Relaxed));
                scan.slow = scan.slow.saturating_add(bucket.slow.load(Relaxed));
                let base = bucket.base.load(Relaxed);
                scan.base = Some(scan.base.map_or(base, |b| b.min(base)));
            }
        }
        scan
    }

    /// The totals of `scan` at `position`: the calls since the earliest
    /// live bucket began, events clamped to them (see the module docs).
    fn tally_of(scan: &Scan, position: u64) -> Tally {
        let calls = scan.base.map_or(0, |base| position.saturating_sub(base));
        Tally {
            calls,
            failures: scan.failures.min(calls),
            slow: scan.slow.min(calls),
        }
    }

    fn tally(&self, epoch: u64, position: u64) -> Tally {
        Self::tally_of(&self.scan(epoch), position)
    }

    fn clear(&self) {
        self.settled.store(0, Relaxed);
        for bucket in &*self.buckets {
            bucket.epoch.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count window fed as the breaker feeds it: every call counted, and
    /// recorded when it failed or was slow (a success only when it may bring
    /// a verdict).
    struct Fed {
        window: Window,
        calls: AtomicU64,
    }

    impl Fed {
        fn new(size: u32) -> Self {
            Self {
                window: Window::new(Shape::Calls(size), None),
                calls: AtomicU64::new(0),
            }
        }

        fn record(&self, failed: bool, slow: bool) -> Option<Tally> {
            let calls = self.calls.fetch_add(1, Relaxed) + 1;
            let mut seen = None;
            self.window.record(
                failed,
                slow,
                Rule {
                    now: |_| 0,
                    calls: || calls,
                    min_calls: || 1,
                    trips: |t| {
                        seen = Some(t);
                        false
                    },
                },
            );
            seen
        }

        fn tally(&self) -> Tally {
            self.window.tally(0, self.calls.load(Relaxed))
        }

        fn count(&self) -> &CountWindow {
            match &self.window {
                Window::Count(w) => w,
                Window::Time(_) => unreachable!(),
            }
        }
    }

    #[test]
    fn count_window_slides() {
        let w = Fed::new(10);
        for _ in 0..1000 {
            w.record(false, false);
        }
        for i in 1..=10 {
            let t = w.record(true, false);
            assert_eq!(
                t,
                Some(Tally {
                    calls: 10,
                    failures: i,
                    slow: 0
                })
            );
        }
        let t = w.record(false, true);
        assert_eq!(
            t,
            Some(Tally {
                calls: 10,
                failures: 9,
                slow: 1
            })
        );
    }

    /// Against a ring that every call writes, on one thread: the tally after
    /// each event and in between are the same, whatever the gaps between
    /// events (shorter, equal to and longer than the window).
    #[test]
    fn count_window_matches_a_ring_of_every_call() {
        for size in [1, 2, 3, 10, 64, 65, 100, 130] {
            let w = Fed::new(size);
            let mut ring = std::collections::VecDeque::new();
            let mut state = u64::from(size);
            for _ in 0..20_000 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                // Runs of successes of every length, then an event.
                let failed = state >> 58 == 0;
                let slow = state >> 32 & 31 == 0;
                let seen = w.record(failed, slow);
                ring.push_back((failed, slow));
                if ring.len() > size as usize {
                    ring.pop_front();
                }
                let expected = Tally {
                    calls: ring.len() as u64,
                    failures: ring.iter().filter(|c| c.0).count() as u64,
                    slow: ring.iter().filter(|c| c.1).count() as u64,
                };
                if failed || slow {
                    assert_eq!(seen, Some(expected), "size {size}");
                }
                assert_eq!(w.tally(), expected, "size {size}");
            }
        }
    }

    /// Calls skipped or added by the breaker move the positions.
    #[test]
    fn skipped_and_extra_calls_move_positions() {
        let w = Fed::new(4);
        w.record(true, false);
        // Counted by the breaker, not the window's.
        w.calls.fetch_add(1, Relaxed);
        w.window.skip();
        assert_eq!(w.tally().calls, 1);
        // The window's, not counted by the breaker.
        w.window.extra();
        assert_eq!(w.tally().calls, 2);
    }

    /// A time window fed as the breaker feeds it: every call counted, then
    /// recorded.
    struct Timed {
        window: TimeWindow,
        calls: AtomicU64,
    }

    impl Timed {
        fn new(length: u64) -> Self {
            Self {
                window: TimeWindow::new(length, None),
                calls: AtomicU64::new(0),
            }
        }

        /// Counts and records a call ending at `now`: the verdict's tally,
        /// if the window brings one (with a `min_calls` never reached, so
        /// that a verdict is never settled).
        fn seen(&self, failed: bool, slow: bool, now: u64) -> Option<Tally> {
            let calls = self.calls.fetch_add(1, Relaxed) + 1;
            self.window.record(failed, slow, now, || calls, || u64::MAX)
        }

        /// Counts and records a call ending at `now`: the totals after it.
        fn record(&self, failed: bool, slow: bool, now: u64) -> Tally {
            self.seen(failed, slow, now);
            self.tally(now)
        }

        fn tally(&self, now: u64) -> Tally {
            let position = self.window.position(self.calls.load(Relaxed));
            self.window.tally(self.window.epoch(now), position)
        }
    }

    /// A time window reads the coarse clock when its buckets are at least
    /// ten of the clock's resolutions wide, and says so to the clock.
    #[test]
    fn time_windows_read_the_coarse_clock_when_it_is_fine_enough() {
        let ms = 1_000_000;
        let length = u64::from(TIME_BUCKETS) * COARSE_BUCKET_RESOLUTIONS * ms;
        assert!(TimeWindow::new(length, Some(ms)).coarse);
        assert!(!TimeWindow::new(length - u64::from(TIME_BUCKETS), Some(ms)).coarse);
        assert!(!TimeWindow::new(length, None).coarse);
        for (resolution, coarse) in [(Some(ms), true), (Some(ms + 1), false)] {
            let window = Window::new(Shape::Time(length), resolution);
            let mut asked = None;
            window.record(
                true,
                false,
                Rule {
                    now: |coarse| {
                        asked = Some(coarse);
                        1
                    },
                    calls: || 1,
                    min_calls: || 1,
                    trips: |_| false,
                },
            );
            assert_eq!(asked, Some(coarse), "{resolution:?}");
        }
    }

    #[test]
    fn time_window_forgets_old_buckets() {
        let w = Timed::new(20_000); // 20 buckets of 1000 ns
        w.record(true, false, 0);
        w.record(true, false, 500);
        assert_eq!(w.tally(0).failures, 2);
        // Still inside the window.
        assert_eq!(w.record(false, false, 18_999).failures, 2);
        // 20 buckets later the first bucket has left the window.
        let t = w.record(false, false, 20_000);
        assert_eq!(
            t,
            Tally {
                calls: 2,
                failures: 0,
                slow: 0
            }
        );
    }

    /// Totals equal the bits once records racing a clear are done, and never
    /// read outside `[0, calls]` meanwhile.
    #[test]
    fn count_window_totals_survive_clears_racing_records() {
        use std::sync::atomic::AtomicBool;
        let w = Fed::new(100);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let (w, stop) = (&w, &stop);
                s.spawn(move || {
                    let mut i = t;
                    while !stop.load(Relaxed) {
                        i = i.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        if let Some(t) = w.record(i >> 62 == 0, i >> 61 & 1 == 0) {
                            assert!(t.failures <= t.calls && t.slow <= t.calls, "{t:?}");
                        }
                    }
                });
            }
            for _ in 0..20_000 {
                w.window.clear(w.calls.load(Relaxed));
                let t = w.tally();
                assert!(t.failures <= t.calls && t.slow <= t.calls, "{t:?}");
            }
            stop.store(true, Relaxed);
        });
        let popcount = |bits: &[AtomicU64]| {
            bits.iter()
                .map(|b| b.load(Relaxed).count_ones())
                .sum::<u32>()
        };
        let c = w.count();
        assert_eq!(c.events.0.failures.load(Relaxed), popcount(c.bitsets().0));
        assert_eq!(c.events.0.slow.load(Relaxed), popcount(c.bitsets().1));
        // A full window of successes leaves nothing behind, without
        // wrapping, once the positions the latest event was placed ahead of
        // the count by are also past: (threads - 1) for one race, more when
        // events that came late outnumbered the successes between them.
        let lead = c
            .events
            .0
            .last
            .load(Relaxed)
            .saturating_sub(w.calls.load(Relaxed));
        for _ in 0..100 + lead {
            w.record(false, false);
        }
        assert_eq!(
            w.tally(),
            Tally {
                calls: 100,
                failures: 0,
                slow: 0
            }
        );
    }

    /// `flip` counts only the changes it made: a bit it found set and a
    /// clear took meanwhile is not counted off twice. Two threads: one sets
    /// and clears a bit by `flip`, the other clears the word as
    /// `CountWindow::clear` does; once both are done the count is the bits'.
    #[test]
    fn flip_does_not_count_off_a_bit_a_clear_took() {
        let (bits, count) = (AtomicU64::new(0), AtomicU32::new(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..400_000_u32 {
                    flip(&bits, 1 << 5, i % 2 == 0, &count);
                }
            });
            s.spawn(|| {
                for _ in 0..400_000 {
                    let cleared = bits.swap(0, Relaxed).count_ones();
                    if cleared != 0 {
                        count.fetch_sub(cleared, Relaxed);
                    }
                }
            });
        });
        assert_eq!(count.load(Relaxed), bits.load(Relaxed).count_ones());
    }

    #[test]
    fn time_window_counts_past_u32() {
        let w = Timed::new(3_600_000_000_000); // an hour
        let bucket = w.window.bucket(0);
        bucket.epoch.store(1, Relaxed);
        bucket.base.store(0, Relaxed);
        w.calls.store(u64::from(u32::MAX), Relaxed);
        for _ in 0..64 {
            w.record(false, false, 0);
        }
        let t = w.record(true, false, 0);
        assert_eq!(t.calls, u64::from(u32::MAX) + 65);
        assert_eq!(t.failures, 1);
    }

    #[test]
    fn time_window_at_the_end_of_time() {
        let w = Timed::new(20); // buckets of 1 ns
        // Forgotten: a whole window (and much more) before the two below,
        // though in the upper half of time as they are.
        w.record(true, false, u64::MAX / 2 + 1);
        w.record(true, false, u64::MAX - 1);
        let t = w.record(true, false, u64::MAX);
        assert_eq!((t.calls, t.failures), (2, 2));
        assert_eq!(Window::Time(w.window).tally(u64::MAX, 3).failures, 2);
    }

    /// Once a verdict found `min_calls` calls, or a call found no event,
    /// the successes of the same period bring none (and read no count); the
    /// next period's first success, or an event, does.
    #[test]
    fn time_window_successes_of_a_settled_period_need_no_verdict() {
        let w = TimeWindow::new(20_000, None);
        let record = |failed: bool, now: u64, calls: u64| {
            let read = std::cell::Cell::new(false);
            let t = w.record(
                failed,
                false,
                now,
                || {
                    read.set(true);
                    calls
                },
                || 3,
            );
            (t.map(|t| (t.calls, t.failures)), read.get())
        };
        assert_eq!(record(false, 0, 1), (None, true), "starts its bucket");
        assert_eq!(record(true, 0, 2), (Some((2, 1)), true));
        assert_eq!(
            record(false, 0, 3),
            (Some((3, 1)), true),
            "reaches min_calls"
        );
        assert_eq!(record(false, 999, 4), (None, false), "settled");
        assert_eq!(record(false, 1000, 5), (Some((5, 1)), true), "a new period");
        assert_eq!(record(false, 1001, 6), (None, false));
        assert_eq!(record(true, 1002, 7), (Some((7, 2)), true), "events always");
        w.clear();
        assert_eq!(record(true, 1003, 8), (Some((1, 1)), true), "cleared");
        assert_eq!(
            record(false, 1004, 9),
            (Some((2, 1)), true),
            "below min_calls"
        );
        w.clear();
        assert_eq!(record(false, 1005, 10), (None, true), "starts its bucket");
        assert_eq!(record(false, 1006, 11), (None, false), "no event");
        assert_eq!(record(true, 1007, 12), (Some((3, 1)), true));
        assert_eq!(record(false, 1008, 13), (None, false), "min_calls reached");
    }

    /// Against buckets that count every call, on one thread: the calls
    /// derived from the running count equal the calls of the live periods,
    /// after each call and at any later time, across gaps shorter than a
    /// bucket, of several buckets and longer than the window, with calls
    /// the window must leave out (a trial) or add (an abandoned slow call),
    /// and clears.
    #[test]
    fn time_window_calls_match_buckets_that_count_every_call() {
        let w = Timed::new(20_000); // 20 buckets of 1000 ns
        let mut log = std::collections::VecDeque::new();
        let expected = |log: &std::collections::VecDeque<(u64, bool, bool)>, now: u64| {
            let epoch = now / 1000;
            let live: Vec<_> = log.iter().filter(|c| c.0 + 19 >= epoch).collect();
            Tally {
                calls: live.len() as u64,
                failures: live.iter().filter(|c| c.1).count() as u64,
                slow: live.iter().filter(|c| c.2).count() as u64,
            }
        };
        let (mut now, mut state) = (0u64, 7u64);
        for _ in 0..30_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            now += match state >> 59 {
                0 => 25_000,
                1..=4 => (state >> 20) % 5_000,
                _ => (state >> 20) % 300,
            };
            let (failed, slow) = (state >> 40 & 7 == 0, state >> 44 & 15 == 0);
            let seen = match state >> 50 & 63 {
                2 => {
                    // A state change empties the window.
                    w.window.clear();
                    log.clear();
                    continue;
                }
                0 => {
                    // Counted by the breaker, not the window's.
                    w.calls.fetch_add(1, Relaxed);
                    w.window.adjust.fetch_add(1, Relaxed); // as `Window::skip`
                    continue;
                }
                1 => {
                    // The window's, not counted by the breaker.
                    w.window.adjust.fetch_sub(1, Relaxed); // as `Window::extra`
                    let calls = w.calls.load(Relaxed);
                    w.window.record(false, true, now, || calls, || u64::MAX)
                }
                _ => w.seen(failed, slow, now),
            };
            let (failed, slow) = if state >> 50 & 63 == 1 {
                (false, true)
            } else {
                (failed, slow)
            };
            log.push_back((now / 1000, failed, slow));
            while log.front().is_some_and(|c| c.0 + 40 < now / 1000) {
                log.pop_front();
            }
            let now_expected = expected(&log, now);
            if let Some(seen) = seen {
                assert_eq!(seen, now_expected, "at {now}");
            } else {
                assert_eq!(
                    (now_expected.failures, now_expected.slow),
                    (0, 0),
                    "no verdict only without events, at {now}"
                );
            }
            assert_eq!(w.tally(now), now_expected, "at {now}");
            let later = now + (state >> 30) % 25_000;
            assert_eq!(w.tally(later), expected(&log, later), "at {later}");
        }
    }
}
