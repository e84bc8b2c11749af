//! Acknowledgements: the caller's types, and the per-leader queue that turns finished ranges
//! into wire batches and routes the broker's per-partition results back to waiters.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::oneshot;
use uuid::Uuid;

use crate::protocol::error_codes;
use crate::protocol::share_requests::{AckBatch, PartitionAcks, TopicAcks};

/// How the caller settles an acquired record range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum AckKind {
    Accept = 1,
    Release = 2,
    Reject = 3,
    /// Restart the acquisition lock (ShareFetch/ShareAcknowledge v2).
    Renew = 4,
}

impl AckKind {
    pub fn from_code(code: i8) -> Option<AckKind> {
        match code {
            1 => Some(AckKind::Accept),
            2 => Some(AckKind::Release),
            3 => Some(AckKind::Reject),
            4 => Some(AckKind::Renew),
            _ => None,
        }
    }
}

/// Wire code of a Gap acknowledgement (acquired offset with no data record).
pub(crate) const GAP: i8 = 0;

/// An inclusive offset range of one partition, settled one way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub topic: Arc<str>,
    pub partition: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub kind: AckKind,
}

impl Ack {
    pub fn new(
        topic: impl Into<Arc<str>>,
        partition: i32,
        first_offset: i64,
        last_offset: i64,
        kind: AckKind,
    ) -> Self {
        Ack {
            topic: topic.into(),
            partition,
            first_offset,
            last_offset,
            kind,
        }
    }
}

/// The broker's verdict on one [`Ack`]; error code 0 means applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckResult {
    pub ack: Ack,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl AckResult {
    pub fn is_ok(&self) -> bool {
        self.error_code == error_codes::NONE
    }
}

/// What a waiter receives: the partition's ack error code and message.
pub(crate) type AckOutcome = (i16, Option<String>);

#[derive(Debug)]
pub(crate) struct PendingAck {
    pub first: i64,
    pub last: i64,
    pub code: i8,
    pub waiter: Option<oneshot::Sender<AckOutcome>>,
    /// False for the engine's own Gap and Release acks (records never handed out).
    pub from_caller: bool,
}

impl PendingAck {
    pub fn from_caller(
        first: i64,
        last: i64,
        code: i8,
        waiter: Option<oneshot::Sender<AckOutcome>>,
    ) -> Self {
        PendingAck {
            first,
            last,
            code,
            waiter,
            from_caller: true,
        }
    }

    pub fn from_engine(first: i64, last: i64, code: i8) -> Self {
        PendingAck {
            first,
            last,
            code,
            waiter: None,
            from_caller: false,
        }
    }

    fn resolve(self, outcome: AckOutcome) {
        if let Some(w) = self.waiter {
            let _ = w.send(outcome);
        }
    }
}

pub(crate) type PartitionKey = (Uuid, i32);

/// Records in the inclusive range [first, last] (first <= last), without overflow for any
/// i64 bounds a caller or broker may send.
fn range_len(first: i64, last: i64) -> u64 {
    last.abs_diff(first).saturating_add(1)
}

/// Acks queued for one leader, by partition.
#[derive(Debug, Default)]
pub(crate) struct AckQueue {
    by_partition: BTreeMap<PartitionKey, Vec<PendingAck>>,
    /// Some queued ack needs to go out now (sync ack, renew), not with the next fetch.
    urgent: bool,
}

/// Acks taken out of the queue for one request, kept until its response arrives.
#[derive(Debug, Default)]
pub(crate) struct AcksInFlight {
    by_partition: BTreeMap<PartitionKey, Vec<PendingAck>>,
}

impl AckQueue {
    pub fn push(&mut self, key: PartitionKey, ack: PendingAck, urgent: bool) {
        self.urgent |= urgent || ack.code == AckKind::Renew as i8;
        self.by_partition.entry(key).or_default().push(ack);
    }

    pub fn is_empty(&self) -> bool {
        self.by_partition.is_empty()
    }

    pub fn is_urgent(&self) -> bool {
        self.urgent && !self.is_empty()
    }

    pub fn has_renew(&self) -> bool {
        self.by_partition
            .values()
            .flatten()
            .any(|a| a.code == AckKind::Renew as i8)
    }

