package io.sharesink.engine.kafka;

import io.sharesink.engine.ShareConsumerEngine;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.MockTime;

/**
 * A share consumer over one partition whose share-partition it plays too, on a mock clock, as far
 * as {@link KafkaShareConsumerEngine} relies on it in explicit mode: a poll acquires available
 * records for the lock duration (a new delivery each time), a RENEW restarts the lock of a record
 * still acquired and hands the record back from the next poll, ACCEPT and REJECT end it, RELEASE
 * makes it available again, and a lock that runs out makes it available again too. A poll with
 * nothing to hand out waits out its timeout on the clock, as a real one does.
 */
public final class LockingShareConsumer extends MockShareConsumer<byte[], byte[]> {

  /** A record's state in the share-partition. */
  public enum State {
    AVAILABLE,
    ACQUIRED,
    ACKNOWLEDGED
  }

  private static final class Rec {
    final long offset;
    State state = State.AVAILABLE;
    short deliveries;
    long lockDeadlineMs;

    Rec(long offset) {
      this.offset = offset;
    }
  }

  private final String topic;
  private final MockTime time;
  private final int lockMs;
  private final List<Rec> log = new ArrayList<>();
  private final Set<Long> renewedToReturn = new LinkedHashSet<>();
  private final Map<AcknowledgeType, Long> acknowledged = new HashMap<>();

  public LockingShareConsumer(String topic, int records, MockTime time, int lockMs) {
    this.topic = topic;
    this.time = time;
    this.lockMs = lockMs;
    for (int i = 0; i < records; i++) {
      log.add(new Rec(i));
    }
  }

  /** An engine over this consumer, on its clock. */
  public ShareConsumerEngine engine() {
    return new KafkaShareConsumerEngine(this, "locking-" + topic, List.of(topic), time);
  }

  @Override
  public synchronized ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
    expireLocks();
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    for (long offset : renewedToReturn) {
      Rec rec = log.get((int) offset);
      if (rec.state == State.ACQUIRED) {
        out.add(record(rec));
      }
    }
    renewedToReturn.clear();
    long now = time.milliseconds();
    for (Rec rec : log) {
      if (rec.state == State.AVAILABLE) {
        rec.state = State.ACQUIRED;
        rec.deliveries++;
        rec.lockDeadlineMs = now + lockMs;
        out.add(record(rec));
      }
    }
    if (out.isEmpty()) {
      time.sleep(timeout.toMillis());
      return ConsumerRecords.empty();
    }
    return new ConsumerRecords<>(Map.of(new TopicPartition(topic, 0), out), Map.of());
  }

  @Override
  public synchronized void acknowledge(
      ConsumerRecord<byte[], byte[]> record, AcknowledgeType type) {
    expireLocks();
    Rec rec = log.get((int) record.offset());
    acknowledged.merge(type, 1L, Long::sum);
    if (rec.state != State.ACQUIRED || rec.deliveries != record.deliveryCount().orElse((short) 0)) {
      return; // the broker refuses it: this delivery's lock is gone
    }
    switch (type) {
      case ACCEPT, REJECT -> rec.state = State.ACKNOWLEDGED;
      case RELEASE -> rec.state = State.AVAILABLE;
      case RENEW -> {
        rec.lockDeadlineMs = time.milliseconds() + lockMs;
        renewedToReturn.add(rec.offset);
      }
    }
  }

  @Override
  public Optional<Integer> acquisitionLockTimeoutMs() {
    return Optional.of(lockMs);
  }

  private void expireLocks() {
    long now = time.milliseconds();
    for (Rec rec : log) {
      if (rec.state == State.ACQUIRED && now >= rec.lockDeadlineMs) {
        rec.state = State.AVAILABLE;
      }
    }
  }

  private ConsumerRecord<byte[], byte[]> record(Rec rec) {
    byte[] value = ("v" + rec.offset).getBytes(StandardCharsets.UTF_8);
    return new ConsumerRecord<>(
        topic,
        0,
        rec.offset,
        time.milliseconds(),
        TimestampType.CREATE_TIME,
        0,
        value.length,
        null,
        value,
        new RecordHeaders(),
        Optional.empty(),
        Optional.of(rec.deliveries));
  }

  /** How many records are in {@code state}. */
  public synchronized long count(State state) {
    return log.stream().filter(r -> r.state == state).count();
  }

  /** The record's delivery count so far. */
  public synchronized int deliveries(long offset) {
    return log.get((int) offset).deliveries;
  }

  /** Acknowledgements of each type the engine made. */
  public synchronized Map<AcknowledgeType, Long> acknowledged() {
    return Map.copyOf(acknowledged);
  }
}
