package io.sharesink.engine;

/**
 * A point-in-time snapshot of one engine member's counters. Acknowledgement counts are records
 * (offsets) sent to the broker; latencies are request round trips. The native engine fills every
 * component ({@link MetricsLayout}); the Java share consumer ({@code share.engine=java}) fills the
 * first eleven and leaves the native engine's own counters (from {@code gapAckedRecords} on) at 0.
 *
 * @param recordsFetched records fetched
 * @param bytesFetched key + value bytes of fetched records
 * @param acceptedRecords records acknowledged ACCEPT
 * @param releasedRecords records acknowledged RELEASE
 * @param rejectedRecords records acknowledged REJECT
 * @param renewedRecords records acknowledged RENEW
 * @param ackErrors acknowledged ranges the broker (or the engine) refused
 * @param fetchRequests fetch requests (Java engine: polls)
 * @param fetchLatencyAvgMs average fetch round trip
 * @param ackLatencyAvgMs average acknowledgement round trip
 * @param recordsInFlight records handed out and not yet acknowledged
 * @param gapAckedRecords acquired offsets without a record (control batches, compaction holes),
 *     acknowledged by the engine itself
 * @param ackRequests ShareAcknowledge requests (acknowledgements on fetches count as fetches)
 * @param recordsBuffered records fetched and waiting for a poll
 * @param rejoins times the member joined the group again after being fenced
 * @param sessionResets share sessions opened again (connection lost, session lost)
 * @param recordsExpired buffered records dropped because their lock ran out, or the broker refused
 *     to renew it
 * @param recordsReleasedUnpolled buffered records released because no poll came for {@code
 *     share.buffer.hold.max.ms}
 * @param recordsRenewedUnpolled buffered records whose locks the engine renewed while no poll came
 * @param acksResent records whose acknowledgements went out again on a new share session
 * @param ackConflicts records of acknowledgements refused before sending because another of a
 *     different type covered the same offsets
 * @param corruptBatches record batches that could not be read (their records were released)
 * @param emptyFetches fetch requests that asked for records and brought none (a window full of
 *     locked records, an idle topic)
 * @param memoryBytes decoded bytes of records the member holds now (the native engine's count
 *     against share.memory.max.bytes; 0 where the engine does not count)
 * @param recordsReleasedForMemory acquired records released undecoded because the member's or the
 *     worker's memory was held (each costs a delivery attempt)
 */
public record EngineMetrics(
    long recordsFetched,
    long bytesFetched,
    long acceptedRecords,
    long releasedRecords,
    long rejectedRecords,
    long renewedRecords,
    long ackErrors,
    long fetchRequests,
    double fetchLatencyAvgMs,
    double ackLatencyAvgMs,
    long recordsInFlight,
    long gapAckedRecords,
    long ackRequests,
    long recordsBuffered,
    long rejoins,
    long sessionResets,
    long recordsExpired,
    long recordsReleasedUnpolled,
    long recordsRenewedUnpolled,
    long acksResent,
    long ackConflicts,
    long corruptBatches,
    long emptyFetches,
    long memoryBytes,
    long recordsReleasedForMemory) {}
