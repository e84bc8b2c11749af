package io.sharesink.engine.kafka;

import io.sharesink.engine.ShareBatch;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** A {@link ShareBatch} over records returned by the Java share consumer. */
final class RecordListBatch implements ShareBatch {

  private final List<ConsumerRecord<byte[], byte[]>> records;
  private final List<Long> lockDeadlines;

  RecordListBatch(List<ConsumerRecord<byte[], byte[]>> records, List<Long> lockDeadlines) {
    this.records = records;
    this.lockDeadlines = lockDeadlines;
  }

  @Override
  public int size() {
    return records.size();
  }

  @Override
  public String topic(int i) {
    return records.get(i).topic();
  }

  @Override
  public int partition(int i) {
    return records.get(i).partition();
  }

  @Override
  public long offset(int i) {
    return records.get(i).offset();
  }

  @Override
  public long timestamp(int i) {
    return records.get(i).timestamp();
  }

  @Override
  public int timestampType(int i) {
    return records.get(i).timestampType().id;
  }

  @Override
  public int deliveryCount(int i) {
    return records.get(i).deliveryCount().map(Short::intValue).orElse(1);
  }

  @Override
  public long lockDeadlineMs(int i) {
    return lockDeadlines.get(i);
  }

  @Override
  public byte[] key(int i) {
    byte[] key = records.get(i).key();
    return key == null ? null : key.clone();
  }

  @Override
  public byte[] value(int i) {
    byte[] value = records.get(i).value();
    return value == null ? null : value.clone();
  }

  @Override
  public List<ShareBatch.Header> headers(int i) {
    List<ShareBatch.Header> headers = new ArrayList<>();
    for (org.apache.kafka.common.header.Header header : records.get(i).headers()) {
      headers.add(new ShareBatch.Header(header.key(), header.value()));
    }
    return headers;
  }
}
