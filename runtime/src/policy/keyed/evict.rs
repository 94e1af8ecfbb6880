//! Room in a full family: the stored members and the sampler that picks
//! the one a new key evicts, the members retired until their last lease
//! is dropped, and the overflow member of the keys without room.

use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::key::OVERFLOW;
use super::members::Member;
use super::{Bounds, Inner, OBSERVERS, Seen};

/// How many members a full family samples to pick the one a new key evicts.
pub(crate) const SAMPLE: usize = 8;

/// Where a new key goes in the family.
pub(super) enum Room {
    /// Below `max_keys`.
    Free,
    /// In place of the member in this slot.
    Evict(usize),
}

/// The fewest retired members worth a look for ones to free.
pub(super) const RECLAIM_FLOOR: usize = 16;

/// How long new keys go to the overflow member without another sweep after
/// a sweep found no member to evict.
pub(super) const FULL_PAUSE: u64 = 1_000_000_000;

/// The stored members in a dense array, the eviction sampler's state and
/// the evicted members not yet freed; guarded by the insertion lock.
pub(super) struct Slots<K> {
    /// Every stored key and its member (the map holds the same ones).
    pub(super) stored: Vec<(K, Arc<Member>)>,
    /// Evicted members a lease or the map may still reach.
    pub(super) retired: Vec<Arc<Member>>,
    /// Where the sweep for an evictable member resumes when no sampled
    /// member can be evicted.
    pub(super) hand: usize,
    /// xorshift64 state picking the sampled slots.
    pub(super) random: u64,
    /// Until this time (on the family's clock) after a sweep found no
    /// member to evict, new keys go to the overflow member without another
    /// sweep; 0 when the last search found a victim.
    pub(super) full_until: u64,
    /// `retired`'s length at which the next insertion looks for members to
    /// free: twice what the last look left, so each insertion costs O(1)
    /// amortised however many retired members are still leased.
    pub(super) reclaim_at: usize,
}

