package io.sharesink.engine;

/** A point-in-time snapshot of one engine member's counters. */
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
    long recordsInFlight) {}
