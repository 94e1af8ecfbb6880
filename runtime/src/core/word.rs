//! The state word, and the two words a permit keeps: every bit layout laid
//! over a breaker's state, in one place, behind typed accessors. Nothing
//! outside this module reads or writes their bits.
//!
//! A breaker's whole state is one `u64` ([`Word`]), so that every transition
//! is one compare-and-swap and every decision is taken on one consistent
//! reading. A [`Permit`](crate::Permit) keeps the word it was admitted under,
//! with its mode bits and some low payload bits put to the permit's own use
//! ([`Admitted`]), and when its call started ([`Started`]):
//!
//! ```text
//!                 63 62 | 61     60      | 59 .................................... 0
//! Word (the breaker's state)
//!   Closed        tag   | mode           | generation (36)  | consecutive failures (24)
//!   HalfOpen      tag   | mode           | generation (36)  | round 8 | in flight 8 | successes 8
//!   Open          tag   | mode           | deadline: nanoseconds on the breaker's clock (60)
//!
//! Admitted (a permit's word: Closed or HalfOpen, as admitted)
//!   Closed        tag   | PLACED TRACKED | generation (36)  | payload 8  | epoch (16)
//!   HalfOpen      tag   | PLACED TRACKED | generation (36)  | round 8    | epoch (16)
//!   PASSIVE       1  1  | 1      1       | 1 ............................................. 1
//!   OBSERVED      1  1  | 1      1       | 1 ........................................... 1 0
//!
//!                 63    | 62      | 61 .................................................... 0
//! Started (a permit's other word)
//!                 TIMED | CLOCKED | when the call started (breaker's clock), or the generation counter
//! ```
//!
//! The word:
//!
//! - `tag` ([`Tag`]): Closed, Open or HalfOpen. `mode` ([`Mode`]): normal,
//!   forced open, forced closed or observe only (manual control).
//! - `generation`: a fresh number for every Closed and HalfOpen period, taken
//!   from the breaker's generation counter. A [`Permit`](crate::Permit)
//!   remembers the word it was admitted under; its outcome only counts while the
//!   breaker is still in that generation. Only 36 bits are in the word, so the
//!   permit also keeps bits 36..52 of the counter's value at admission (its
//!   `epoch`): a permit whose generation was followed by 2^36 others is
//!   recognised as stale even though its 36 bits match again.
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
//!
//! A permit's `Admitted` word is the word it was admitted under (never Open),
//! its mode bits cleared (the permit does not need them) and used instead as:
//!
//! - `TRACKED`: the protected body's polls are watched for panics (see
//!   `core::body`), so a panic while dropping the permit is someone else's.
//! - `PLACED`: the call holds a place of the adaptive limit (`limit` module),
//!   given back when the permit is resolved; or, without an adaptive limit, it
//!   is timed for graded shedding (`TIMED`), and giving back its place does
//!   nothing. Either way it takes the call off `finish`'s fast path, which
//!   looks at bits 61..64 at once: all zero is Closed and unplaced.
//! - `epoch`: bits 36..52 of the admitted generation, in the low 16 bits of the
//!   payload (failures or trial counts, which the permit does not need). With
//!   the slow-call rule or an adaptive limit it is stamped at admission;
//!   without either, `Started` holds the generation counter as read, and the
//!   epoch is worked out from it when the outcome is recorded (the arithmetic
//!   waits for a write). The round, bits 16..24, stays: a late trial's round
//!   is compared with the word's.
//! - The sentinels: `PASSIVE`, a permit whose outcome is not recorded (forced
//!   closed) or already was; `OBSERVED`, a call an observe-only breaker would
//!   have refused, counted in the totals and moving nothing. Both have every
//!   flag set and a tag no admitted call has (3).
//!
//! A permit's `Started` word holds when the call started, with the slow-call
//! rule or an adaptive limit, or for a call timed for graded shedding
//! (`TIMED`, then on the coarse clock when the breaker times nothing else);
//! without any of them, the generation counter at admission, unless call
//! durations are recorded (`CLOCKED`, the `durations` module of the breaker):
//! then the precise clock at admission, the epoch stamped in the admitted
//! word and `PLACED` set, as for a call timed for graded shedding. Neither a
//! clock reading nor a generation counter reaches bit 62.

use crate::core::config::Mode;

