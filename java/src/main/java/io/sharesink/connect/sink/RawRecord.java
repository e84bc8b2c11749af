package io.sharesink.connect.sink;

import io.sharesink.engine.ShareBatch;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/**
 * One acquired record as the broker delivered it: original coordinates and raw bytes. Kept while
 * the record is held, for the dead letter queue and for {@code InternalSinkRecord}.
 */
public record RawRecord(
    String topic,
    int partition,
    long offset,
    long timestamp,
    int timestampTypeId,
    byte[] key,
    byte[] value,
    List<ShareBatch.Header> headers,
    int deliveryCount) {

  /** Copies record {@code i} out of a batch (a batch is only valid until the next poll). */
  public static RawRecord from(ShareBatch batch, int i) {
    return new RawRecord(
        batch.topic(i),
        batch.partition(i),
        batch.offset(i),
        batch.timestamp(i),
        batch.timestampType(i),
        batch.key(i),
        batch.value(i),
        List.copyOf(batch.headers(i)),
        batch.deliveryCount(i));
  }

  public TopicPartition topicPartition() {
    return new TopicPartition(topic, partition);
  }

  public TimestampType timestampType() {
    return switch (timestampTypeId) {
      case 0 -> TimestampType.CREATE_TIME;
      case 1 -> TimestampType.LOG_APPEND_TIME;
      default -> TimestampType.NO_TIMESTAMP_TYPE;
    };
  }

  public RecordHeaders kafkaHeaders() {
    RecordHeaders kafkaHeaders = new RecordHeaders();
    for (ShareBatch.Header header : headers) {
      kafkaHeaders.add(header.key(), header.value());
    }
    return kafkaHeaders;
  }

  /**
   * The record as a consumer would have returned it, as the Connect runtime keeps it, with headers
   * built by {@link #kafkaHeaders}: the runtime's converters and its InternalSinkRecord share the
   * consumer record's one instance too.
   */
  public ConsumerRecord<byte[], byte[]> toConsumerRecord(RecordHeaders kafkaHeaders) {
    return new ConsumerRecord<>(
        topic,
        partition,
        offset,
        timestamp,
        timestampType(),
        key == null ? -1 : key.length,
        value == null ? -1 : value.length,
        key,
        value,
        kafkaHeaders,
        Optional.empty(),
        Optional.of((short) Math.min(deliveryCount, Short.MAX_VALUE)));
  }

  @Override
  public String toString() {
    return topic + "-" + partition + "@" + offset;
  }
}
