//! Sliding windows for the rate rules: the last N calls, or the calls of the last T.
//!
//! Both cost O(1) per call with no allocation and no scan of stored calls:
//!
//! - A **count window** keeps one bit per call slot for "failed" and one for
//!   "slow" in a ring, plus running totals. Recording a call claims the next slot
//!   with one `fetch_add` and flips a slot's bits only when they change (a success
//!   overwriting a success writes nothing), adjusting the totals by the flips that
//!   actually happened, so totals always equal the bits.
//! - A **time window** of length T is [`TIME_BUCKETS`] buckets of T / 20; a call
//!   increments its bucket, and a bucket whose epoch has passed is reset by the
//!   first call that lands in it again. Calls fall out of the window between
//!   T − T/20 and T after they ended.
//!
//! Under concurrency the windows are exact about the outcomes they hold, but a
//! call recorded while the window is being cleared (on a state change) may be
//! lost or land in the fresh window; the rules only ever look at rates, and one
//! call out of a window of many does not change a verdict in practice.
//!
//! Totals never drift from the bits: every change to a total is the count of
//! bits that one atomic operation actually flipped, clearing included (each
//! word is swapped to zero and its set bits subtracted). While records race
//! with a clear a total can be read one call early or late, so readings are
//! clamped to `[0, calls]`; once the racing calls are done, totals equal the
//! bits again. Time-window counters are 64-bit and cannot overflow in
//! practice.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::config::{Window as Shape, TIME_BUCKETS};

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