// The word's fields.
const TAG_SHIFT: u32 = 62;
const MODE_SHIFT: u32 = 60;
const GEN_SHIFT: u32 = 24;
const TAG_CLOSED: u64 = 0;
const TAG_OPEN: u64 = 1;
const TAG_HALF_OPEN: u64 = 2;
const MODE_NORMAL: u64 = 0;
const MODE_FORCED_OPEN: u64 = 1;
const MODE_FORCED_CLOSED: u64 = 2;
const MODE_OBSERVE_ONLY: u64 = 3;
/// Bits of the generation kept in the word.
const GEN_BITS: u32 = 36;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const PAYLOAD_MASK: u64 = (1 << GEN_SHIFT) - 1;
/// The mode bits, which a permit does not need to remember.
const MODE_BITS: u64 = 3 << MODE_SHIFT;
/// The bits that must be zero for the fast path: Closed, Normal.
const CONTROL_BITS: u64 = !((1 << MODE_SHIFT) - 1);

// The permit's words.
const TRACKED: u64 = 1 << 60;
const PLACED: u64 = 1 << 61;
/// Bits of the generation an admitted word's epoch holds, above `GEN_BITS`.
const EPOCH_BITS: u32 = 16;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const TIMED: u64 = 1 << 63;
const CLOCKED: u64 = 1 << 62;

/// The latest deadline an Open word can hold.
pub(crate) const MAX_DEADLINE: u64 = (1 << MODE_SHIFT) - 1;
/// Largest consecutive-failure threshold the word can count to.
pub(crate) const MAX_THRESHOLD: u32 = (1 << GEN_SHIFT) - 1;
/// Largest `trial_calls` and `success_threshold`.
pub(crate) const MAX_TRIALS: u32 = 0xFF;
/// The last trial round a generation numbers; the next round takes a fresh
/// generation.
pub(crate) const MAX_ROUND: u32 = 0xFF;

// The word holds the largest counts a breaker accepts.
const _: () = assert!(
    MAX_THRESHOLD == crate::core::config::MAX_THRESHOLD
        && MAX_TRIALS == crate::core::config::MAX_TRIALS
);

/// Which state a word is in: its two top bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    Closed,
    Open,
    HalfOpen,
}

/// The mode's bits in the word.
#[inline]
const fn mode_bits(mode: Mode) -> u64 {
    match mode {
        Mode::Normal => MODE_NORMAL,
        Mode::ForcedOpen => MODE_FORCED_OPEN,
        Mode::ForcedClosed => MODE_FORCED_CLOSED,
        Mode::ObserveOnly => MODE_OBSERVE_ONLY,
    }
}

