//! Counters shared by the engine tasks, read as a [`MetricsSnapshot`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::acks::AcksInFlight;

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub records_fetched: AtomicU64,
    pub bytes_fetched: AtomicU64,
    /// Records acknowledged by wire type (0 gap, 1 accept, 2 release, 3 reject, 4 renew).
    pub acked: [AtomicU64; 5],
    pub ack_errors: AtomicU64,
    pub fetch_requests: AtomicU64,
    /// ShareFetches that asked for records and brought none.
    pub fetches_empty: AtomicU64,
    pub fetch_latency_us_total: AtomicU64,
    pub ack_requests: AtomicU64,
    pub ack_latency_us_total: AtomicU64,
    /// Records handed to the caller and not yet acknowledged (approximate).
    pub records_in_flight: AtomicI64,
    pub records_buffered: AtomicI64,
    pub rejoins: AtomicU64,
    pub session_resets: AtomicU64,
    pub records_expired: AtomicU64,
    pub records_released_unpolled: AtomicU64,
    /// Records of buffered batches whose locks the broker renewed while the caller did not poll.
    pub records_renewed_unpolled: AtomicU64,
    /// Records whose acks went out again on a new share session: their request's connection was
    /// lost or timed out, or the broker lost the session, before an answer came.
    pub acks_resent: AtomicU64,
    /// Records of settling acks (accept, release, reject) that contradicted another settling
    /// ack of the same offsets and were refused before sending.
    pub ack_conflicts: AtomicU64,
    /// Record batches that could not be read (CRC, compression, framing); their acquired
    /// records were released, the rest of the response delivered.
    pub corrupt_batches: AtomicU64,
    /// Acquired records released undecoded because decoding them would have passed the
    /// member's or the worker's memory bound while memory was held (see `memory`).
    pub records_released_memory: AtomicU64,
    /// Heartbeats the coordinator answered without error.
    pub heartbeats: AtomicU64,
    /// Gap offsets acknowledged with the ACCEPT of the records beside them (counted in
    /// `acked[0]`, not `acked[1]`).
    pub gaps_folded: AtomicU64,
    /// Gap offsets folded into an ACCEPT that a broker refused (the records' ACCEPT then went
    /// again without them).
    pub gap_folds_refused: AtomicU64,
}

impl Metrics {
    pub fn fetch_done(&self, latency: Duration) {
        self.fetch_requests.fetch_add(1, Relaxed);
        self.fetch_latency_us_total
            .fetch_add(latency.as_micros() as u64, Relaxed);
    }

    pub fn ack_request_done(&self, latency: Duration) {
        self.ack_requests.fetch_add(1, Relaxed);
        self.ack_latency_us_total
            .fetch_add(latency.as_micros() as u64, Relaxed);
    }

    pub fn acks_sent(&self, acks: &AcksInFlight) {
        for (slot, n) in self.acked.iter().zip(acks.record_counts()) {
            slot.fetch_add(n, Relaxed);
        }
        self.records_in_flight
            .fetch_sub(acks.caller_settled() as i64, Relaxed);
        self.ack_conflicts.fetch_add(acks.conflicts, Relaxed);
        self.gaps_folded.fetch_add(acks.folded_gaps(), Relaxed);
    }

    /// Acks taken back into the queue unanswered: undoes what `acks_sent` counted, so the
    /// counts stay those of acks sent once more, and counts the records as resent.
    pub fn acks_requeued(&self, acks: &AcksInFlight) {
        let counts = acks.record_counts();
        for (slot, n) in self.acked.iter().zip(counts) {
            slot.fetch_sub(n, Relaxed);
        }
        self.records_in_flight
            .fetch_add(acks.caller_settled() as i64, Relaxed);
        self.gaps_folded.fetch_sub(acks.folded_gaps(), Relaxed);
        self.acks_resent
            .fetch_add(counts.iter().fold(0, |a, n| a.saturating_add(*n)), Relaxed);
    }

