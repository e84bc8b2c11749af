package io.sharesink.engine;

/**
 * The metrics layout: the {@code long[]} {@link NativeEngine#metrics} fills with one member's
 * counters, read here by name into {@link EngineMetrics}. The writer is {@code
 * rust/jni/src/metrics_layout.rs}; keep both in step ({@code MetricsLayoutTest} reads the native
 * self-test values to check they agree).
 *
 * <p>Counters are capped at {@code Long.MAX_VALUE}; averages are doubles stored as their raw bits.
 *
 * <pre>
 * index  value
 *    0   records fetched               11   ack latency avg ms (double bits)
 *    1   bytes fetched                 12   records in flight
 *    2   gap-acknowledged records      13   records buffered
 *    3   accepted records              14   rejoins
 *    4   released records              15   session resets
 *    5   rejected records              16   records expired
 *    6   renewed records               17   records released unpolled
 *    7   ack errors                    18   records renewed unpolled
 *    8   fetch requests                19   acks resent
 *    9   fetch latency avg ms (bits)   20   ack conflicts
 *   10   ack requests                  21   corrupt batches
 *                                      22   empty fetches
 *                                      23   memory bytes
 *                                      24   records released for memory
 * </pre>
 */
final class MetricsLayout {

  private MetricsLayout() {}

  static final int RECORDS_FETCHED = 0;
  static final int BYTES_FETCHED = 1;
  static final int GAP_ACKED = 2;
  static final int ACCEPTED = 3;
  static final int RELEASED = 4;
  static final int REJECTED = 5;
  static final int RENEWED = 6;
  static final int ACK_ERRORS = 7;
  static final int FETCH_REQUESTS = 8;
  static final int FETCH_LATENCY_AVG_MS = 9;
  static final int ACK_REQUESTS = 10;
  static final int ACK_LATENCY_AVG_MS = 11;
  static final int RECORDS_IN_FLIGHT = 12;
  static final int RECORDS_BUFFERED = 13;
  static final int REJOINS = 14;
  static final int SESSION_RESETS = 15;
  static final int RECORDS_EXPIRED = 16;
  static final int RECORDS_RELEASED_UNPOLLED = 17;
  static final int RECORDS_RENEWED_UNPOLLED = 18;
  static final int ACKS_RESENT = 19;
  static final int ACK_CONFLICTS = 20;
  static final int CORRUPT_BATCHES = 21;
  static final int FETCHES_EMPTY = 22;
  static final int MEMORY_BYTES = 23;
  static final int RECORDS_RELEASED_MEMORY = 24;

  /** Values the native side writes; the array passed to it must be at least this long. */
  static final int FIELDS = 25;

  /** The snapshot in {@code m}, written by the native side. */
  static EngineMetrics read(long[] m) {
    return new EngineMetrics(
        m[RECORDS_FETCHED],
        m[BYTES_FETCHED],
        m[ACCEPTED],
        m[RELEASED],
        m[REJECTED],
        m[RENEWED],
        m[ACK_ERRORS],
        m[FETCH_REQUESTS],
        Double.longBitsToDouble(m[FETCH_LATENCY_AVG_MS]),
        Double.longBitsToDouble(m[ACK_LATENCY_AVG_MS]),
        m[RECORDS_IN_FLIGHT],
        m[GAP_ACKED],
        m[ACK_REQUESTS],
        m[RECORDS_BUFFERED],
        m[REJOINS],
        m[SESSION_RESETS],
        m[RECORDS_EXPIRED],
        m[RECORDS_RELEASED_UNPOLLED],
        m[RECORDS_RENEWED_UNPOLLED],
        m[ACKS_RESENT],
        m[ACK_CONFLICTS],
        m[CORRUPT_BATCHES],
        m[FETCHES_EMPTY],
        m[MEMORY_BYTES],
        m[RECORDS_RELEASED_MEMORY]);
  }
}