/// A breaker's state word (layout in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    /// The word whose bits are `bits`, as the breaker's atomic holds it.
    #[inline(always)]
    pub(crate) const fn from_bits(bits: u64) -> Self {
        Word(bits)
    }

    /// The word's bits, for the breaker's atomic.
    #[inline(always)]
    pub(crate) const fn bits(self) -> u64 {
        self.0
    }

    #[inline]
    pub(crate) const fn closed(mode: Mode, generation: u64, failures: u32) -> Self {
        Word(
            (TAG_CLOSED << TAG_SHIFT)
                | (mode_bits(mode) << MODE_SHIFT)
                | ((generation & GEN_MASK) << GEN_SHIFT)
                | (failures as u64 & PAYLOAD_MASK),
        )
    }

    #[inline]
    pub(crate) const fn half_open(
        mode: Mode,
        generation: u64,
        round: u32,
        in_flight: u32,
        successes: u32,
    ) -> Self {
        Word(
            (TAG_HALF_OPEN << TAG_SHIFT)
                | (mode_bits(mode) << MODE_SHIFT)
                | ((generation & GEN_MASK) << GEN_SHIFT)
                | Self::trials(round, in_flight, successes),
        )
    }

    /// Open until `deadline`, saturated at [`MAX_DEADLINE`].
    #[inline]
    pub(crate) const fn open(mode: Mode, deadline: u64) -> Self {
        let deadline = if deadline > MAX_DEADLINE {
            MAX_DEADLINE
        } else {
            deadline
        };
        Word((TAG_OPEN << TAG_SHIFT) | (mode_bits(mode) << MODE_SHIFT) | deadline)
    }

    #[inline]
    const fn trials(round: u32, in_flight: u32, successes: u32) -> u64 {
        (((round & 0xFF) << 16) | ((in_flight & 0xFF) << 8) | (successes & 0xFF)) as u64
    }

    #[inline(always)]
    pub(crate) const fn tag(self) -> Tag {
        match self.0 >> TAG_SHIFT {
            TAG_CLOSED => Tag::Closed,
            TAG_OPEN => Tag::Open,
            _ => Tag::HalfOpen,
        }
    }

    #[inline(always)]
    pub(crate) const fn mode(self) -> Mode {
        match (self.0 >> MODE_SHIFT) & 3 {
            MODE_NORMAL => Mode::Normal,
            MODE_FORCED_OPEN => Mode::ForcedOpen,
            MODE_FORCED_CLOSED => Mode::ForcedClosed,
            _ => Mode::ObserveOnly,
        }
    }

    /// Closed and normal: the fast path's one test.
    #[inline(always)]
    pub(crate) const fn closed_normally(self) -> bool {
        self.0 & CONTROL_BITS == 0
    }

    /// The generation's low 36 bits (Closed and HalfOpen).
    #[inline(always)]
    pub(crate) const fn generation(self) -> u64 {
        (self.0 >> GEN_SHIFT) & GEN_MASK
    }

    /// Consecutive failures (Closed).
    #[allow(clippy::cast_possible_truncation)] // 24 bits
    #[inline(always)]
    pub(crate) const fn payload(self) -> u32 {
        (self.0 & PAYLOAD_MASK) as u32
    }

    #[inline(always)]
    pub(crate) const fn round(self) -> u32 {
        (self.payload() >> 16) & 0xFF
    }

    #[inline(always)]
    pub(crate) const fn in_flight(self) -> u32 {
        (self.payload() >> 8) & 0xFF
    }

    #[inline(always)]
    pub(crate) const fn successes(self) -> u32 {
        self.payload() & 0xFF
    }

    /// The open deadline (Open).
    #[inline(always)]
    pub(crate) const fn deadline(self) -> u64 {
        self.0 & MAX_DEADLINE
    }

    /// Same tag, mode and generation, another payload.
    #[inline]
    pub(crate) const fn with_payload(self, payload: u32) -> Self {
        Word((self.0 & !PAYLOAD_MASK) | (payload as u64 & PAYLOAD_MASK))
    }

    /// Same tag, mode and generation, other trial counts.
    #[allow(clippy::cast_possible_truncation)] // 24 bits
    #[inline]
    pub(crate) const fn with_trials(self, round: u32, in_flight: u32, successes: u32) -> Self {
        self.with_payload(Self::trials(round, in_flight, successes) as u32)
    }

    /// Whether `self` is in the same state period as `admitted`: same tag and
    /// generation (the payload and mode may have moved).
    #[inline(always)]
    pub(crate) const fn same_period(self, admitted: Word) -> bool {
        self.0 >> TAG_SHIFT == admitted.0 >> TAG_SHIFT && self.generation() == admitted.generation()
    }

    /// The word's period: what a transition changes and a call's
    /// bookkeeping (failure counts, trials in flight) does not. In Open,
    /// the whole word.
    #[inline]
    pub(crate) const fn period(self) -> u64 {
        if self.0 >> TAG_SHIFT == TAG_OPEN {
            self.0
        } else {
            self.0 & !PAYLOAD_MASK
        }
    }

    /// Of an admitted word stamped with its epoch ([`Admitted::word`]):
    /// whether the generation counter, now at `counter`, is less than 2^36
    /// generations past it (counted modulo 2^52, the bits the permit keeps:
    /// 2^52 transitions take months of nothing else).
    #[inline]
    pub(crate) const fn within_reach(self, counter: u64) -> bool {
        let admitted = (self.0 & EPOCH_MASK) << GEN_BITS | self.generation();
        counter.wrapping_sub(admitted) & ((1 << (GEN_BITS + EPOCH_BITS)) - 1) <= GEN_MASK
    }
}

/// A permit's word: the word its call was admitted under, with the
/// permit's flags and epoch, or a sentinel (layout in the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admitted(u64);

