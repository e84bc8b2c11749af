//! The metrics layout: the `long[]` that `NativeEngine.metrics` fills with one member's counters,
//! read by name in Java (`io.sharesink.engine.MetricsLayout` → `EngineMetrics`). Keep this
//! comment, the constants below and `MetricsLayout.java` in step; the self-test on both sides
//! (`metricsLayoutSelfTest`, `MetricsLayoutTest`) checks that writer and reader agree.
//!
//! Counters are `u64` capped at `i64::MAX`; averages are `f64` stored as their raw bits
//! (`Double.longBitsToDouble` in Java).
//!
//! ```text
//! index  value (MetricsSnapshot field)
//!    0   records_fetched
//!    1   bytes_fetched
//!    2   gap_acked
//!    3   accepted
//!    4   released
//!    5   rejected
//!    6   renewed
//!    7   ack_errors
//!    8   fetch_requests
//!    9   fetch_latency_avg_ms (f64 bits)
//!   10   ack_requests
//!   11   ack_latency_avg_ms (f64 bits)
//!   12   records_in_flight
//!   13   records_buffered
//!   14   rejoins
//!   15   session_resets
//!   16   records_expired
//!   17   records_released_unpolled
//!   18   records_renewed_unpolled
//!   19   acks_resent
//!   20   ack_conflicts
//!   21   corrupt_batches
//!   22   fetches_empty
//!   23   memory_bytes
//!   24   records_released_memory
//! ```

use sharesink_engine::MetricsSnapshot;

pub(crate) const RECORDS_FETCHED: usize = 0;
pub(crate) const BYTES_FETCHED: usize = 1;
pub(crate) const GAP_ACKED: usize = 2;
pub(crate) const ACCEPTED: usize = 3;
pub(crate) const RELEASED: usize = 4;
pub(crate) const REJECTED: usize = 5;
pub(crate) const RENEWED: usize = 6;
pub(crate) const ACK_ERRORS: usize = 7;
pub(crate) const FETCH_REQUESTS: usize = 8;
pub(crate) const FETCH_LATENCY_AVG_MS: usize = 9;
pub(crate) const ACK_REQUESTS: usize = 10;
pub(crate) const ACK_LATENCY_AVG_MS: usize = 11;
pub(crate) const RECORDS_IN_FLIGHT: usize = 12;
pub(crate) const RECORDS_BUFFERED: usize = 13;
pub(crate) const REJOINS: usize = 14;
pub(crate) const SESSION_RESETS: usize = 15;
pub(crate) const RECORDS_EXPIRED: usize = 16;
pub(crate) const RECORDS_RELEASED_UNPOLLED: usize = 17;
pub(crate) const RECORDS_RENEWED_UNPOLLED: usize = 18;
pub(crate) const ACKS_RESENT: usize = 19;
pub(crate) const ACK_CONFLICTS: usize = 20;
pub(crate) const CORRUPT_BATCHES: usize = 21;
pub(crate) const FETCHES_EMPTY: usize = 22;
pub(crate) const MEMORY_BYTES: usize = 23;
pub(crate) const RECORDS_RELEASED_MEMORY: usize = 24;

/// Values written; Java's array must be at least this long.
pub(crate) const FIELDS: usize = 25;

/// The array `metrics` writes for `m`.
pub(crate) fn write(m: &MetricsSnapshot) -> [i64; FIELDS] {
    let n = |v: u64| v.min(i64::MAX as u64) as i64;
    let mut out = [0i64; FIELDS];
    out[RECORDS_FETCHED] = n(m.records_fetched);
    out[BYTES_FETCHED] = n(m.bytes_fetched);
    out[GAP_ACKED] = n(m.gap_acked);
    out[ACCEPTED] = n(m.accepted);
    out[RELEASED] = n(m.released);
    out[REJECTED] = n(m.rejected);
    out[RENEWED] = n(m.renewed);
    out[ACK_ERRORS] = n(m.ack_errors);
    out[FETCH_REQUESTS] = n(m.fetch_requests);
    out[FETCH_LATENCY_AVG_MS] = m.fetch_latency_avg_ms.to_bits() as i64;
    out[ACK_REQUESTS] = n(m.ack_requests);
    out[ACK_LATENCY_AVG_MS] = m.ack_latency_avg_ms.to_bits() as i64;
    out[RECORDS_IN_FLIGHT] = n(m.records_in_flight);
    out[RECORDS_BUFFERED] = n(m.records_buffered);
    out[REJOINS] = n(m.rejoins);
    out[SESSION_RESETS] = n(m.session_resets);
    out[RECORDS_EXPIRED] = n(m.records_expired);
    out[RECORDS_RELEASED_UNPOLLED] = n(m.records_released_unpolled);
    out[RECORDS_RENEWED_UNPOLLED] = n(m.records_renewed_unpolled);
    out[ACKS_RESENT] = n(m.acks_resent);
    out[ACK_CONFLICTS] = n(m.ack_conflicts);
    out[CORRUPT_BATCHES] = n(m.corrupt_batches);
    out[FETCHES_EMPTY] = n(m.fetches_empty);
    out[MEMORY_BYTES] = n(m.memory_bytes);
    out[RECORDS_RELEASED_MEMORY] = n(m.records_released_memory);
    out
}

/// The snapshot `metricsLayoutSelfTest` writes; `MetricsLayoutTest` expects exactly this: the
/// field documented at index i above holds 100 + i (the two averages 100.5 + i). Literals, not
/// derived from the constants, so that a constant moved on this side shows as well.
pub(crate) fn self_test_snapshot() -> MetricsSnapshot {
    MetricsSnapshot {
        records_fetched: 100,
        bytes_fetched: 101,
        gap_acked: 102,
        accepted: 103,
        released: 104,
        rejected: 105,
        renewed: 106,
        ack_errors: 107,
        fetch_requests: 108,
        fetch_latency_avg_ms: 109.5,
        ack_requests: 110,
        ack_latency_avg_ms: 111.5,
        records_in_flight: 112,
        records_buffered: 113,
        rejoins: 114,
        session_resets: 115,
        records_expired: 116,
        records_released_unpolled: 117,
        records_renewed_unpolled: 118,
        acks_resent: 119,
        ack_conflicts: 120,
        corrupt_batches: 121,
        fetches_empty: 122,
        memory_bytes: 123,
        records_released_memory: 124,
        // Not in the layout (yet): read by the engine's own tests.
        ..MetricsSnapshot::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_is_written_once_in_order() {
        let out = write(&self_test_snapshot());
        for (i, value) in out.iter().enumerate() {
            let expected = if i == FETCH_LATENCY_AVG_MS || i == ACK_LATENCY_AVG_MS {
                (100.5 + i as f64).to_bits() as i64
            } else {
                100 + i as i64
            };
            assert_eq!(*value, expected, "index {i}");
        }
    }

    #[test]
    fn counters_beyond_a_java_long_are_capped() {
        let m = MetricsSnapshot {
            bytes_fetched: u64::MAX,
            ..MetricsSnapshot::default()
        };
        assert_eq!(write(&m)[BYTES_FETCHED], i64::MAX);
    }
}
