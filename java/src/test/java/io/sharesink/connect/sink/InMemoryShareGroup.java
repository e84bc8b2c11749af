package io.sharesink.connect.sink;

import io.sharesink.engine.AckResult;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.EngineMetrics;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A share partition state machine kept in memory, standing in for the broker behind our own {@link
 * ShareConsumerEngine} interface in driver unit tests (the broker-backed tests use the real thing).
 * It enforces what the broker enforces: only records acquired by this member, with an unexpired
 * lock, may be acknowledged; an expired lock makes the record available again with its delivery
 * count kept. Every violation is recorded so tests can assert there were none.
 */
final class InMemoryShareGroup implements ShareConsumerEngine {

  enum State {
    AVAILABLE,
    ACQUIRED,
    ACCEPTED,
    REJECTED
  }

  static final class Rec {
    final String topic;
    final int partition;
    final long offset;
    final byte[] key;
    final byte[] value;
    final long timestamp;
    final List<ShareBatch.Header> headers;
    State state = State.AVAILABLE;
    int deliveryCount;
    long lockDeadlineMs;

    Rec(
        String topic,
        int partition,
        long offset,
        byte[] key,
        byte[] value,
        long timestamp,
        List<ShareBatch.Header> headers) {
      this.topic = topic;
      this.partition = partition;
      this.offset = offset;
      this.key = key;
      this.value = value;
      this.timestamp = timestamp;
      this.headers = headers;
    }

    String valueString() {
      return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
  }

  private final Map<String, List<Rec>> log = new LinkedHashMap<>();
  private final long lockMs;
  private final int maxRecords;
  final List<Acknowledgements.Range> received = Collections.synchronizedList(new ArrayList<>());
  final List<String> violations = Collections.synchronizedList(new ArrayList<>());
  int expiredLocks;

  /** Offsets of refused acknowledgements: those of a failing range and those undone with it. */
  long rolledBack;

  boolean closed;
  Consumer<Rec> onAccept = rec -> {};

  /**
   * When above 0, offsets are acquired in ranges of this many (0-9, 10-19, ... for 10), which a
   * poll may hand out over several batches, as the engine does with a broker's acquired range.
   */
  int acquiredRangeSize;

  /** A group over partition t-0 holding {@code count} records with values v0, v1, ... */
  static InMemoryShareGroup withValues(long lockMs, int maxRecords, int count) {
    InMemoryShareGroup group = new InMemoryShareGroup(lockMs, maxRecords);
    for (int i = 0; i < count; i++) {
      group.produce("t", 0, null, "v" + i);
    }
    return group;
  }

  InMemoryShareGroup(long lockMs, int maxRecords) {
    this.lockMs = lockMs;
    this.maxRecords = maxRecords;
  }

  synchronized Rec produce(String topic, int partition, String key, String value) {
    return produce(
        topic,
        partition,
        key == null ? null : key.getBytes(StandardCharsets.UTF_8),
        value == null ? null : value.getBytes(StandardCharsets.UTF_8),
        List.of());
  }

  synchronized Rec produce(
      String topic, int partition, byte[] key, byte[] value, List<ShareBatch.Header> headers) {
    List<Rec> partitionLog = log.computeIfAbsent(topic + "-" + partition, k -> new ArrayList<>());
    Rec rec =
        new Rec(
            topic, partition, partitionLog.size(), key, value, System.currentTimeMillis(), headers);
    partitionLog.add(rec);
    return rec;
  }

  synchronized Rec rec(String topic, int partition, long offset) {
    return log.get(topic + "-" + partition).get((int) offset);
  }

  synchronized List<Rec> all() {
    List<Rec> all = new ArrayList<>();
    log.values().forEach(all::addAll);
    return all;
  }

  synchronized long count(State state) {
    return all().stream().filter(r -> r.state == state).count();
  }

  private void expireLocks(long now) {
    for (Rec rec : all()) {
      if (rec.state == State.ACQUIRED && rec.lockDeadlineMs <= now) {
        rec.state = State.AVAILABLE;
        expiredLocks++;
      }
    }
  }