/// Its bits, as a [`Permit`](crate::Permit)'s `Debug` showed them before
/// they had a type.
impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl Admitted {
    /// A permit whose outcome is not recorded (forced closed), or already
    /// recorded.
    pub(crate) const PASSIVE: Admitted = Admitted(u64::MAX);
    /// A permit an observe-only breaker gave a call it would have refused:
    /// its outcome is counted in the totals, and moves nothing.
    pub(crate) const OBSERVED: Admitted = Admitted(u64::MAX - 1);

    /// A call admitted under `w` (Closed or HalfOpen), with no flag yet.
    #[inline(always)]
    pub(crate) const fn new(w: Word) -> Self {
        Admitted(w.0 & !MODE_BITS)
    }

    #[inline(always)]
    pub(crate) const fn is_passive(self) -> bool {
        self.0 == Self::PASSIVE.0
    }

    #[inline(always)]
    pub(crate) const fn is_observed(self) -> bool {
        self.0 == Self::OBSERVED.0
    }

    /// Admitted in Closed (not a sentinel).
    #[inline(always)]
    pub(crate) const fn closed(self) -> bool {
        self.0 >> TAG_SHIFT == TAG_CLOSED
    }

    /// Admitted in HalfOpen: a trial (not a sentinel).
    #[inline(always)]
    pub(crate) const fn trial(self) -> bool {
        self.0 >> TAG_SHIFT == TAG_HALF_OPEN
    }

    /// Admitted in Closed and holding no place: `finish`'s fast path, one
    /// shift and one test.
    #[inline(always)]
    pub(crate) const fn closed_unplaced(self) -> bool {
        self.0 >> (TAG_SHIFT - 1) == TAG_CLOSED
    }

    /// The protected body's polls are watched (`TRACKED`).
    #[inline(always)]
    pub(crate) const fn tracked(self) -> bool {
        self.0 & TRACKED != 0
    }

    /// The same, `TRACKED`. (The sentinels have it already.)
    #[inline(always)]
    pub(crate) const fn tracking(self) -> Self {
        Admitted(self.0 | TRACKED)
    }

    /// Holds a place of the adaptive limit, or is timed for graded
    /// shedding (`PLACED`).
    #[inline(always)]
    pub(crate) const fn placed(self) -> bool {
        self.0 & PLACED != 0
    }

    /// The same, `PLACED`.
    #[inline(always)]
    pub(crate) const fn placing(self) -> Self {
        Admitted(self.0 | PLACED)
    }

    /// Stamped with bits 36..52 of its generation, the generation counter
    /// having been `counter` when it was admitted: the admitted generation
    /// is the latest number at or below `counter` with the word's 36 bits.
    #[inline]
    pub(crate) const fn with_epoch(self, counter: u64) -> Self {
        let generation = counter - (counter.wrapping_sub(self.word().generation()) & GEN_MASK);
        Admitted((self.0 & !EPOCH_MASK) | (generation >> GEN_BITS & EPOCH_MASK))
    }

    /// The admitted word, its flags cleared (its mode reads normal).
    #[inline(always)]
    pub(crate) const fn word(self) -> Word {
        Word(self.0 & !MODE_BITS)
    }
}

/// A permit's other word: when its call started, or the generation counter
/// at admission; marked `TIMED` when the call is timed for graded shedding
/// (layout in the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Started(u64);