impl<K> Slots<K> {
    fn next_random(&mut self) -> u64 {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        x
    }
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Inner<K> {
    /// The member every key the family has no room for runs through.
    pub(super) fn overflow(&self) -> &Arc<Member> {
        self.overflow
            .get_or_init(|| Arc::new(self.member(format!("{}[{OVERFLOW}]", self.config.name), 0)))
    }

    /// Whether the member in `slot` may be evicted: no call runs through
    /// it (no lease out: the attribute's, a tower layer's, the reqwest
    /// middleware's), and its breaker may be forgotten (see
    /// `Breaker::forgettable`).
    pub(super) fn evictable(&self, slot: &(K, Arc<Member>)) -> bool {
        let member = &slot.1;
        member.unleased()
            && member.breaker.forgettable(self.config.lease())
            && !self.tuned_alone(member)
    }

    /// Whether `member`'s settings were changed by its own name: it is
    /// kept, so the change is not lost with it.
    pub(super) fn tuned_alone(&self, member: &Member) -> bool {
        member.breaker.config().fingerprint() != self.current_config().fingerprint()
    }

    /// The slot of the member to evict from a full family: the least
    /// recently used evictable member among [`SAMPLE`] slots picked at
    /// random (all of them in a family of at most `SAMPLE`); when none of
    /// those is, the first evictable member the sweeping hand reaches;
    /// `None` when no member may be evicted, and then, for
    /// [`FULL_PAUSE`], without sweeping again.
    pub(super) fn victim(&self, slots: &mut Slots<K>) -> Option<usize> {
        let len = slots.stored.len();
        if slots.full_until != 0 && !self.clock.reached(slots.full_until) {
            return None;
        }
        let used = |slots: &Slots<K>, i: usize| slots.stored[i].1.used.load(Ordering::Relaxed);
        let mut victim: Option<(usize, u64)> = None;
        for n in 0..SAMPLE.min(len) {
            let i = if len <= SAMPLE {
                n
            } else {
                // The modulo's bias is below one in 2^40 for any `max_keys`
                // a family can hold.
                (slots.next_random() % len as u64) as usize
            };
            // A member's state is read only when it would be the oldest so
            // far: its breaker's cache line is left alone otherwise.
            let stamp = used(slots, i);
            if victim.is_none_or(|(_, oldest)| stamp < oldest) && self.evictable(&slots.stored[i]) {
                victim = Some((i, stamp));
            }
        }
        let found = victim.map(|(i, _)| i).or_else(|| {
            let start = slots.hand;
            let found = (0..len)
                .map(|n| (start + n) % len)
                .find(|&i| self.evictable(&slots.stored[i]));
            if let Some(i) = found {
                slots.hand = (i + 1) % len;
            }
            found
        });
        if found.is_some() {
            slots.full_until = 0;
        } else {
            if slots.full_until == 0 {
                self.report_full();
            }
            slots.full_until = self.clock.now().saturating_add(FULL_PAUSE).max(1);
        }
        found
    }

    /// The slot of a member to evict (see [`victim`](Self::victim)), marked
    /// retired, so that no lease of it is taken from now on. A member a
    /// call took a lease of since it was picked is kept, and another one
    /// picked, once.
    pub(super) fn retire_victim(&self, slots: &mut Slots<K>) -> Option<usize> {
        for _ in 0..2 {
            let victim = self.victim(slots)?;
            if slots.stored[victim].1.retire() {
                return Some(victim);
            }
        }
        None
    }

    /// Takes the member `old`, stored under `old_key` and just taken out of
    /// its slot, out of the map, the labels and the budget (Open or
    /// HalfOpen, it gives its place back), and keeps it among the retired
    /// until its last lease is dropped.
    pub(super) fn forget(&self, slots: &mut Slots<K>, old_key: &K, old: &Arc<Member>) {
        self.map.remove_sync(old_key);
        self.labels.remove_sync(self.label_of(old));
        old.leave_budget();
        slots.retired.push(Arc::clone(old));
        self.counters.evicted.fetch_add(1, Ordering::Relaxed);
    }

    /// Evicts members, as a new key would, while more are stored than
    /// `max_keys` (lowered since they were): as many as may be evicted
    /// (see [`victim`](Self::victim)); those that may not stay until they
    /// may, when a new key finds them. The members evicted, to report once
    /// the insertion lock is let go. One load and a comparison while the
    /// family is within its bound.
    pub(super) fn shrink(&self, slots: &mut Slots<K>) -> Vec<Arc<Member>> {
        let mut evicted = Vec::new();
        while slots.stored.len() > self.max_keys.load(Ordering::Relaxed) {
            let Some(victim) = self.retire_victim(slots) else {
                break;
            };
            let (old_key, old) = slots.stored.swap_remove(victim);
            self.forget(slots, &old_key, &old);
            evicted.push(old);
        }
        evicted
    }

    /// Puts `bounds` in force, under the insertion lock: the budget's
    /// percentage from the next trip, `max_keys` from the next insertion
    /// (or [`shrink`](Self::shrink)).
    pub(super) fn bound(&self, slots: &mut Slots<K>, bounds: Bounds) {
        self.budget.set_percent(bounds.max_ejection_percent);
        self.max_keys.store(bounds.max_keys, Ordering::Relaxed);
        // A sweep that found the family full was for the bound before.
        slots.full_until = 0;
    }

    /// [`shrink`](Self::shrink) at once, after a change of the bounds:
    /// without the pause a sweep that found no member to evict takes.
    pub(super) fn shrink_now(&self) -> Vec<Arc<Member>> {
        let mut slots = self.lock();
        slots.full_until = 0;
        self.shrink(&mut slots)
    }

    /// Reports each of `evicted` (see [`evicted`](Self::evicted)), with
    /// the insertion lock let go.
    pub(super) fn report_evicted(&self, evicted: impl IntoIterator<Item = Arc<Member>>) {
        for member in evicted {
            self.evicted(&member);
        }
    }

    /// A member just evicted: with the `metrics` feature, its calls since
    /// its last report reach the counters of its name (see
    /// [`metrics`](crate::ops::metrics#keyed-families)), when the family is
    /// registered or the member was reported before. No lease of it is
    /// out, so its totals are final.
    pub(super) fn evicted(&self, member: &Member) {
        let registered = self.registered.load(Ordering::Relaxed);
        for observe in OBSERVERS {
            observe(Seen::Evicted(&member.breaker, registered));
        }
    }

    /// The family has just become full of members it may not evict: said
    /// once until a victim is found again, not once per call.
    pub(super) fn report_full(&self) {
        #[cfg(feature = "tracing")]
        ::tracing::warn!(
            target: "failfast",
            family = %self.config.name,
            max_keys = self.max_keys.load(Ordering::Relaxed),
            "family `{}` is full of breakers it may not evict (open, half-open or in use): \
             new keys share its overflow breaker `{}[{OVERFLOW}]` until room frees up",
            self.config.name,
            self.config.name,
        );
    }

    /// Lets go of the evicted members whose every lease was dropped: no
    /// lease can be taken of a retired member (see [`Lease::take`]). The
    /// map may still hold a copy for a while (until the epoch guards that
    /// could have found it end); the member is freed with the last. Looks
    /// only once the list has doubled since the last look, so an insertion
    /// costs O(1) amortised.
    pub(super) fn reclaim(&self, slots: &mut Slots<K>) {
        if slots.retired.len() < slots.reclaim_at {
            return;
        }
        slots.retired.retain(|member| !member.unleased());
        slots.reclaim_at = (slots.retired.len() * 2).max(RECLAIM_FLOOR);
    }
}

/// The stored members, then the overflow member once made.
pub(super) fn listed<'s, K>(
    slots: &'s Slots<K>,
    overflow: Option<&'s Arc<Member>>,
) -> impl Iterator<Item = Arc<Member>> + 's {
    slots
        .stored
        .iter()
        .map(|(_, m)| m)
        .chain(overflow)
        .map(Arc::clone)
}

#[cfg(test)]
mod tests {
    use super::super::Family;
    use super::*;

