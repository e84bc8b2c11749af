package io.sharesink.engine;

import java.util.List;

/**
 * A batch of acquired records, read by index. Implementations read a compact buffer without
 * per-record native calls; a batch is valid until the next poll or close of its engine.
 */
public interface ShareBatch {

  /** A record header: key and value bytes (value may be null). */
  record Header(String key, byte[] value) {}

  int size();

  default boolean isEmpty() {
    return size() == 0;
  }

  String topic(int i);

  int partition(int i);

  long offset(int i);

  /** Record timestamp in ms, or -1 when the record has none. */
  long timestamp(int i);

  /** 0 = CreateTime, 1 = LogAppendTime, -1 = none (as in Kafka's TimestampType ids). */
  int timestampType(int i);

  /** How many times this record has been acquired, 1 on the first delivery. */
  int deliveryCount(int i);

  /** Wall-clock ms since the epoch when this record's acquisition lock expires. */
  long lockDeadlineMs(int i);

  /**
   * The offset of the last record this member receives from the acquired range that holds record
   * {@code i} (the broker's unit of acquisition). The broker keeps one state for a range that is
   * acknowledged whole, and one per offset once part of it is. Defaults to the record's own offset:
   * no range is known.
   */
  default long acquiredLastOffset(int i) {
    return offset(i);
  }

  /** A copy of the key bytes, or null. */
  byte[] key(int i);

  /** A copy of the value bytes, or null. */
  byte[] value(int i);

  List<Header> headers(int i);
}