/// Its bits, as for [`Admitted`].
impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl Started {
    /// `value` (a clock reading or the generation counter), not timed for
    /// graded shedding.
    #[inline(always)]
    pub(crate) const fn new(value: u64) -> Self {
        Started(value)
    }

    /// `value`, timed for graded shedding.
    #[inline(always)]
    pub(crate) const fn timed_from(value: u64) -> Self {
        Started(TIMED | value)
    }

    /// Timed for graded shedding.
    #[inline(always)]
    pub(crate) const fn timed(self) -> bool {
        self.0 & TIMED != 0
    }

    /// The same, timed for graded shedding.
    #[inline(always)]
    pub(crate) const fn timing(self) -> Self {
        Started(self.0 | TIMED)
    }

    /// `value`, a reading of the precise clock taken for the call-duration
    /// histogram on a breaker that times nothing else.
    #[inline(always)]
    pub(crate) const fn clocked_from(value: u64) -> Self {
        Started(CLOCKED | value)
    }

    /// Timed for the call-duration histogram on a breaker that times
    /// nothing else (`clocked_from`).
    #[inline(always)]
    pub(crate) const fn clocked(self) -> bool {
        self.0 & CLOCKED != 0
    }

    /// The clock reading or generation counter, without the marks.
    #[inline(always)]
    pub(crate) const fn value(self) -> u64 {
        self.0 & !(TIMED | CLOCKED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let w = Word::half_open(Mode::ObserveOnly, GEN_MASK + 7, 255, 254, 253);
        assert_eq!(
            (
                w.tag(),
                w.mode(),
                w.generation(),
                w.round(),
                w.in_flight(),
                w.successes()
            ),
            (Tag::HalfOpen, Mode::ObserveOnly, 6, 255, 254, 253)
        );
        let c = Word::closed(Mode::Normal, 5, MAX_THRESHOLD);
        assert_eq!(
            (c.tag(), c.generation(), c.payload()),
            (Tag::Closed, 5, MAX_THRESHOLD)
        );
        assert!(c.closed_normally());
        assert!(!Word::closed(Mode::ForcedClosed, 5, 0).closed_normally());
        let o = Word::open(Mode::ForcedOpen, u64::MAX);
        assert_eq!(
            (o.tag(), o.mode(), o.deadline()),
            (Tag::Open, Mode::ForcedOpen, MAX_DEADLINE)
        );
        assert_eq!(Word::open(Mode::Normal, 12_345).deadline(), 12_345);
        let moved = w.with_trials(1, 2, 3);
        assert!(moved.same_period(w));
        assert_eq!(
            (moved.round(), moved.in_flight(), moved.successes()),
            (1, 2, 3)
        );
        assert_eq!(moved.mode(), Mode::ObserveOnly);
        for mode in [
            Mode::Normal,
            Mode::ForcedOpen,
            Mode::ForcedClosed,
            Mode::ObserveOnly,
        ] {
            assert_eq!(Word::closed(mode, 1, 0).mode(), mode);
        }
    }

    #[test]
    fn a_permit_word_keeps_its_flags_apart_from_the_word() {
        let w = Word::half_open(Mode::ForcedClosed, 9, 4, 1, 0);
        let admitted = Admitted::new(w);
        assert!(admitted.trial() && !admitted.closed());
        assert!(!admitted.tracked() && !admitted.placed());
        let flagged = admitted.tracking().placing();
        assert!(flagged.tracked() && flagged.placed() && flagged.trial());
        assert_eq!(flagged.word(), admitted.word());
        assert_eq!(admitted.word().mode(), Mode::Normal);
        assert!(admitted.word().same_period(w));

        let closed = Admitted::new(Word::closed(Mode::ObserveOnly, 3, 7));
        assert!(closed.closed_unplaced() && closed.tracking().closed_unplaced());
        assert!(!closed.placing().closed_unplaced());

        for sentinel in [Admitted::PASSIVE, Admitted::OBSERVED] {
            assert!(sentinel.tracked() && sentinel.placed());
            assert!(!sentinel.closed() && !sentinel.trial() && !sentinel.closed_unplaced());
            assert_eq!(sentinel.tracking(), sentinel);
        }
        assert!(Admitted::PASSIVE.is_passive() && !Admitted::PASSIVE.is_observed());
        assert!(Admitted::OBSERVED.is_observed() && !Admitted::OBSERVED.is_passive());
    }

    #[test]
    fn an_epoch_tells_a_generation_from_one_2_36_later() {
        // Generation 2^36 + 5, admitted when the counter was there already.
        let counter = GEN_MASK + 6;
        let admitted = Admitted::new(Word::closed(Mode::Normal, counter, 3))
            .tracking()
            .with_epoch(counter);
        assert!(admitted.tracked(), "the flags stay");
        assert_eq!(admitted.word().round(), 0, "the payload's top bits stay");
        assert!(admitted.word().within_reach(counter));
        assert!(admitted.word().within_reach(counter + GEN_MASK));
        assert!(!admitted.word().within_reach(counter + GEN_MASK + 1));

        // Generation 2^36 - 2, the counter read after transitions took it
        // past 2^36: the generation is the one below the counter, of epoch
        // 0, not the one as far above it.
        let generation = GEN_MASK - 1;
        let counter = GEN_MASK + 4;
        let late = Admitted::new(Word::closed(Mode::Normal, generation, 3)).with_epoch(counter);
        assert!(late.word().within_reach(counter));
        assert!(late.word().within_reach(generation + GEN_MASK));
        assert!(!late.word().within_reach(generation + GEN_MASK + 1));
    }

    /// A permit's `Debug` shows its two words as the `u64`s they were.
    #[test]
    fn a_permit_word_debugs_as_its_bits() {
        assert_eq!(format!("{:?}", Admitted::PASSIVE), u64::MAX.to_string());
        assert_eq!(format!("{:?}", Started::new(42)), "42");
    }

    #[test]
    fn a_start_keeps_its_mark_apart() {
        let started = Started::new(42);
        assert!(!started.timed());
        assert_eq!(started.timing().value(), 42);
        assert!(started.timing().timed());
        assert_eq!(Started::timed_from(7), Started::new(7).timing());
        let clocked = Started::clocked_from(9);
        assert!(clocked.clocked() && !clocked.timed() && !started.clocked());
        assert_eq!(clocked.timing().value(), 9);
        assert!(clocked.timing().clocked());
    }
}
