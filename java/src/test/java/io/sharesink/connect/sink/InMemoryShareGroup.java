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
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Time;

/**
 * A share group's partitions kept in memory, standing in for the broker behind our own {@link
 * ShareConsumerEngine} interface in driver unit tests and the at-least-once simulation (the
 * broker-backed tests use the real thing). It enforces what the broker enforces: only records
 * acquired by a member, with an unexpired lock, may be acknowledged by it; a partition's ranges in
 * one request are applied all or nothing; an expired lock or a RELEASE makes the record available
 * again with its delivery count kept, and archives it instead once the count has reached the
 * delivery count limit. Every violation is recorded so tests can assert there were none.
 *
 * <p>The group itself is the engine of its first member; {@link #member} adds more. Time comes from
 * the given clock: a poll that finds nothing sleeps its timeout on it (a {@link MockTime} in
 * tests).
 */
final class InMemoryShareGroup implements ShareConsumerEngine {

  enum State {
    AVAILABLE,
    ACQUIRED,
    ACCEPTED,
    REJECTED,
    /** Released or expired at the delivery count limit: lost unless a DLQ keeps it. */
    ARCHIVED
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
    Member owner;

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

    @Override
    public String toString() {
      return topic
          + "-"
          + partition
          + "@"
          + offset
          + "["
          + state
          + " #"
          + deliveryCount
          + (owner == null ? "" : " " + owner.name)
          + "]";
    }
  }

  private final Map<String, List<Rec>> log = new LinkedHashMap<>();
  private final Time time;
  private final long lockMs;
  private final int maxRecords;
  private final Member first;
  final List<Acknowledgements.Range> received = Collections.synchronizedList(new ArrayList<>());
  final List<String> violations = Collections.synchronizedList(new ArrayList<>());
  int expiredLocks;

  /** Offsets of refused acknowledgements: those of a failing range and those undone with it. */
  long rolledBack;

  /** As the group's share.delivery.count.limit; unlimited unless a test sets it. */
  int deliveryCountLimit = Integer.MAX_VALUE;

  Consumer<Rec> onAccept = rec -> {};

  /** When set, every poll throws it (an engine whose member failed: a panic, a fatal error). */
  volatile RuntimeException pollFailure;

  /**
   * When above 0, offsets are acquired in ranges of this many (0-9, 10-19, ... for 10), which a
   * poll may hand out over several batches, as the engine does with a broker's acquired range.
   */
  int acquiredRangeSize;

  /** A group over partition t-0 holding {@code count} records with values v0, v1, ... */
  static InMemoryShareGroup withValues(Time time, long lockMs, int maxRecords, int count) {
    InMemoryShareGroup group = new InMemoryShareGroup(time, lockMs, maxRecords);
    for (int i = 0; i < count; i++) {
      group.produce("t", 0, null, "v" + i);
    }
    return group;
  }

  InMemoryShareGroup(Time time, long lockMs, int maxRecords) {
    this.time = time;
    this.lockMs = lockMs;
    this.maxRecords = maxRecords;
    this.first = new Member("m0", maxRecords);
  }

  /** The group's clock. */
  Time time() {
    return time;
  }

  /** Another member of the group (its own acquisitions, its own session). */
  synchronized Member member(String name) {
    return new Member(name, maxRecords);
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
        new Rec(topic, partition, partitionLog.size(), key, value, time.milliseconds(), headers);
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

  synchronized List<Acknowledgements.Range> received(AckType type) {
    return received.stream().filter(r -> r.type() == type).toList();
  }

  /** Makes an expired or released record available again, or archives it at the limit. */
  private void free(Rec rec) {
    rec.owner = null;
    rec.state = rec.deliveryCount >= deliveryCountLimit ? State.ARCHIVED : State.AVAILABLE;
  }

  private void expireLocks(long now) {
    for (List<Rec> partitionLog : log.values()) {
      for (Rec rec : partitionLog) {
        if (rec.state == State.ACQUIRED && rec.lockDeadlineMs <= now) {
          if (!rec.owner.closed) {
            rec.owner.locksLost++; // a live member let it run out: a delivery attempt burnt
          }
          free(rec);
          expiredLocks++;
        }
      }
    }
  }

  @Override
  public ShareBatch poll(Duration timeout) {
    return first.poll(timeout);
  }

  @Override
  public void acknowledge(Acknowledgements acks) {
    first.acknowledge(acks);
  }

  @Override
  public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
    return first.acknowledgeSync(acks, timeout);
  }