// One window per breaker; boxing the large variant would add an indirection to
// every call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Window {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    pub(crate) fn new(shape: Shape) -> Self {
        match shape {
            Shape::Calls(n) => Window::Count(CountWindow::new(n)),
            Shape::Time(t) => Window::Time(TimeWindow::new(t)),
        }
    }

    /// Records a call and returns `trips` of the window's totals after it, or
    /// `false` at once when the call cannot have changed them.
    #[inline]
    pub(crate) fn record(
        &self,
        failed: bool,
        slow: bool,
        now: impl FnOnce() -> u64,
        trips: impl FnOnce(Tally) -> bool,
    ) -> bool {
        match self {
            Window::Count(w) => !w.unchanged_by(failed, slow) && trips(w.record(failed, slow)),
            Window::Time(w) => trips(w.record(failed, slow, now())),
        }
    }

    pub(crate) fn tally(&self, now: u64) -> Tally {
        match self {
            Window::Count(w) => w.tally(),
            Window::Time(w) => w.tally(w.epoch(now)),
        }
    }

    pub(crate) fn clear(&self) {
        match self {
            Window::Count(w) => w.clear(),
            Window::Time(w) => w.clear(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct CountWindow {
    cursor: Padded<AtomicU64>,
    failures: Padded<AtomicU32>,
    slow: AtomicU32,
    failed_bits: Box<[AtomicU64]>,
    slow_bits: Box<[AtomicU64]>,
    size: u32,
    /// Lemire's fast-modulo multiplier for `size`: a slot index costs two
    /// multiplications instead of a division.
    magic: u64,
}

impl CountWindow {
    fn new(size: u32) -> Self {
        let words = size.div_ceil(64) as usize;
        let bits = || (0..words).map(|_| AtomicU64::new(0)).collect();
        Self {
            cursor: Padded(AtomicU64::new(0)),
            failures: Padded(AtomicU32::new(0)),
            slow: AtomicU32::new(0),
            failed_bits: bits(),
            slow_bits: bits(),
            size,
            magic: (u64::MAX / u64::from(size)).wrapping_add(1),
        }
    }

    #[inline]
    #[allow(clippy::cast_possible_truncation)] // the slot index wraps at 2^32 calls, see below
    fn slot(&self, call: u64) -> u32 {
        // `call mod size` for the low 32 bits of the call number: at the 2^32 wrap
        // one slot is reused early, once every four billion calls.
        let low = self.magic.wrapping_mul(u64::from(call as u32));
        ((u128::from(low) * u128::from(self.size)) >> 64) as u32
    }

    /// Whether recording this call would change nothing: a success in a full
    /// window that holds no failure and no slow call. Every slot already says
    /// "success", so which one it would overwrite does not matter, and a
    /// failure recorded later leaves the window after the same number of calls
    /// either way. Skipping it keeps a healthy breaker's calls from all
    /// writing the cursor's line.
    #[inline]
    fn unchanged_by(&self, failed: bool, slow: bool) -> bool {
        !failed
            && !slow
            && self.failures.0.load(Relaxed) == 0
            && self.slow.load(Relaxed) == 0
            && self.cursor.0.load(Relaxed) >= u64::from(self.size)
    }

    #[inline]
    fn record(&self, failed: bool, slow: bool) -> Tally {
        let call = self.cursor.0.fetch_add(1, Relaxed);
        let slot = self.slot(call);
        let (word, mask) = ((slot / 64) as usize, 1u64 << (slot % 64));
        flip(&self.failed_bits[word], mask, failed, &self.failures.0);
        flip(&self.slow_bits[word], mask, slow, &self.slow);
        self.tally_after(call + 1)
    }

    fn tally(&self) -> Tally {
        self.tally_after(self.cursor.0.load(Relaxed))
    }

    /// The totals once `calls` calls were recorded, clamped as the module docs
    /// say.
    fn tally_after(&self, calls: u64) -> Tally {
        let calls = calls.min(u64::from(self.size));
        let clamp = |total: &AtomicU32| u64::from(signed(total.load(Relaxed))).min(calls);
        Tally {
            calls,
            failures: clamp(&self.failures.0),
            slow: clamp(&self.slow),
        }
    }

    fn clear(&self) {
        self.cursor.0.store(0, Relaxed);
        for (bits, total) in [
            (&self.failed_bits, &self.failures.0),
            (&self.slow_bits, &self.slow),
        ] {
            for word in bits.iter() {
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

#[derive(Debug, Default)]
struct Bucket {
    /// Which period of `width` nanoseconds this bucket counts, plus one (0 = empty).
    epoch: AtomicU64,
    calls: AtomicU64,
    failures: AtomicU64,
    slow: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    width: u64,
}

impl TimeWindow {
    fn new(length: u64) -> Self {
        Self {
            buckets: (0..TIME_BUCKETS).map(|_| Bucket::default()).collect(),
            width: (length / u64::from(TIME_BUCKETS)).max(1),
        }
    }

    fn bucket(&self, epoch: u64) -> &Bucket {
        #[allow(clippy::cast_possible_truncation)] // the remainder is below TIME_BUCKETS
        let index = (epoch % u64::from(TIME_BUCKETS)) as usize;
        &self.buckets[index]
    }

    /// The period of `width` nanoseconds that `now` falls in, kept one below
    /// `u64::MAX` so that its tag (`epoch + 1`) exists.
    fn epoch(&self, now: u64) -> u64 {
        (now / self.width).min(u64::MAX - 1)
    }

    fn record(&self, failed: bool, slow: bool, now: u64) -> Tally {
        let epoch = self.epoch(now);
        let bucket = self.bucket(epoch);
        let tag = epoch + 1;
        let seen = bucket.epoch.load(Relaxed);
        if seen < tag
            && bucket
                .epoch
                .compare_exchange(seen, tag, Relaxed, Relaxed)
                .is_ok()
        {
            bucket.calls.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
        }
        bucket.calls.fetch_add(1, Relaxed);
        if failed {
            bucket.failures.fetch_add(1, Relaxed);
        }
        if slow {
            bucket.slow.fetch_add(1, Relaxed);
        }
        self.tally(epoch)
    }

    fn tally(&self, epoch: u64) -> Tally {
        let oldest = (epoch + 1).saturating_sub(u64::from(TIME_BUCKETS) - 1);
        let mut tally = Tally::default();
        for bucket in &*self.buckets {
            let tag = bucket.epoch.load(Relaxed);
            if tag >= oldest && tag <= epoch + 1 {
                tally.calls = tally.calls.saturating_add(bucket.calls.load(Relaxed));
                tally.failures = tally.failures.saturating_add(bucket.failures.load(Relaxed));
                tally.slow = tally.slow.saturating_add(bucket.slow.load(Relaxed));
            }
        }
        tally
    }

    fn clear(&self) {
        for bucket in &*self.buckets {
            bucket.epoch.store(0, Relaxed);
            bucket.calls.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_window_slides() {
        let w = CountWindow::new(10);
        for _ in 0..1000 {
            w.record(false, false);
        }
        for i in 1..=10 {
            let t = w.record(true, false);
            assert_eq!(
                t,
                Tally {
                    calls: 10,
                    failures: i,
                    slow: 0
                }
            );
        }
        let t = w.record(false, true);
        assert_eq!(
            t,
            Tally {
                calls: 10,
                failures: 9,
                slow: 1
            }
        );
    }

    #[test]
    fn fast_modulo_matches_division() {
        for size in [1, 2, 3, 7, 10, 64, 100, 1000, 65_537, 1 << 20] {
            let w = CountWindow::new(size);
            for call in (0..5000u64).chain([u64::from(u32::MAX) - 3, u64::from(u32::MAX)]) {
                assert_eq!(
                    u64::from(w.slot(call)),
                    (call & 0xFFFF_FFFF) % u64::from(size)
                );
            }
        }
    }

    #[test]
    fn time_window_forgets_old_buckets() {
        let w = TimeWindow::new(20_000); // 20 buckets of 1000 ns
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
        let w = CountWindow::new(100);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let (w, stop) = (&w, &stop);
                s.spawn(move || {
                    let mut i = t;
                    while !stop.load(Relaxed) {
                        i = i.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        let t = w.record(i >> 62 == 0, i >> 61 & 1 == 0);
                        assert!(t.failures <= t.calls && t.slow <= t.calls, "{t:?}");
                    }
                });
            }
            for _ in 0..20_000 {
                w.clear();
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
        assert_eq!(w.failures.0.load(Relaxed), popcount(&w.failed_bits));
        assert_eq!(w.slow.load(Relaxed), popcount(&w.slow_bits));
        // A full window of successes leaves nothing behind, without wrapping.
        for _ in 0..100 {
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

    #[test]
    fn time_window_counts_past_u32() {
        let w = TimeWindow::new(3_600_000_000_000); // an hour
        let bucket = w.bucket(0);
        bucket.epoch.store(1, Relaxed);
        bucket.calls.store(u64::from(u32::MAX), Relaxed);
        for _ in 0..64 {
            w.record(false, false, 0);
        }
        let t = w.record(true, false, 0);
        assert_eq!(t.calls, u64::from(u32::MAX) + 65);
        assert_eq!(t.failures, 1);
    }

    #[test]
    fn time_window_at_the_end_of_time() {
        let w = TimeWindow::new(20); // buckets of 1 ns
        w.record(true, false, u64::MAX - 1);
        let t = w.record(true, false, u64::MAX);
        assert_eq!((t.calls, t.failures), (2, 2));
        assert_eq!(Window::Time(w).tally(u64::MAX).failures, 2);
    }
}