  @Override
  public synchronized ShareBatch poll(Duration timeout) {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    long now = System.currentTimeMillis();
    expireLocks(now);
    List<Rec> batch = new ArrayList<>();
    for (Rec rec : all()) {
      if (batch.size() >= maxRecords) {
        break;
      }
      if (rec.state == State.AVAILABLE) {
        rec.state = State.ACQUIRED;
        rec.deliveryCount++;
        rec.lockDeadlineMs = now + lockMs;
        batch.add(rec);
      }
    }
    if (batch.isEmpty()) {
      try {
        wait(Math.max(1, Math.min(timeout.toMillis(), 20)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return new Batch(batch, acquiredRangeSize);
  }

  @Override
  public synchronized void acknowledge(Acknowledgements acks) {
    apply(acks);
  }

  /**
   * As the broker's SharePartition.acknowledge: the ranges of one partition in one request are
   * applied all or nothing; one range holding a record this member does not hold fails them all
   * (INVALID_RECORD_STATE) and undoes the others.
   */
  private List<AckResult> apply(Acknowledgements acks) {
    long now = System.currentTimeMillis();
    expireLocks(now);
    Map<String, List<Acknowledgements.Range>> byPartition = new LinkedHashMap<>();
    for (Acknowledgements.Range range : acks.ranges()) {
      received.add(range);
      byPartition
          .computeIfAbsent(range.topic() + "-" + range.partition(), k -> new ArrayList<>())
          .add(range);
    }
    Map<Acknowledgements.Range, Short> errors = new LinkedHashMap<>();
    for (List<Acknowledgements.Range> ranges : byPartition.values()) {
      boolean valid = true;
      for (Acknowledgements.Range range : ranges) {
        for (long offset = range.firstOffset(); offset <= range.lastOffset(); offset++) {
          Rec rec = rec(range.topic(), range.partition(), offset);
          if (rec.state != State.ACQUIRED) {
            violations.add(
                range.type()
                    + " of "
                    + rec.topic
                    + "-"
                    + rec.partition
                    + "@"
                    + offset
                    + " in state "
                    + rec.state);
            valid = false;
          }
        }
      }
      for (Acknowledgements.Range range : ranges) {
        errors.put(range, valid ? (short) 0 : (short) 121);
        if (!valid) {
          rolledBack += range.lastOffset() - range.firstOffset() + 1;
          continue;
        }
        for (long offset = range.firstOffset(); offset <= range.lastOffset(); offset++) {
          Rec rec = rec(range.topic(), range.partition(), offset);
          switch (range.type()) {
            case ACCEPT -> {
              rec.state = State.ACCEPTED;
              onAccept.accept(rec);
            }
            case RELEASE -> rec.state = State.AVAILABLE;
            case REJECT -> rec.state = State.REJECTED;
            case RENEW -> rec.lockDeadlineMs = now + lockMs;
          }
        }
      }
    }
    List<AckResult> results = new ArrayList<>();
    for (Acknowledgements.Range range : acks.ranges()) {
      short error = errors.get(range);
      results.add(new AckResult(range, error, error == 0 ? null : "INVALID_RECORD_STATE"));
    }
    return results;
  }

  synchronized List<Acknowledgements.Range> received(AckType type) {
    return received.stream().filter(r -> r.type() == type).toList();
  }

  @Override
  public synchronized List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
    return apply(acks);
  }

  @Override
  public synchronized void wakeup() {
    notifyAll();
  }

  @Override
  public EngineMetrics metrics() {
    return new EngineMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  }

  /** As the engine's close: everything still acquired is released at once. */
  @Override
  public synchronized void close() {
    closed = true;
    for (Rec rec : all()) {
      if (rec.state == State.ACQUIRED) {
        rec.state = State.AVAILABLE;
      }
    }
  }

  private final class Batch implements ShareBatch {
    private final List<Rec> recs;
    private final int rangeSize;

    Batch(List<Rec> recs, int rangeSize) {
      this.recs = recs;
      this.rangeSize = rangeSize;
    }

    @Override
    public long acquiredLastOffset(int i) {
      Rec rec = recs.get(i);
      if (rangeSize <= 0) {
        return rec.offset;
      }
      long end = (rec.offset / rangeSize + 1) * rangeSize - 1;
      synchronized (InMemoryShareGroup.this) {
        return Math.min(end, log.get(rec.topic + "-" + rec.partition).size() - 1);
      }
    }

    @Override
    public int size() {
      return recs.size();
    }

    @Override
    public String topic(int i) {
      return recs.get(i).topic;
    }

    @Override
    public int partition(int i) {
      return recs.get(i).partition;
    }

    @Override
    public long offset(int i) {
      return recs.get(i).offset;
    }

    @Override
    public long timestamp(int i) {
      return recs.get(i).timestamp;
    }

    @Override
    public int timestampType(int i) {
      return 0;
    }

    @Override
    public int deliveryCount(int i) {
      return recs.get(i).deliveryCount;
    }

    @Override
    public long lockDeadlineMs(int i) {
      return recs.get(i).lockDeadlineMs;
    }

    @Override
    public byte[] key(int i) {
      byte[] key = recs.get(i).key;
      return key == null ? null : key.clone();
    }

    @Override
    public byte[] value(int i) {
      byte[] value = recs.get(i).value;
      return value == null ? null : value.clone();
    }

    @Override
    public List<Header> headers(int i) {
      return recs.get(i).headers;
    }
  }
}
