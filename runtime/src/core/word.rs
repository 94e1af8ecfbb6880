//! The state word: a breaker's whole state in one `u64`, so that every
//! transition is one compare-and-swap and every decision is taken on one
//! consistent reading.
//!
//! ```text
//!            63 62 | 61 60 | 59 ............................................. 0
//! Closed      tag  | mode  | generation (36)          | consecutive failures (24)
//! HalfOpen    tag  | mode  | generation (36)          | round 8 | in flight 8 | successes 8
//! Open        tag  | mode  | deadline: nanoseconds on the breaker's clock (60)
//! ```
//!
//! - `tag`: Closed, Open or HalfOpen. `mode`: normal, forced open, forced closed
//!   or disabled (manual control).
//! - `generation`: a fresh number for every Closed and HalfOpen period, taken
//!   from the breaker's generation counter. A [`Permit`](crate::Permit)
//!   remembers the word it was admitted under; its outcome only counts while the
//!   breaker is still in that generation. Only 36 bits are in the word, so the
//!   permit also keeps the counter's value at admission: a permit whose
//!   generation was followed by 2^36 others is recognised as stale even though
//!   its 36 bits match again.
//! - In Open, the word holds the deadline itself: deciding to reject, and
//!   deciding that the deadline has passed, both read the word and nothing
//!   else, so no reader can pair a state with a deadline that belongs to
//!   another one. Deadlines saturate at 2^60 − 1 ns (36 years after the clock's
//!   origin).
//! - `round`: half-open trial rounds of one generation. A trial permit unresolved
//!   past its lease is presumed lost, and a new round frees the slots; late
//!   successes and neutrals of an earlier round are ignored, late failures still
//!   reopen the breaker. A generation numbers at most 256 rounds (0 to
//!   [`MAX_ROUND`]): the round after that takes a fresh generation, so a round
//!   number is never given twice within a generation, and a permit of an
//!   earlier generation is stale whatever it reports (its failure included).

pub(crate) const TAG_CLOSED: u64 = 0;
pub(crate) const TAG_OPEN: u64 = 1;
pub(crate) const TAG_HALF_OPEN: u64 = 2;
pub(crate) const MODE_NORMAL: u64 = 0;
pub(crate) const MODE_FORCED_OPEN: u64 = 1;
pub(crate) const MODE_FORCED_CLOSED: u64 = 2;
pub(crate) const MODE_DISABLED: u64 = 3;

const TAG_SHIFT: u32 = 62;
const MODE_SHIFT: u32 = 60;
const GEN_SHIFT: u32 = 24;
/// Bits of the generation kept in the word.
pub(crate) const GEN_BITS: u32 = 36;
pub(crate) const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const PAYLOAD_MASK: u64 = (1 << GEN_SHIFT) - 1;
/// The mode bits, which a permit does not need to remember.
pub(crate) const MODE_BITS: u64 = 3 << MODE_SHIFT;
/// The latest deadline an Open word can hold.
pub(crate) const MAX_DEADLINE: u64 = (1 << MODE_SHIFT) - 1;
/// The bits that must be zero for the fast path: Closed, Normal.
pub(crate) const CONTROL_BITS: u64 = !((1 << MODE_SHIFT) - 1);
/// Largest consecutive-failure threshold the word can count to.
pub(crate) const MAX_THRESHOLD: u32 = (1 << GEN_SHIFT) - 1;
/// Largest `trial_calls` and `success_threshold`.
pub(crate) const MAX_TRIALS: u32 = 0xFF;
/// The last trial round a generation numbers; the next round takes a fresh
/// generation.
pub(crate) const MAX_ROUND: u32 = 0xFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

impl Word {
    pub(crate) const fn closed(mode: u64, generation: u64, failures: u32) -> Self {
        Word(
            (TAG_CLOSED << TAG_SHIFT)
                | (mode << MODE_SHIFT)
                | ((generation & GEN_MASK) << GEN_SHIFT)
                | (failures as u64 & PAYLOAD_MASK),
        )
    }

