//! Acknowledgements: the caller's types, and the per-leader queue that turns finished ranges
//! into wire batches and routes the broker's per-partition results back to waiters.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::{info, warn};
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
    /// An ACCEPT of gap offsets (transaction markers) folded into the settling range beside them
    /// (see [`AckQueue::hold_gap`]).
    pub folded_gap: bool,
    /// For a folded gap: when its acquisition lock runs out (wall-clock ms). One that would go
    /// out after that is dropped rather than sent (`AckQueue::take_at`).
    pub gap_deadline_ms: i64,
    /// A caller's ack sent again without the gaps that were folded into it, after the broker
    /// refused the request that carried them: its success shows the broker refuses folds.
    pub resent_without_folds: bool,
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
            folded_gap: false,
            gap_deadline_ms: i64::MAX,
            resent_without_folds: false,
        }
    }

    pub fn from_engine(first: i64, last: i64, code: i8) -> Self {
        PendingAck {
            first,
            last,
            code,
            waiter: None,
            from_caller: false,
            folded_gap: false,
            gap_deadline_ms: i64::MAX,
            resent_without_folds: false,
        }
    }

    /// Gap offsets acknowledged with the ACCEPT of the records beside them.
    fn folded_gap(first: i64, last: i64, deadline_ms: i64) -> Self {
        PendingAck {
            folded_gap: true,
            gap_deadline_ms: deadline_ms,
            ..PendingAck::from_engine(first, last, AckKind::Accept as i8)
        }
    }

    /// The engine's own ack whose outcome it waits for (a renewal of buffered records).
    pub fn from_engine_waiting(
        first: i64,
        last: i64,
        code: i8,
        waiter: oneshot::Sender<AckOutcome>,
    ) -> Self {
        PendingAck {
            waiter: Some(waiter),
            ..PendingAck::from_engine(first, last, code)
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

/// Acquired offsets without a data record (transaction markers) beside records the caller was
/// given, held back so they settle with those records: see [`AckQueue::hold_gap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeldGap {
    last: i64,
    /// Wall-clock ms at which its acquisition lock runs out, as far as this member knows (its
    /// fetch's lock: a gap is never renewed).
    deadline_ms: i64,
}

/// Gaps held per partition, by first offset.
type HeldGaps = BTreeMap<i64, HeldGap>;

/// Acks queued for one leader, by partition.
#[derive(Debug, Default)]
pub(crate) struct AckQueue {
    by_partition: BTreeMap<PartitionKey, Vec<PendingAck>>,
    /// Some queued ack needs to go out now (sync ack, renew), not with the next fetch.
    urgent: bool,
    /// Records the caller settled (accept, release, reject) through this queue so far: with the
    /// records its fetcher delivered, what the member still holds of that leader's partitions.
    settled_by_caller: u64,
    /// Gap offsets waiting for the records beside them to settle (see `hold_gap`).
    held_gaps: BTreeMap<PartitionKey, HeldGaps>,
    /// This leader took an acknowledgement only once the gaps folded into it were left out:
    /// its gaps are acknowledged as Gap from then on.
    folds_refused: bool,
}

/// Acks taken out of the queue for one request, kept until its response arrives.
#[derive(Debug, Default)]
pub(crate) struct AcksInFlight {
    by_partition: BTreeMap<PartitionKey, Vec<PendingAck>>,
    /// Records sent per wire type code (after overlaps were reconciled).
    sent: [u64; 5],
    /// Records of acks refused because they contradicted an earlier one (see `AckQueue::take`).
    pub conflicts: u64,
    /// Gap offsets sent as ACCEPT with the records beside them (counted in `sent[1]` too).
    folded_gaps: u64,
}

/// How long before its lock runs out a held gap is acknowledged as Gap rather than waiting on:
/// at most this, at most a quarter of the lock.
const GAP_SETTLE_MARGIN_MS: i64 = 2_000;
/// A gap (held, or folded into an ACCEPT) this close to the end of its lock is not sent at all:
/// the broker might get it after the lock ran out, and a gap it refuses fails every other ack
/// of the partition in that request. Unacknowledged, it is delivered again, alone, as a Gap.
const GAP_SEND_SLACK_MS: i64 = 1_000;

impl AckQueue {
    pub fn push(&mut self, key: PartitionKey, ack: PendingAck, urgent: bool) {
        self.urgent |= urgent || ack.code == AckKind::Renew as i8;
        if ack.from_caller && (1..=3).contains(&ack.code) && ack.first <= ack.last {
            self.settled_by_caller = self
                .settled_by_caller
                .saturating_add(range_len(ack.first, ack.last));
        }
        let beside = if ack.first > ack.last {
            Vec::new()
        } else if ack.code == GAP {
            // The engine gives these offsets up as a Gap of their own: nothing of them is held.
            self.unhold(key, ack.first, ack.last);
            Vec::new()
        } else {
            self.gaps_beside(key, ack.first, ack.last, ack.code)
        };
        let queued = self.by_partition.entry(key).or_default();
        queued.push(ack);
        queued.extend(beside);
    }

    /// Holds back the acquired offsets [first, last] that have no data record (a transaction's
    /// commit or abort marker) and lie beside a record the caller is given, so that they are
    /// acknowledged with that record's range instead of as a Gap of their own, early.
    ///
    /// Why: Kafka 4.4 keeps one state for an acquired range acknowledged whole with one type,
    /// and one state per offset (one lock timer each, one state-write entry each) for a range
    /// acknowledged in parts or with several types. A marker acknowledged as Gap ahead of its
    /// records splits its range. Held, it goes with the first settling ack beside it:
    ///
    /// - ACCEPT: acknowledged as ACCEPT with it (ACKNOWLEDGED and ARCHIVED are both final; the
    ///   marker is no record, so nothing is delivered by it);
    /// - RELEASE, REJECT: acknowledged as Gap then (a REJECT would hand it to the broker's DLQ).
    ///
    /// A gap is never renewed (a renewal the broker refuses would leave it held past its lock):
    /// one its records did not settle goes as a Gap of its own shortly before its fetch's lock
    /// runs out, ahead of records renewed beside it (their range splits, as without folding),
    /// and is dropped unsent when that is too late (`take_at`). No record is ever acknowledged
    /// earlier for a gap. With `fold` false (the engine setting, or the broker refused folds),
    /// it is queued as a Gap at once, as before. A lost connection releases what the session
    /// acquired: the gaps held for it are forgotten (`forget_all_gaps`).
    pub fn hold_gap(
        &mut self,
        key: PartitionKey,
        first: i64,
        last: i64,
        deadline_ms: i64,
        fold: bool,
    ) {
        if !fold || self.folds_refused || first > last {
            self.push(key, PendingAck::from_engine(first, last, GAP), false);
            return;
        }
        // The same offsets acquired again (a redelivery) replace what was held of them.
        self.unhold(key, first, last);
        self.held_gaps
            .entry(key)
            .or_default()
            .insert(first, HeldGap { last, deadline_ms });
    }

    /// Forgets the held gaps of `key` overlapping [first, last].
    fn unhold(&mut self, key: PartitionKey, first: i64, last: i64) {
        let Some(gaps) = self.held_gaps.get_mut(&key) else {
            return;
        };
        let overlapping: Vec<i64> = gaps
            .range(..=last)
            .filter(|(_, g)| g.last >= first)
            .map(|(f, _)| *f)
            .collect();
        for f in overlapping {
            gaps.remove(&f);
        }
        if gaps.is_empty() {
            self.held_gaps.remove(&key);
        }
    }

    /// The held gaps of `key` touching or beside [first, last], turned into what goes with an
    /// ack of type `code` over those offsets (see `hold_gap`).
    fn gaps_beside(
        &mut self,
        key: PartitionKey,
        first: i64,
        last: i64,
        code: i8,
    ) -> Vec<PendingAck> {
        let Some(gaps) = self.held_gaps.get_mut(&key) else {
            return Vec::new();
        };
        let lo = first.saturating_sub(1);
        let hi = last.saturating_add(1);
        let touching: Vec<(i64, HeldGap)> = gaps
            .range(..=hi)
            .rev()
            .take_while(|(_, g)| g.last >= lo)
            .map(|(f, g)| (*f, *g))
            .collect();
        let mut out = Vec::with_capacity(touching.len());
        for (f, gap) in touching {
            match AckKind::from_code(code) {
                Some(AckKind::Accept) => {
                    gaps.remove(&f);
                    out.push(PendingAck::folded_gap(f, gap.last, gap.deadline_ms));
                }
                Some(AckKind::Release | AckKind::Reject) => {
                    gaps.remove(&f);
                    out.push(PendingAck::from_engine(f, gap.last, GAP));
                }
                // Not renewed: see `hold_gap`.
                Some(AckKind::Renew) | None => {}
            }
        }
        if gaps.is_empty() {
            self.held_gaps.remove(&key);
        }
        out
    }

    /// Forgets the gaps held for `key`: the partition left this leader's session (its locks
    /// with it).
    pub fn forget_gaps(&mut self, key: &PartitionKey) {
        self.held_gaps.remove(key);
    }

    /// Forgets every held gap: the session's connection is gone, and the broker released what
    /// it acquired (the gaps come back, alone, as Gaps).
    pub fn forget_all_gaps(&mut self) {
        self.held_gaps.clear();
    }

    /// Queues every held gap as a Gap (the session closes, or folding stopped), but those too
    /// close to the end of their lock at `now_ms`, which are dropped unsent (`GAP_SEND_SLACK_MS`).
    pub fn settle_held_gaps(&mut self, now_ms: i64) {
        for (key, gaps) in std::mem::take(&mut self.held_gaps) {
            for (first, gap) in gaps {
                if gap.deadline_ms.saturating_sub(now_ms) > GAP_SEND_SLACK_MS {
                    self.push(key, PendingAck::from_engine(first, gap.last, GAP), false);
                }
            }
        }
    }

    /// Gap offsets held now.
    #[cfg(test)]
    pub fn held_gap_offsets(&self) -> u64 {
        self.held_gaps
            .values()
            .flat_map(|g| g.iter())
            .map(|(f, g)| range_len(*f, g.last))
            .fold(0, u64::saturating_add)
    }

    /// The broker took the acks of a partition only once the gaps folded into them were left
    /// out: this leader's gaps go as Gap from now on, for the member's life (the held ones too).
    pub fn folds_refused(&mut self, now_ms: i64) {
        if !self.folds_refused {
            info!(
                "the broker refused an acknowledgement that folded transaction markers into \
                 the range beside them, and took it without them: acknowledging markers as \
                 gaps from now on"
            );
        }
        self.folds_refused = true;
        self.settle_held_gaps(now_ms);
    }

    /// [`AckQueue::take`] at wall-clock `now_ms`, for a request about to go out. A held gap
    /// within the margin of its lock's end (a quarter of `lock_ms` at most) is queued as a Gap;
    /// one, held or folded into an ACCEPT, within `GAP_SEND_SLACK_MS` of it or past it is
    /// dropped unsent: the broker may have handed it to another member, and a gap it refuses
    /// fails the partition's other acks in the same request.
    pub fn take_at(&mut self, now_ms: i64, lock_ms: i64) -> (Vec<TopicAcks>, AcksInFlight) {
        let margin = GAP_SETTLE_MARGIN_MS.min(lock_ms.max(0) / 4);
        let mut due: Vec<(PartitionKey, i64, i64)> = Vec::new();
        self.held_gaps.retain(|key, gaps| {
            gaps.retain(|first, gap| {
                let left = gap.deadline_ms.saturating_sub(now_ms);
                if left <= margin {
                    if left > GAP_SEND_SLACK_MS {
                        due.push((*key, *first, gap.last));
                    }
                    return false;
                }
                true
            });
            !gaps.is_empty()
        });
        for (key, first, last) in due {
            self.push(key, PendingAck::from_engine(first, last, GAP), false);
        }
        for acks in self.by_partition.values_mut() {
            acks.retain(|a| {
                !a.folded_gap || a.gap_deadline_ms.saturating_sub(now_ms) > GAP_SEND_SLACK_MS
            });
        }
        self.by_partition.retain(|_, acks| !acks.is_empty());
        self.take()
    }

    pub fn is_empty(&self) -> bool {
        self.by_partition.is_empty()
    }

    /// Records of the caller's settling acks queued and not yet taken.
    pub fn queued_settled_by_caller(&self) -> u64 {
        self.by_partition
            .values()
            .flatten()
            .filter(|a| a.from_caller && (1..=3).contains(&a.code) && a.first <= a.last)
            .map(|a| range_len(a.first, a.last))
            .fold(0, u64::saturating_add)
    }

    /// Records the caller has settled through this queue since it was made (each range counted
    /// once, when queued; an ack resent after a lost request is not counted again).
    pub fn settled_by_caller(&self) -> u64 {
        self.settled_by_caller
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
    /// record. Acks of the same offsets are reconciled, whatever order they were queued in:
    ///
    /// - a settling ack (accept, release, reject) wins over a gap or a renew of the same
    ///   offsets: those are trimmed to the offsets nothing settles (a renew is moot for a record
    ///   being settled; a gap offset a caller's range covers takes the caller's type), and a gap
    ///   wins over a renew likewise;
    /// - acks of one type that overlap are merged;
    /// - two settling acks of different types over the same offsets are a true conflict: the
    ///   one queued first is sent, the later one is refused whole (INVALID_REQUEST to its
    ///   waiter), counted in `AcksInFlight::conflicts` and logged at WARN. Its records are not
    ///   lost: unsettled, they are redelivered once their lock ends.
    ///
    /// An empty range (first > last) is refused with INVALID_REQUEST.
    pub fn take(&mut self) -> (Vec<TopicAcks>, AcksInFlight) {
        self.urgent = false;
        let mut topics: Vec<TopicAcks> = Vec::new();
        let mut in_flight = AcksInFlight::default();
        for ((topic_id, partition), acks) in std::mem::take(&mut self.by_partition) {
            let (kept, segments, conflicts) = reconcile(acks, (topic_id, partition));
            in_flight.conflicts = in_flight.conflicts.saturating_add(conflicts);
            if kept.is_empty() {
                continue;
            }
            let folded = kept
                .iter()
                .filter(|a| a.folded_gap)
                .map(|a| range_len(a.first, a.last))
                .fold(0, u64::saturating_add);
            in_flight.folded_gaps = in_flight.folded_gaps.saturating_add(folded);
            let mut batches: Vec<AckBatch> = Vec::new();
            for (first, last, code) in segments {
                in_flight.sent[code as usize] =
                    in_flight.sent[code as usize].saturating_add(range_len(first, last));
                match batches.last_mut() {
                    // Contiguous and of the same type: one batch with one type entry.
                    Some(b) if b.last_offset.checked_add(1) == Some(first) && b.types == [code] => {
                        b.last_offset = last;
                    }
                    _ => batches.push(AckBatch {
                        first_offset: first,
                        last_offset: last,
                        types: vec![code],
                    }),
                }
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
            // Ahead: when acks of the same offsets conflict, the one queued first wins.
            let queued = self.by_partition.entry(key).or_default();
            queued.splice(0..0, acks);
        }
    }
}

/// How strongly an ack type claims its offsets when acks overlap: settling types beat a gap,
/// a gap beats a renew.
fn tier(code: i8) -> u8 {
    match code {
        1..=3 => 2,
        GAP => 1,
        _ => 0, // renew
    }
}

/// Disjoint inclusive intervals with their ack type, ordered by first offset.
type Claims = BTreeMap<i64, (i64, i8)>;

fn overlapping(claims: &Claims, first: i64, last: i64) -> Vec<(i64, i64, i8)> {
    let mut out: Vec<(i64, i64, i8)> = claims
        .range(..=last)
        .rev()
        .take_while(|(_, (l, _))| *l >= first)
        .map(|(f, (l, c))| (*f, *l, *c))
        .collect();
    out.reverse();
    out
}

/// Adds [first, last] of `code` to `claims`, merging with the overlapping ones (all of `code`).
fn claim(claims: &mut Claims, first: i64, last: i64, code: i8) {
    let (mut lo, mut hi) = (first, last);
    for (f, l, _) in overlapping(claims, first, last) {
        claims.remove(&f);
        lo = lo.min(f);
        hi = hi.max(l);
    }
    claims.insert(lo, (hi, code));
}

/// The parts of [first, last] that no interval of `stronger` covers.
fn uncovered(stronger: &Claims, first: i64, last: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut from = Some(first);
    for (f, l, _) in overlapping(stronger, first, last) {
        let Some(start) = from else { break };
        if f > start {
            out.push((start, f - 1));
        }
        from = l.checked_add(1).filter(|n| *n <= last);
    }
    if let Some(start) = from {
        if start <= last {
            out.push((start, last));
        }
    }
    out
}

/// Reconciles one partition's acks (see [`AckQueue::take`]): the acks kept (with their
/// waiters), the wire segments (first, last, type) ascending and disjoint, and the records of
/// refused conflicting acks.
fn reconcile(
    acks: Vec<PendingAck>,
    (topic_id, partition): PartitionKey,
) -> (Vec<PendingAck>, Vec<(i64, i64, i8)>, u64) {
    let mut kept = Vec::with_capacity(acks.len());
    let mut tiers: [Claims; 3] = Default::default();
    let mut conflicts = 0u64;
    for ack in acks {
        if ack.first > ack.last {
            ack.resolve((
                error_codes::INVALID_REQUEST,
                Some("acknowledgement of an empty range".into()),
            ));
            continue;
        }
        let claims = &mut tiers[tier(ack.code) as usize];
        // Only settling types can differ within a tier (gap and renew are one type each).
        if let Some((f, l, c)) = overlapping(claims, ack.first, ack.last)
            .into_iter()
            .find(|(_, _, c)| *c != ack.code)
        {
            let records = range_len(ack.first, ack.last);
            conflicts = conflicts.saturating_add(records);
            warn!(%topic_id, partition, first = ack.first, last = ack.last, kind = ack.code,
                  earlier_first = f, earlier_last = l, earlier_kind = c,
                  "conflicting acknowledgements of the same records; the later one is refused");
            ack.resolve((
                error_codes::INVALID_REQUEST,
                Some(format!(
                    "conflicts with an acknowledgement of type {c} queued earlier for [{f}, {l}]"
                )),
            ));
            continue;
        }
        claim(claims, ack.first, ack.last, ack.code);
        kept.push(ack);
    }
    let [renews, gaps, settling] = tiers;
    let mut segments: Vec<(i64, i64, i8)> =
        settling.iter().map(|(f, (l, c))| (*f, *l, *c)).collect();
    let mut stronger = settling;
    for (f, (l, c)) in &gaps {
        for (a, b) in uncovered(&stronger, *f, *l) {
            segments.push((a, b, *c));
        }
    }
    for (f, (l, c)) in gaps {
        claim(&mut stronger, f, l, c);
    }
    for (f, (l, c)) in &renews {
        for (a, b) in uncovered(&stronger, *f, *l) {
            segments.push((a, b, *c));
        }
    }
    segments.sort_unstable_by_key(|s| s.0);
    (kept, segments, conflicts)
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

    /// Records sent per wire type code (index 0..=4) for the metrics; gap offsets folded into
    /// an ACCEPT count as gaps.
    pub fn record_counts(&self) -> [u64; 5] {
        let mut counts = self.sent;
        counts[1] = counts[1].saturating_sub(self.folded_gaps);
        counts[0] = counts[0].saturating_add(self.folded_gaps);
        counts
    }

    /// Gap offsets folded into an ACCEPT in these acks.
    pub fn folded_gaps(&self) -> u64 {
        self.folded_gaps
    }

    /// Whether the broker's refusal `code` of `key`'s acks may be the folds': they carried gaps
    /// folded into an ACCEPT, and the error is one a refused range gets.
    pub fn may_be_refused_fold(&self, key: &PartitionKey, code: i16) -> bool {
        matches!(
            code,
            error_codes::INVALID_RECORD_STATE | error_codes::INVALID_REQUEST
        ) && self
            .by_partition
            .get(key)
            .is_some_and(|acks| acks.iter().any(|a| a.folded_gap))
    }

    /// Takes `key`'s acks out to be sent again without the gaps folded into them (those are
    /// dropped: unacknowledged, their locks run out and the broker delivers them again), each
    /// marked `resent_without_folds`, and the records of the folded gaps dropped (for the
    /// metrics: they were counted as sent). The partition's acks then resolve from the next
    /// answer.
    pub fn without_folds(&mut self, key: &PartitionKey) -> (AcksInFlight, u64) {
        let mut out = AcksInFlight::default();
        let Some(acks) = self.by_partition.remove(key) else {
            return (out, 0);
        };
        let (folded, kept): (Vec<PendingAck>, Vec<PendingAck>) =
            acks.into_iter().partition(|a| a.folded_gap);
        let dropped = folded
            .iter()
            .map(|a| range_len(a.first, a.last))
            .fold(0, u64::saturating_add);
        // What was sent of them, counted as `take` counts it (from the reconciled segments),
        // for the metrics to undo (`Metrics::acks_requeued`).
        let (kept, segments, _) = reconcile(kept, *key);
        for (first, last, code) in segments {
            let slot = &mut out.sent[code as usize];
            *slot = slot.saturating_add(range_len(first, last));
        }
        let resent = kept
            .into_iter()
            .map(|a| PendingAck {
                resent_without_folds: true,
                ..a
            })
            .collect();
        out.by_partition.insert(*key, resent);
        (out, dropped)
    }

    /// These acks without any folded gap (their connection is gone, which released the gaps'
    /// offsets with the session's other records), and the records of the folded gaps dropped.
    pub fn without_any_folds(mut self) -> (AcksInFlight, u64) {
        let mut dropped = 0u64;
        for acks in self.by_partition.values_mut() {
            acks.retain(|a| {
                if a.folded_gap {
                    dropped = dropped.saturating_add(range_len(a.first, a.last));
                }
                !a.folded_gap
            });
        }
        self.by_partition.retain(|_, acks| !acks.is_empty());
        self.sent[1] = self.sent[1].saturating_sub(dropped);
        self.folded_gaps = self.folded_gaps.saturating_sub(dropped);
        (self, dropped)
    }

    /// Whether an answer without error for `key` shows that the broker refuses folds: the acks
    /// were resent without their folds after a refusal, and carried no new fold (a success of
    /// a request carrying one shows the opposite).
    pub fn refusal_confirmed(&self, key: &PartitionKey) -> bool {
        self.by_partition.get(key).is_some_and(|acks| {
            acks.iter().any(|a| a.resent_without_folds) && !acks.iter().any(|a| a.folded_gap)
        })
    }

    /// [`AcksInFlight::refusal_confirmed`] for any partition still unresolved.
    pub fn any_refusal_confirmed(&self) -> bool {
        self.by_partition.keys().any(|k| self.refusal_confirmed(k))
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
    fn counts_the_records_the_caller_settled_once_each() {
        let t = Uuid::from_u128(1);
        let mut q = AckQueue::default();
        q.push((t, 0), pending(0, 9, AckKind::Accept as i8), false);
        q.push((t, 0), pending(10, 10, AckKind::Release as i8), false);
        q.push((t, 0), pending(11, 20, AckKind::Renew as i8), false);
        q.push((t, 0), PendingAck::from_engine(21, 29, GAP), false);
        q.push(
            (t, 0),
            PendingAck::from_engine(30, 31, AckKind::Release as i8),
            false,
        );
        assert_eq!(
            q.settled_by_caller(),
            11,
            "renewals and the engine's own acks settle nothing"
        );
        let (_, in_flight) = q.take();
        q.requeue(in_flight);
        assert_eq!(
            q.settled_by_caller(),
            11,
            "acks sent again are not counted again"
        );
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

    fn batches(topics: &[TopicAcks]) -> Vec<(i64, i64, Vec<i8>)> {
        topics[0].partitions[0]
            .batches
            .iter()
            .map(|b| (b.first_offset, b.last_offset, b.types.clone()))
            .collect()
    }

    #[test]
    fn a_settling_ack_wins_over_a_renew_queued_before_it() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        let (renew_tx, mut renew_rx) = oneshot::channel();
        let (accept_tx, mut accept_rx) = oneshot::channel();
        q.push(key, PendingAck::from_caller(0, 9, 4, Some(renew_tx)), true);
        q.push(
            key,
            PendingAck::from_caller(0, 9, 1, Some(accept_tx)),
            false,
        );
        let (topics, mut in_flight) = q.take();
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        assert_eq!(in_flight.record_counts(), [0, 10, 0, 0, 0]);
        assert_eq!(in_flight.conflicts, 0);
        // Nothing was failed locally: both wait for the broker's answer.
        assert!(accept_rx.try_recv().is_err() && renew_rx.try_recv().is_err());
        in_flight.resolve_partition(&key, (error_codes::NONE, None));
        assert_eq!(accept_rx.try_recv().unwrap().0, error_codes::NONE);
        assert_eq!(renew_rx.try_recv().unwrap().0, error_codes::NONE);
    }

    #[test]
    fn a_renew_is_trimmed_to_the_offsets_nothing_settles() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.push(key, pending(5, 9, 2), false);
        q.push(key, pending(0, 14, 4), true);
        let (topics, in_flight) = q.take();
        assert_eq!(
            batches(&topics),
            vec![(0, 4, vec![4]), (5, 9, vec![2]), (10, 14, vec![4])]
        );
        assert_eq!(in_flight.record_counts(), [0, 0, 5, 0, 10]);
    }

    #[test]
    fn a_callers_range_over_a_gap_takes_the_gap_offsets() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.push(key, PendingAck::from_engine(2, 2, GAP), false);
        q.push(key, PendingAck::from_engine(4, 6, GAP), false);
        q.push(key, pending(0, 5, 1), false);
        let (topics, in_flight) = q.take();
        assert_eq!(batches(&topics), vec![(0, 5, vec![1]), (6, 6, vec![0])]);
        assert_eq!(in_flight.conflicts, 0);
    }

    #[test]
    fn same_type_overlaps_merge() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.push(key, pending(3, 9, 1), false);
        q.push(key, pending(0, 5, 1), false);
        q.push(key, pending(2, 4, 4), true);
        let (topics, in_flight) = q.take();
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        assert_eq!(in_flight.conflicts, 0);
    }

    #[test]
    fn settling_conflicts_are_counted_and_the_first_wins() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        let (tx, mut rx) = oneshot::channel();
        q.push(key, pending(0, 9, 1), false);
        q.push(key, PendingAck::from_caller(5, 14, 2, Some(tx)), false);
        let (topics, in_flight) = q.take();
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        assert_eq!(in_flight.conflicts, 10);
        let (code, message) = rx.try_recv().unwrap();
        assert_eq!(code, error_codes::INVALID_REQUEST);
        assert!(message.unwrap().contains("conflicts"));
        let m = crate::metrics::Metrics::default();
        m.acks_sent(&in_flight);
        assert_eq!(m.snapshot().ack_conflicts, 10);
    }

    #[test]
    fn an_accept_queued_while_a_renew_is_in_flight_still_goes_out() {
        let key = (Uuid::from_u128(1), 0);
        // The renew is answered: the accept goes on the next request.
        let mut q = AckQueue::default();
        q.push(key, pending(0, 9, 4), true);
        let (_, mut renew) = q.take();
        q.push(key, pending(0, 9, 1), false);
        renew.resolve_partition(&key, (error_codes::NONE, None));
        let (topics, _) = q.take();
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        // The renew is lost with its session and put back: the accept still wins.
        let mut q = AckQueue::default();
        q.push(key, pending(0, 9, 4), true);
        let (_, renew) = q.take();
        let (tx, mut rx) = oneshot::channel();
        q.push(key, PendingAck::from_caller(0, 9, 1, Some(tx)), false);
        q.requeue(renew);
        let (topics, mut in_flight) = q.take();
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        in_flight.resolve_partition(&key, (error_codes::NONE, None));
        assert_eq!(rx.try_recv().unwrap().0, error_codes::NONE);
    }

    const NOW: i64 = 1_000_000;
    const LOCK: i64 = 30_000;

    #[test]
    fn a_gap_beside_accepted_records_goes_with_them_as_one_range() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        // Transaction markers at 50 (between two transactions) and 100 (after the second).
        q.hold_gap(key, 50, 50, NOW + LOCK, true);
        q.hold_gap(key, 100, 100, NOW + LOCK, true);
        assert_eq!(q.held_gap_offsets(), 2);
        assert!(q.is_empty(), "a held gap is nothing to send");
        q.push(key, pending(0, 49, 1), false);
        q.push(key, pending(51, 99, 1), false);
        assert_eq!(q.held_gap_offsets(), 0);
        let (topics, in_flight) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 100, vec![1])]);
        assert_eq!(in_flight.record_counts(), [2, 99, 0, 0, 0]);
        assert_eq!(in_flight.folded_gaps(), 2);
        assert_eq!(
            q.settled_by_caller(),
            99,
            "the engine's folds settle no record of the caller's"
        );
    }

    #[test]
    fn a_gap_beside_released_or_rejected_records_goes_as_a_gap() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.hold_gap(key, 20, 20, NOW + LOCK, true);
        q.push(key, pending(0, 9, AckKind::Release as i8), false);
        q.push(key, pending(21, 29, AckKind::Reject as i8), false);
        let (topics, in_flight) = q.take_at(NOW, LOCK);
        assert_eq!(
            batches(&topics),
            vec![
                (0, 9, vec![2]),
                (10, 10, vec![0]),
                (20, 20, vec![0]),
                (21, 29, vec![3])
            ]
        );
        assert_eq!(in_flight.folded_gaps(), 0);
    }

    #[test]
    fn a_renewal_beside_a_gap_leaves_it_and_it_goes_as_a_gap_before_its_lock_ends() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.push(key, pending(0, 9, AckKind::Renew as i8), true);
        let (topics, _) = q.take_at(NOW, LOCK);
        assert_eq!(
            batches(&topics),
            vec![(0, 9, vec![4])],
            "a gap is never renewed: a refused renewal would leave it held past its lock"
        );
        assert_eq!(q.held_gap_offsets(), 1);
        // Within the margin of its fetch's lock, it goes as a Gap of its own.
        let (topics, _) = q.take_at(NOW + LOCK - 1_500, LOCK);
        assert_eq!(batches(&topics), vec![(10, 10, vec![0])]);
        q.push(key, pending(0, 9, 1), false);
        let (topics, _) = q.take_at(NOW + LOCK - 1_400, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
    }

    #[test]
    fn a_gap_folded_too_near_the_end_of_its_lock_is_not_sent() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + 800, true);
        q.push(key, pending(0, 9, 1), false);
        let (topics, in_flight) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        assert_eq!(in_flight.folded_gaps(), 0);
    }

    #[test]
    fn a_gap_given_up_as_such_is_no_longer_held() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 12, NOW + LOCK, true);
        q.push(key, PendingAck::from_engine(10, 12, GAP), false);
        assert_eq!(q.held_gap_offsets(), 0);
        q.push(key, pending(0, 9, 1), false);
        let (topics, _) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1]), (10, 12, vec![0])]);
    }

    #[test]
    fn settling_the_held_gaps_skips_those_near_their_end() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.hold_gap(key, 20, 20, NOW + 500, true);
        q.settle_held_gaps(NOW);
        let (topics, _) = q.take();
        assert_eq!(batches(&topics), vec![(10, 10, vec![0])]);
    }

    #[test]
    fn a_lost_connection_takes_the_folds_with_it() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.hold_gap(key, 30, 30, NOW + LOCK, true);
        q.push(key, pending(0, 9, 1), false);
        let (_, in_flight) = q.take_at(NOW, LOCK);
        let (resent, dropped) = in_flight.without_any_folds();
        assert_eq!(dropped, 1);
        assert_eq!(resent.record_counts(), [0, 10, 0, 0, 0]);
        q.forget_all_gaps();
        q.requeue(resent);
        let (topics, _) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
    }

    #[test]
    fn a_gap_its_records_do_not_settle_goes_as_a_gap_before_its_lock_ends_or_not_at_all() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.hold_gap(key, 20, 21, NOW + 500, true);
        // 2 s before the first's deadline: a Gap; the second's lock has run out: dropped, never
        // acknowledged (the broker may have handed it to another member).
        let (topics, in_flight) = q.take_at(NOW + LOCK - 2_000, LOCK);
        assert_eq!(batches(&topics), vec![(10, 10, vec![0])]);
        assert_eq!(in_flight.record_counts(), [1, 0, 0, 0, 0]);
        assert_eq!(q.held_gap_offsets(), 0);
        // Records beside a dropped gap are accepted alone.
        q.push(key, pending(22, 30, 1), false);
        let (topics, _) = q.take_at(NOW + LOCK, LOCK);
        assert_eq!(batches(&topics), vec![(22, 30, vec![1])]);
    }

    #[test]
    fn without_folding_or_once_refused_a_gap_goes_at_once() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, false);
        assert!(!q.is_empty());
        let (topics, _) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(10, 10, vec![0])]);
        q.hold_gap(key, 20, 20, NOW + LOCK, true);
        q.folds_refused(NOW);
        let (topics, _) = q.take_at(NOW, LOCK);
        assert_eq!(
            batches(&topics),
            vec![(20, 20, vec![0])],
            "the held one goes too"
        );
        q.hold_gap(key, 30, 30, NOW + LOCK, true);
        assert_eq!(q.held_gap_offsets(), 0);
    }

    #[test]
    fn a_refused_fold_is_sent_again_without_the_gap_with_its_waiter() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        let (tx, mut rx) = oneshot::channel();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.push(key, PendingAck::from_caller(0, 9, 1, Some(tx)), false);
        let (_, mut in_flight) = q.take_at(NOW, LOCK);
        assert!(in_flight.may_be_refused_fold(&key, error_codes::INVALID_RECORD_STATE));
        assert!(!in_flight.may_be_refused_fold(&key, error_codes::NOT_LEADER_OR_FOLLOWER));
        let (resent, dropped) = in_flight.without_folds(&key);
        assert_eq!((resent.records(), dropped), (10, 1));
        assert_eq!(resent.record_counts(), [0, 10, 0, 0, 0]);
        q.requeue(resent);
        let (topics, in_flight) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1])]);
        assert!(in_flight.refusal_confirmed(&key) && in_flight.any_refusal_confirmed());
        assert!(!in_flight.may_be_refused_fold(&key, error_codes::INVALID_RECORD_STATE));
        let mut in_flight = in_flight;
        in_flight.resolve_partition(&key, (error_codes::NONE, None));
        assert_eq!(rx.try_recv().unwrap().0, error_codes::NONE);
    }

    #[test]
    fn a_success_that_carried_a_new_fold_proves_no_refusal() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 10, NOW + LOCK, true);
        q.push(key, pending(0, 9, 1), false);
        let (_, mut in_flight) = q.take_at(NOW, LOCK);
        let (resent, _) = in_flight.without_folds(&key);
        // Meanwhile the records after the next marker were accepted: their fold rides along.
        q.hold_gap(key, 20, 20, NOW + LOCK, true);
        q.push(key, pending(11, 19, 1), false);
        q.requeue(resent);
        let (topics, in_flight) = q.take_at(NOW, LOCK);
        assert_eq!(batches(&topics), vec![(0, 9, vec![1]), (11, 20, vec![1])]);
        assert!(
            !in_flight.refusal_confirmed(&key),
            "the broker took a fold in this very request"
        );
    }

    #[test]
    fn a_gap_acquired_again_replaces_what_was_held_of_it() {
        let key = (Uuid::from_u128(1), 0);
        let mut q = AckQueue::default();
        q.hold_gap(key, 10, 12, NOW + 100, true);
        q.hold_gap(key, 11, 11, NOW + LOCK, true);
        assert_eq!(q.held_gap_offsets(), 1);
        q.forget_gaps(&key);
        assert_eq!(q.held_gap_offsets(), 0);
    }
}