  @Override
  public void subscribe(Collection<String> topics) {
    // One in-memory group holds one topic set; the driver's tests never change it.
  }

  @Override
  public void wakeup() {
    first.wakeup();
  }

  @Override
  public EngineMetrics metrics() {
    return first.metrics();
  }

  /** As the engine's close: everything still acquired by the first member is released at once. */
  @Override
  public void close() {
    first.close();
  }

  boolean closed() {
    return first.closed;
  }

  /** One member of the group: a {@link ShareConsumerEngine} over the shared state. */
  final class Member implements ShareConsumerEngine {
    final String name;
    private final int maxRecords;
    private boolean closed;
    private boolean woken;

    /** Locks that ran out while this member was alive (not crashed, not closed). */
    int locksLost;

    /** Polls and records handed out, reported as the engine's fetch counters. */
    private long polls;

    private long recordsHandedOut;

    Member(String name, int maxRecords) {
      this.name = name;
      this.maxRecords = maxRecords;
    }

    @Override
    public ShareBatch poll(Duration timeout) {
      List<Rec> batch = new ArrayList<>();
      synchronized (InMemoryShareGroup.this) {
        if (closed) {
          throw new IllegalStateException(name + " is closed");
        }
        if (pollFailure != null) {
          throw pollFailure;
        }
        long now = time.milliseconds();
        expireLocks(now);
        polls++;
        for (List<Rec> partitionLog : log.values()) {
          for (Rec rec : partitionLog) {
            if (batch.size() >= maxRecords) {
              break;
            }
            if (rec.state == State.AVAILABLE) {
              rec.state = State.ACQUIRED;
              rec.owner = this;
              rec.deliveryCount++;
              rec.lockDeadlineMs = now + lockMs;
              batch.add(rec);
              recordsHandedOut++;
            }
          }
        }
        if (!batch.isEmpty() || woken) {
          woken = false;
          return new Batch(batch, acquiredRangeSize);
        }
      }
      // Nothing to hand out: wait the timeout out on the group's clock.
      time.sleep(Math.max(0, timeout.toMillis()));
      return new Batch(batch, acquiredRangeSize);
    }

    @Override
    public void acknowledge(Acknowledgements acks) {
      synchronized (InMemoryShareGroup.this) {
        ensureOpen();
        apply(acks);
      }
    }

    @Override
    public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
      synchronized (InMemoryShareGroup.this) {
        ensureOpen();
        return apply(acks);
      }
    }

    /** A closed (or crashed) member's session is gone: nothing it sends reaches the group. */
    private void ensureOpen() {
      if (closed) {
        throw new IllegalStateException(name + " is closed");
      }
    }

    /**
     * As the broker's SharePartition.acknowledge: the ranges of one partition in one request are
     * applied all or nothing; one range holding a record this member does not hold fails them all
     * (INVALID_RECORD_STATE) and undoes the others.
     */
    private List<AckResult> apply(Acknowledgements acks) {
      long now = time.milliseconds();
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
            if (rec.state != State.ACQUIRED || rec.owner != this) {
              violations.add(
                  range.type()
                      + " of "
                      + rec.topic
                      + "-"
                      + rec.partition
                      + "@"
                      + offset
                      + " by "
                      + name
                      + " in state "
                      + rec.state
                      + (rec.owner == null ? "" : " held by " + rec.owner.name));
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
                rec.owner = null;
                onAccept.accept(rec);
              }
              case RELEASE -> free(rec);
              case REJECT -> {
                rec.state = State.REJECTED;
                rec.owner = null;
              }
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

    @Override
    public void subscribe(Collection<String> topics) {}

    @Override
    public void wakeup() {
      synchronized (InMemoryShareGroup.this) {
        woken = true;
      }
    }

    @Override
    public EngineMetrics metrics() {
      synchronized (InMemoryShareGroup.this) {
        ensureOpen(); // as the native engine: a closed one refuses
        return new EngineMetrics(
            recordsHandedOut,
            0,
            0,
            0,
            0,
            0,
            0,
            polls,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0);
      }
    }

    /** The session ends: everything this member still holds is released at once. */
    @Override
    public void close() {
      synchronized (InMemoryShareGroup.this) {
        closed = true;
        for (Rec rec : all()) {
          if (rec.state == State.ACQUIRED && rec.owner == this) {
            free(rec);
          }
        }
      }
    }

    /** The member's process dies (kill -9): it releases nothing; its locks run out. */
    void crash() {
      synchronized (InMemoryShareGroup.this) {
        closed = true;
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
