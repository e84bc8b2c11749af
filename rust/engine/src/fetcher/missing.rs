//! Partitions the broker says it does not host although this member's share session holds them.
//!
//! The first time, the broker's session and ours may simply have drifted apart (replayed requests
//! of an old connection after a network partition): reopening the session mends that. When a
//! partition is missing again from the reopened session, the broker does not have it (a topic
//! deleted while the group still assigns it, metadata behind a reassignment), and reopening at
//! once again loops as fast as round trips go (measured on Kafka 4.4: 271 sessions in about two
//! seconds after a topic deletion, each with a WARN and a metadata request). Such a partition is
//! left out of the session for a while, doubling from [`FIRST_EXCLUSION`] to [`MAX_EXCLUSION`],
//! so the leader's other partitions keep flowing, and is asked for again after it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;

use crate::acks::PartitionKey;

/// How long a partition missing twice in a row stays out of the session.
pub(super) const FIRST_EXCLUSION: Duration = Duration::from_millis(100);
/// The longest a missing partition stays out before it is asked for again.
pub(super) const MAX_EXCLUSION: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub(super) struct MissingPartitions {
    suspects: BTreeMap<PartitionKey, Suspect>,
}

#[derive(Debug)]
struct Suspect {
    /// Responses in a row, each from a fresh session, that lacked the partition.
    streak: u32,
    excluded_until: Option<Instant>,
}

/// What to say about a response that lacked partitions.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lacked {
    /// Missing for the first time: the sessions may have drifted; reopen at once.
    Drift,
    /// Missing again: left out of the session for `Duration` (the longest of them).
    Excluded(Duration),
}

impl MissingPartitions {
    /// A response lacked `missing`; the caller reopens the session either way.
    pub(super) fn lacked(&mut self, missing: &[PartitionKey], now: Instant) -> Lacked {
        let mut longest = None;
        for key in missing {
            let suspect = self.suspects.entry(*key).or_insert(Suspect {
                streak: 0,
                excluded_until: None,
            });
            suspect.streak = suspect.streak.saturating_add(1);
            if suspect.streak >= 2 {
                let wait = exclusion(suspect.streak);
                suspect.excluded_until = Some(now + wait);
                longest = longest.max(Some(wait));
            }
        }
        match longest {
            Some(wait) => Lacked::Excluded(wait),
            None => Lacked::Drift,
        }
    }

    /// The broker answered for `key` without an error: it has the partition. Returns whether the
    /// partition had been left out before (worth an INFO: it is back).
    pub(super) fn answered(&mut self, key: &PartitionKey) -> bool {
        self.suspects
            .remove(key)
            .is_some_and(|s| s.excluded_until.is_some())
    }

    /// The partitions of `desired` to hold in the session now: all but those left out until later.
    pub(super) fn filter(
        &mut self,
        mut desired: BTreeSet<PartitionKey>,
        now: Instant,
    ) -> BTreeSet<PartitionKey> {
        if self.suspects.is_empty() {
            return desired; // the usual case, on every pass of the fetcher: nothing to do
        }
        // Partitions no longer assigned here are no concern of this session any more.
        self.suspects.retain(|key, _| desired.contains(key));
        desired.retain(|key| !self.is_excluded(key, now));
        desired
    }

    /// When the first partition left out may be asked for again (to wake the fetcher then).
    pub(super) fn next_return(&self, now: Instant) -> Option<Instant> {
        self.suspects
            .values()
            .filter_map(|s| s.excluded_until)
            .filter(|t| *t > now)
            .min()
    }

    fn is_excluded(&self, key: &PartitionKey, now: Instant) -> bool {
        self.suspects
            .get(key)
            .and_then(|s| s.excluded_until)
            .is_some_and(|t| t > now)
    }
}

/// The exclusion after the `streak`-th response in a row lacking a partition (streak ≥ 2).
fn exclusion(streak: u32) -> Duration {
    let doublings = streak.saturating_sub(2).min(16);
    FIRST_EXCLUSION
        .saturating_mul(1u32 << doublings)
        .min(MAX_EXCLUSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn keys() -> (PartitionKey, PartitionKey) {
        let topic = Uuid::from_u128(7);
        ((topic, 0), (topic, 1))
    }

    #[test]
    fn first_absence_is_drift_then_the_partition_stays_out_for_longer_each_time() {
        let (gone, kept) = keys();
        let desired = BTreeSet::from([gone, kept]);
        let mut m = MissingPartitions::default();
        let t0 = Instant::now();
        assert_eq!(m.lacked(&[gone], t0), Lacked::Drift);
        assert_eq!(
            m.filter(desired.clone(), t0),
            desired,
            "drift: reopen with everything"
        );
        let mut waits = Vec::new();
        let mut now = t0;
        for _ in 0..8 {
            match m.lacked(&[gone], now) {
                Lacked::Excluded(wait) => waits.push(wait),
                other => panic!("missing again must exclude, got {other:?}"),
            }
            assert_eq!(m.filter(desired.clone(), now), BTreeSet::from([kept]));
            let back = m.next_return(now).expect("a return time");
            assert_eq!(back, now + *waits.last().unwrap());
            now = back;
            assert_eq!(
                m.filter(desired.clone(), now),
                desired,
                "asked for again after its wait"
            );
        }
        let ms: Vec<u128> = waits.iter().map(|w| w.as_millis()).collect();
        assert_eq!(ms, vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }

    #[test]
    fn an_answer_clears_the_suspicion() {
        let (gone, kept) = keys();
        let desired = BTreeSet::from([gone, kept]);
        let mut m = MissingPartitions::default();
        let now = Instant::now();
        m.lacked(&[gone], now);
        assert!(!m.answered(&gone), "only suspected, never left out");
        assert_eq!(m.lacked(&[gone], now), Lacked::Drift, "a fresh start");
        assert!(matches!(m.lacked(&[gone], now), Lacked::Excluded(_)));
        assert!(m.answered(&gone), "it had been left out: it is back");
        assert_eq!(m.filter(desired.clone(), now), desired);
        assert_eq!(m.next_return(now), None);
    }

    #[test]
    fn partitions_no_longer_assigned_are_forgotten() {
        let (gone, kept) = keys();
        let mut m = MissingPartitions::default();
        let now = Instant::now();
        m.lacked(&[gone], now);
        m.lacked(&[gone], now);
        assert!(m.next_return(now).is_some());
        let desired = BTreeSet::from([kept]);
        assert_eq!(m.filter(desired.clone(), now), desired);
        assert_eq!(
            m.next_return(now),
            None,
            "the unassigned partition's wait is gone"
        );
    }
}