    pub(crate) const fn half_open(
        mode: u64,
        generation: u64,
        round: u32,
        in_flight: u32,
        successes: u32,
    ) -> Self {
        Word(
            (TAG_HALF_OPEN << TAG_SHIFT)
                | (mode << MODE_SHIFT)
                | ((generation & GEN_MASK) << GEN_SHIFT)
                | Self::trials(round, in_flight, successes),
        )
    }

    pub(crate) const fn open(mode: u64, deadline: u64) -> Self {
        let deadline = if deadline > MAX_DEADLINE {
            MAX_DEADLINE
        } else {
            deadline
        };
        Word((TAG_OPEN << TAG_SHIFT) | (mode << MODE_SHIFT) | deadline)
    }

    const fn trials(round: u32, in_flight: u32, successes: u32) -> u64 {
        (((round & 0xFF) << 16) | ((in_flight & 0xFF) << 8) | (successes & 0xFF)) as u64
    }

    pub(crate) const fn tag(self) -> u64 {
        self.0 >> TAG_SHIFT
    }

    pub(crate) const fn mode(self) -> u64 {
        (self.0 >> MODE_SHIFT) & 3
    }

    /// The generation's low 36 bits (Closed and HalfOpen).
    pub(crate) const fn generation(self) -> u64 {
        (self.0 >> GEN_SHIFT) & GEN_MASK
    }

    /// Consecutive failures (Closed).
    #[allow(clippy::cast_possible_truncation)] // 24 bits
    pub(crate) const fn payload(self) -> u32 {
        (self.0 & PAYLOAD_MASK) as u32
    }

    pub(crate) const fn round(self) -> u32 {
        (self.payload() >> 16) & 0xFF
    }

    pub(crate) const fn in_flight(self) -> u32 {
        (self.payload() >> 8) & 0xFF
    }

    pub(crate) const fn successes(self) -> u32 {
        self.payload() & 0xFF
    }

    /// The open deadline (Open).
    pub(crate) const fn deadline(self) -> u64 {
        self.0 & MAX_DEADLINE
    }

    /// Same tag, mode and generation, another payload.
    pub(crate) const fn with_payload(self, payload: u32) -> Self {
        Word((self.0 & !PAYLOAD_MASK) | (payload as u64 & PAYLOAD_MASK))
    }

    /// Same tag, mode and generation, other trial counts.
    #[allow(clippy::cast_possible_truncation)] // 24 bits
    pub(crate) const fn with_trials(self, round: u32, in_flight: u32, successes: u32) -> Self {
        self.with_payload(Self::trials(round, in_flight, successes) as u32)
    }

    /// Whether `self` is in the same state period as `admitted`: same tag and
    /// generation (the payload and mode may have moved).
    pub(crate) const fn same_period(self, admitted: Word) -> bool {
        self.tag() == admitted.tag() && self.generation() == admitted.generation()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let w = Word::half_open(MODE_DISABLED, GEN_MASK + 7, 255, 254, 253);
        assert_eq!(
            (
                w.tag(),
                w.mode(),
                w.generation(),
                w.round(),
                w.in_flight(),
                w.successes()
            ),
            (TAG_HALF_OPEN, MODE_DISABLED, 6, 255, 254, 253)
        );
        let c = Word::closed(MODE_NORMAL, 5, MAX_THRESHOLD);
        assert_eq!(
            (c.tag(), c.generation(), c.payload()),
            (TAG_CLOSED, 5, MAX_THRESHOLD)
        );
        assert_eq!(c.0 & CONTROL_BITS, 0);
        let o = Word::open(MODE_FORCED_OPEN, u64::MAX);
        assert_eq!(
            (o.tag(), o.mode(), o.deadline()),
            (TAG_OPEN, MODE_FORCED_OPEN, MAX_DEADLINE)
        );
        assert_eq!(Word::open(MODE_NORMAL, 12_345).deadline(), 12_345);
        let moved = w.with_trials(1, 2, 3);
        assert!(moved.same_period(w));
        assert_eq!(
            (moved.round(), moved.in_flight(), moved.successes()),
            (1, 2, 3)
        );
        assert_eq!(moved.mode(), MODE_DISABLED);
    }
}