    /// Folded gaps sent and then dropped unapplied (`refused` by the broker, or lost with their
    /// connection): no longer counted as acknowledged.
    pub fn folds_dropped(&self, records: u64, refused: bool) {
        if records == 0 {
            return;
        }
        let undo = |c: &AtomicU64| {
            let _ = c.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(records)));
        };
        undo(&self.acked[0]);
        undo(&self.gaps_folded);
        if refused {
            self.gap_folds_refused.fetch_add(records, Relaxed);
        }
    }

    pub fn snapshot(&self) -> MetricsSnapshot {
        let avg_ms = |total: &AtomicU64, n: u64| {
            if n == 0 {
                0.0
            } else {
                total.load(Relaxed) as f64 / n as f64 / 1000.0
            }
        };
        let fetch_requests = self.fetch_requests.load(Relaxed);
        let ack_requests = self.ack_requests.load(Relaxed);
        MetricsSnapshot {
            records_fetched: self.records_fetched.load(Relaxed),
            bytes_fetched: self.bytes_fetched.load(Relaxed),
            gap_acked: self.acked[0].load(Relaxed),
            accepted: self.acked[1].load(Relaxed),
            released: self.acked[2].load(Relaxed),
            rejected: self.acked[3].load(Relaxed),
            renewed: self.acked[4].load(Relaxed),
            ack_errors: self.ack_errors.load(Relaxed),
            fetch_requests,
            fetches_empty: self.fetches_empty.load(Relaxed),
            fetch_latency_avg_ms: avg_ms(&self.fetch_latency_us_total, fetch_requests),
            ack_requests,
            ack_latency_avg_ms: avg_ms(&self.ack_latency_us_total, ack_requests),
            records_in_flight: self.records_in_flight.load(Relaxed).max(0) as u64,
            records_buffered: self.records_buffered.load(Relaxed).max(0) as u64,
            rejoins: self.rejoins.load(Relaxed),
            session_resets: self.session_resets.load(Relaxed),
            records_expired: self.records_expired.load(Relaxed),
            records_released_unpolled: self.records_released_unpolled.load(Relaxed),
            records_renewed_unpolled: self.records_renewed_unpolled.load(Relaxed),
            acks_resent: self.acks_resent.load(Relaxed),
            ack_conflicts: self.ack_conflicts.load(Relaxed),
            corrupt_batches: self.corrupt_batches.load(Relaxed),
            records_released_memory: self.records_released_memory.load(Relaxed),
            heartbeats: self.heartbeats.load(Relaxed),
            gaps_folded: self.gaps_folded.load(Relaxed),
            gap_folds_refused: self.gap_folds_refused.load(Relaxed),
            memory_bytes: 0,
        }
    }
}

/// A point-in-time copy of the engine counters. Acknowledgement counts are records (offsets)
/// sent to the broker; latencies are request round trips.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    pub records_fetched: u64,
    /// Key + value bytes of fetched records.
    pub bytes_fetched: u64,
    pub gap_acked: u64,
    pub accepted: u64,
    pub released: u64,
    pub rejected: u64,
    pub renewed: u64,
    /// Acknowledged ranges the broker (or the engine) refused.
    pub ack_errors: u64,
    pub fetch_requests: u64,
    /// ShareFetches that asked for records and brought none (a full window, an idle topic).
    pub fetches_empty: u64,
    pub fetch_latency_avg_ms: f64,
    /// ShareAcknowledge requests (acks on ShareFetch are counted under fetches).
    pub ack_requests: u64,
    pub ack_latency_avg_ms: f64,
    /// Records polled by the caller and not yet accepted/released/rejected.
    pub records_in_flight: u64,
    /// Records fetched and waiting for `poll`.
    pub records_buffered: u64,
    pub rejoins: u64,
    pub session_resets: u64,
    /// Buffered records dropped because their lock had run out, or the broker refused to renew
    /// it: they are no longer this member's to hand out.
    pub records_expired: u64,
    /// Buffered records released because the caller had not polled for
    /// `share.buffer.hold.max.ms` (another member can take them; each costs a delivery attempt).
    pub records_released_unpolled: u64,
    /// Buffered records whose locks were renewed (confirmed by the broker) while they waited for
    /// the caller to poll.
    pub records_renewed_unpolled: u64,
    /// Records whose acknowledgements were sent again on a new share session after their
    /// request went unanswered (connection lost or timed out, session lost). The broker refuses
    /// those it released meanwhile (counted in `ack_errors`); they are redelivered.
    pub acks_resent: u64,
    /// Records of settling acks refused before sending because another settling ack of a
    /// different type covered the same offsets (logged at WARN).
    pub ack_conflicts: u64,
    /// Record batches that could not be read; their acquired records were released.
    pub corrupt_batches: u64,
    /// Acquired records released undecoded because the member's or the worker's memory was
    /// held (each costs a delivery attempt); see `share.memory.max.bytes`.
    pub records_released_memory: u64,
    /// Heartbeats the group coordinator answered without error.
    pub heartbeats: u64,
    /// Gap offsets (transaction markers) acknowledged with the ACCEPT of the records beside
    /// them, so their acquired range stayed whole (counted in `gap_acked` too).
    pub gaps_folded: u64,
    /// Gap offsets folded into an ACCEPT that a broker refused; its gaps then go as Gap.
    pub gap_folds_refused: u64,
    /// Decoded bytes the member holds now: the response being decoded, the buffer, and the
    /// batches polled and not yet dropped.
    pub memory_bytes: u64,
}