    /// Takes everything queued: wire batches (ascending, non-overlapping) plus the in-flight
    /// record. Overlapping acks are failed locally with INVALID_REQUEST.
    pub fn take(&mut self) -> (Vec<TopicAcks>, AcksInFlight) {
        self.urgent = false;
        let mut topics: Vec<TopicAcks> = Vec::new();
        let mut in_flight = AcksInFlight::default();
        for ((topic_id, partition), mut acks) in std::mem::take(&mut self.by_partition) {
            acks.sort_by_key(|a| a.first);
            let mut kept: Vec<PendingAck> = Vec::with_capacity(acks.len());
            let mut batches: Vec<AckBatch> = Vec::new();
            for ack in acks {
                if ack.first > ack.last || kept.last().is_some_and(|prev| ack.first <= prev.last) {
                    ack.resolve((
                        error_codes::INVALID_REQUEST,
                        Some("acknowledgement overlaps another one or is empty".into()),
                    ));
                    continue;
                }
                match batches.last_mut() {
                    // Contiguous and of the same type: one batch with one type entry.
                    Some(b)
                        if b.last_offset.checked_add(1) == Some(ack.first)
                            && b.types == [ack.code] =>
                    {
                        b.last_offset = ack.last;
                    }
                    _ => batches.push(AckBatch {
                        first_offset: ack.first,
                        last_offset: ack.last,
                        types: vec![ack.code],
                    }),
                }
                kept.push(ack);
            }
            if kept.is_empty() {
                continue;
            }
            match topics.last_mut() {
                Some(t) if t.topic_id == topic_id => {}
                _ => topics.push(TopicAcks {
                    topic_id,
                    partitions: Vec::new(),
                }),
            }
            topics
                .last_mut()
                .expect("just pushed")
                .partitions
                .push(PartitionAcks { partition, batches });
            in_flight.by_partition.insert((topic_id, partition), kept);
        }
        (topics, in_flight)
    }

    /// Puts acks back (e.g. after a session reset) ahead of newer ones.
    pub fn requeue(&mut self, in_flight: AcksInFlight) {
        for (key, acks) in in_flight.by_partition {
            self.by_partition.entry(key).or_default().extend(acks);
        }
    }
}

impl AcksInFlight {
    pub fn partitions(&self) -> impl Iterator<Item = &PartitionKey> {
        self.by_partition.keys()
    }

    /// Ranges held.
    pub fn len(&self) -> usize {
        self.by_partition.values().map(Vec::len).sum()
    }

    /// Records (offsets) in the ranges held.
    pub fn records(&self) -> u64 {
        self.by_partition
            .values()
            .flatten()
            .map(|a| range_len(a.first, a.last))
            .fold(0, u64::saturating_add)
    }

    /// Counts per wire type code (index 0..=4) for the metrics.
    pub fn record_counts(&self) -> [u64; 5] {
        let mut counts = [0u64; 5];
        for a in self.by_partition.values().flatten() {
            counts[a.code as usize] =
                counts[a.code as usize].saturating_add(range_len(a.first, a.last));
        }
        counts
    }

    /// Records the caller settled for good (accept, release, reject) in these acks.
    pub fn caller_settled(&self) -> u64 {
        self.by_partition
            .values()
            .flatten()
            .filter(|a| a.from_caller && (1..=3).contains(&a.code))
            .map(|a| range_len(a.first, a.last))
            .fold(0, u64::saturating_add)
    }

    pub fn resolve_partition(&mut self, key: &PartitionKey, outcome: AckOutcome) {
        if let Some(acks) = self.by_partition.remove(key) {
            for a in acks {
                a.resolve(outcome.clone());
            }
        }
    }

    /// Resolves everything still unresolved; returns how many ranges got a non-zero code.
    pub fn resolve_all(self, outcome: AckOutcome) -> usize {
        let mut n = 0;
        for a in self.by_partition.into_values().flatten() {
            n += 1;
            a.resolve(outcome.clone());
        }
        if outcome.0 == error_codes::NONE {
            0
        } else {
            n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(first: i64, last: i64, code: i8) -> PendingAck {
        PendingAck::from_caller(first, last, code, None)
    }

    #[test]
    fn merges_contiguous_same_type_ranges() {
        let t = Uuid::from_u128(1);
        let mut q = AckQueue::default();
        q.push((t, 0), pending(5, 9, 1), false);
        q.push((t, 0), pending(0, 4, 1), false);
        q.push((t, 0), pending(10, 10, 0), false);
        q.push((t, 0), pending(11, 12, 1), false);
        q.push((t, 1), pending(3, 3, 2), false);
        assert!(!q.is_urgent());
        let (topics, in_flight) = q.take();
        assert!(q.is_empty());
        assert_eq!(topics.len(), 1);
        let p0 = &topics[0].partitions[0];
        assert_eq!(
            p0.batches,
            vec![
                AckBatch {
                    first_offset: 0,
                    last_offset: 9,
                    types: vec![1]
                },
                AckBatch {
                    first_offset: 10,
                    last_offset: 10,
                    types: vec![0]
                },
                AckBatch {
                    first_offset: 11,
                    last_offset: 12,
                    types: vec![1]
                },
            ]
        );
        assert_eq!(topics[0].partitions[1].partition, 1);
        assert_eq!(in_flight.record_counts(), [1, 12, 1, 0, 0]);
    }

    #[test]
    fn overlaps_fail_locally_and_renew_is_urgent() {
        let t = Uuid::from_u128(1);
        let mut q = AckQueue::default();
        let (tx, mut rx) = oneshot::channel();
        q.push((t, 0), pending(0, 9, 1), false);
        q.push((t, 0), PendingAck::from_caller(5, 6, 3, Some(tx)), false);
        q.push((t, 0), pending(20, 20, 4), false);
        assert!(q.is_urgent() && q.has_renew());
        let (topics, _) = q.take();
        assert_eq!(topics[0].partitions[0].batches.len(), 2);
        assert_eq!(rx.try_recv().unwrap().0, error_codes::INVALID_REQUEST);
    }
}