    fn slots(seed: u64) -> Slots<u8> {
        Slots {
            stored: Vec::new(),
            retired: Vec::new(),
            hand: 0,
            random: seed,
            full_until: 0,
            reclaim_at: RECLAIM_FLOOR,
        }
    }

    /// The sampled slots are drawn by Marsaglia's xorshift64 (shifts 13,
    /// 7, 17): from the seed of his paper ("Xorshift RNGs", 2003), its
    /// published first outputs; and from any seed, draws spread over the
    /// slots (a generator stuck at zero lands on one slot for good).
    #[test]
    fn the_draws_are_xorshift64s_and_spread_over_the_slots() {
        let mut paper = slots(88_172_645_463_325_252);
        let drawn: Vec<u64> = (0..3).map(|_| paper.next_random()).collect();
        assert_eq!(
            drawn,
            [
                8_748_534_153_485_358_512,
                3_040_900_993_826_735_515,
                3_453_997_556_048_239_312
            ]
        );
        for seed in [1, 0x9E37_79B9_7F4A_7C15, u64::MAX] {
            let mut slots = slots(seed);
            let mut hits = [0_u32; 64];
            for _ in 0..64 * 64 {
                hits[(slots.next_random() % 64) as usize] += 1;
            }
            assert!(hits.iter().all(|&h| h > 0), "seed {seed}: {hits:?}");
        }
    }

    /// When none of the sampled members may be evicted, the hand sweeps on
    /// from the slot after the last one it evicted, not from the first.
    #[test]
    fn the_hand_sweeps_on_from_where_it_stopped() {
        let family: Family<u8> =
            Family::builder(crate::Breaker::builder().name("evict.hand").max_keys(16))
                .build()
                .unwrap();
        for key in 0..16_u8 {
            let member = family.get(&key);
            if key != 3 && key != 12 {
                member.set_mode(crate::Mode::ForcedOpen);
            }
        }
        // A seed whose next two samples miss the two evictable slots, 3
        // and 12, which the hand alone then finds.
        let seed = (1..)
            .find(|&seed| {
                let mut draws = slots(seed);
                (0..2 * SAMPLE).all(|_| ![3, 12].contains(&(draws.next_random() % 16)))
            })
            .unwrap();
        family.inner.lock().random = seed;
        let stored = || -> Vec<u8> { family.inner.lock().stored.iter().map(|(k, _)| *k).collect() };
        family.get(&16_u8);
        assert_eq!(stored()[3], 16, "slot 3 evicted first");
        family.get(&17_u8);
        let stored = stored();
        assert_eq!(stored[12], 17, "then slot 12, after the hand: {stored:?}");
        assert_eq!(stored[3], 16, "{stored:?}");
    }

    /// A family of one key: each new key evicts the one before it.
    fn one_key(name: &'static str) -> Family<u32> {
        Family::builder(crate::Breaker::builder().name(name).max_keys(1))
            .build()
            .unwrap()
    }

    /// Evicted members are let go in one sweep once the list of them has
    /// reached its floor (then twice what the last sweep kept), not looked
    /// over at each insertion: an insertion costs O(1) amortised.
    #[test]
    fn evicted_members_are_let_go_once_their_list_has_grown() {
        let family = one_key("evict.reclaim");
        let retired = || family.inner.lock().retired.len();
        // Each new key evicts the one before it, unleased.
        for key in 0..=RECLAIM_FLOOR as u32 {
            drop(family.get(&key));
            assert_eq!(retired(), key as usize, "after key {key}");
        }
        // The insertion that finds the floor reached sweeps them all.
        drop(family.get(&(RECLAIM_FLOOR as u32 + 1)));
        assert_eq!(retired(), 1);
    }

    /// A sweep keeps the evicted members a lease is still being taken of
    /// (it counts itself before it reads that the member is evicted, and
    /// then lets go), and the next sweep waits until the list has doubled
    /// from what it kept, so that members held longer are not looked over
    /// at every insertion.
    #[test]
    fn a_sweep_keeps_members_still_leased_and_the_next_waits_for_twice_as_many() {
        let family = one_key("evict.held");
        let retired = || family.inner.lock().retired.len();
        let floor = RECLAIM_FLOOR as u32;
        for key in 0..=floor {
            drop(family.get(&key));
        }
        // Ten of the sixteen evicted have a lease counted, as a `take`
        // that has not yet read the mark has.
        let held: Vec<Arc<Member>> = family.inner.lock().retired[..10].to_vec();
        for member in &held {
            member.leases.count(0);
        }
        drop(family.get(&(floor + 1)));
        assert_eq!(retired(), 11, "the ten kept, and the key just evicted");
        // The next sweep comes at 20, twice the ten kept, not at the floor.
        for (key, len) in (floor + 2..).zip(12..=20) {
            drop(family.get(&key));
            assert_eq!(retired(), len, "after key {key}");
        }
        for member in &held {
            member.leases.release(0);
        }
        drop(family.get(&(floor + 11)));
        assert_eq!(retired(), 1);
    }
}
