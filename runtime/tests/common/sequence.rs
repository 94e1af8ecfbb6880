//! The numbering check of a breaker's delivered events, shared by the test
//! binaries that race transitions on threads.

use failfast_runtime::events::Transition;

/// Checks the delivered events of one breaker: numbered in order, each
/// skipping exactly the events it says were dropped, and (unless an ordering
/// wait gave up, when the order is no longer promised) each starting where
/// the one before it ended when none was dropped in between. Returns the
/// events dropped.
pub fn check_sequence(delivered: &[Transition], ordered: bool) -> u64 {
    assert_eq!(delivered[0].seq, 1 + delivered[0].dropped);
    let mut dropped = delivered[0].dropped;
    for (i, pair) in delivered.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(
            after.seq,
            before.seq + 1 + after.dropped,
            "event {i}: {pair:#?}"
        );
        if ordered && after.dropped == 0 {
            assert_eq!(after.from, before.to, "event {i}: {pair:#?}");
        }
        dropped += after.dropped;
    }
    dropped
}
