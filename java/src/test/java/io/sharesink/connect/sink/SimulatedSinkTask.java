package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * The legacy sink of the at-least-once simulation ({@link AtLeastOnceSimulationTest}), written for
 * it because it must behave in every way the sink contract allows, on a schedule drawn from a seed:
 * no installable sink does that on demand. Its durable store outlives every instance (a crash, a
 * restart in place); what it buffers dies with the instance.
 *
 * <p>How it commits ({@link Commit}) and how often it misbehaves ({@link Faults}) are drawn per
 * run; every commit mode is honest about what it has written, in the way real sinks are.
 */
final class SimulatedSinkTask extends SinkTask {

  /** What a preCommit returns, after writing what it writes. */
  enum Commit {
    /** Writes every record inside put; preCommit echoes its input (JDBC-style sinks). */
    WRITES_IN_PUT,
    /** Buffers until flush; preCommit writes everything and echoes its input (the default). */
    FLUSH_ALL,
    /**
     * Buffers; preCommit writes only the buffered records below an offset it picks per partition
     * and returns that offset (a sink that reports less than it was given).
     */
    FLUSH_BELOW,
    /**
     * Buffers in arrival order into one open file per partition, written once it holds {@code
     * rollRecords}; preCommit returns the first offset of the open file (or the offset after the
     * last written record when it is empty), or nothing when no file was written yet: how S3-style
     * sinks compute their offset, from the position in the stream.
     */
    ROLLING_FILES,
    /** Buffers; preCommit returns {} until {@code rollRecords} are buffered, then writes all. */
    EMPTY_UNTIL_ROLL
  }

  /** Per-call probabilities of misbehaving, and how long a blocking put blocks. */
  record Faults(
      double putRetriable,
      double putFails,
      double putFailsLater,
      double putBlocks,
      long blockMaxMs,
      double preCommitFails,
      double pauses,
      double requestsCommit) {
    static final Faults NONE = new Faults(0, 0, 0, 0, 0, 0, 0, 0);
  }

  /** What outlives sink instances: the durable store, and what the run draws from. */
  static final class World {
    final Set<String> durable;
    final Random random;
    final Time time;
    volatile boolean healthy;

    /** Puts that blocked for longer than the lock (statistics). */
    long blockedPuts;

    /** The lock duration of the run, to count the puts that block past it. */
    long lockMs;

    World(Set<String> durable, Random random, Time time) {
      this.durable = durable;
      this.random = random;
      this.time = time;
    }
  }

  static String key(String topic, int partition, long offset) {
    return topic + "-" + partition + "@" + offset;
  }

  private final World world;
  private final Commit commit;
  private final Faults faults;
  private final int rollRecords;

  /** Records put and not written yet, in arrival order (FLUSH_* and EMPTY_UNTIL_ROLL). */
  private final List<SinkRecord> buffer = new ArrayList<>();

  /** ROLLING_FILES: the open file of each partition, and its last written record's offset. */
  private final Map<TopicPartition, List<SinkRecord>> openFiles = new LinkedHashMap<>();

  private final Map<TopicPartition, Long> lastWritten = new HashMap<>();

  /** A write failure swallowed by a put, thrown by the next one (Debezium JDBC 3.6 does this). */
  private RuntimeException deferredFailure;

  SimulatedSinkTask(World world, Commit commit, Faults faults, int rollRecords) {
    this.world = world;
    this.commit = commit;
    this.faults = faults;
    this.rollRecords = rollRecords;
  }

  private boolean chance(double p) {
    return !world.healthy && p > 0 && world.random.nextDouble() < p;
  }

  @Override
  public String version() {
    return "simulated";
  }

  @Override
  public void start(Map<String, String> props) {}

  @Override
  public void put(Collection<SinkRecord> records) {
    if (deferredFailure != null) {
      RuntimeException failure = deferredFailure;
      deferredFailure = null;
      throw new ConnectException("the previous batch was not written", failure);
    }
    if (world.healthy) {
      context.resume(context.assignment().toArray(new TopicPartition[0]));
    } else if (chance(faults.pauses) && !context.assignment().isEmpty()) {
      List<TopicPartition> assigned = new ArrayList<>(context.assignment());
      TopicPartition tp = assigned.get(world.random.nextInt(assigned.size()));
      if (world.random.nextBoolean()) {
        context.pause(tp);
      } else {
        context.resume(tp);
      }
    }
    if (chance(faults.requestsCommit)) {
      context.requestCommit();
    }
    if (records.isEmpty()) {
      return;
    }
    if (chance(faults.putBlocks)) {
      // Blocks inside the sink (a client retrying its database), with time passing meanwhile.
      long blockMs = 1 + (long) (world.random.nextDouble() * faults.blockMaxMs);
      if (blockMs > world.lockMs) {
        world.blockedPuts++;
      }
      world.time.sleep(blockMs);
    }
    if (chance(faults.putRetriable)) {
      context.timeout(world.random.nextInt(3_000));
      throw new RetriableException("simulated outage");
    }
    if (chance(faults.putFails)) {
      throw new ConnectException("simulated sink failure");
    }
    if (chance(faults.putFailsLater)) {
      deferredFailure = new RuntimeException("simulated write failure");
      return; // nothing of this batch was written
    }
    switch (commit) {
      case WRITES_IN_PUT -> records.forEach(this::write);
      case ROLLING_FILES -> {
        for (SinkRecord record : records) {
          TopicPartition tp = partition(record);
          List<SinkRecord> file = openFiles.computeIfAbsent(tp, p -> new ArrayList<>());
          file.add(record);
          if (file.size() >= rollRecords) {
            file.forEach(this::write);
            lastWritten.put(tp, file.get(file.size() - 1).kafkaOffset());
            file.clear();
          }
        }
      }
      default -> buffer.addAll(records);
    }
  }

  @Override
  public Map<TopicPartition, OffsetAndMetadata> preCommit(
      Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
    if (chance(faults.preCommitFails)) {
      throw new ConnectException("simulated flush failure");
    }
    Commit mode = world.healthy && commit != Commit.WRITES_IN_PUT ? Commit.FLUSH_ALL : commit;
    switch (mode) {
      case WRITES_IN_PUT -> {
        return currentOffsets;
      }
      case FLUSH_ALL -> {
        buffer.forEach(this::write);
        buffer.clear();
        openFiles.values().forEach(file -> file.forEach(this::write));
        openFiles.clear();
        return currentOffsets;
      }
      case FLUSH_BELOW -> {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        currentOffsets.forEach(
            (tp, given) -> {
              List<Long> buffered = new ArrayList<>();
              for (SinkRecord record : buffer) {
                if (partition(record).equals(tp)) {
                  buffered.add(record.kafkaOffset());
                }
              }
              long below =
                  buffered.isEmpty() || world.random.nextInt(3) == 0
                      ? given.offset()
                      : Math.min(
                          given.offset(), buffered.get(world.random.nextInt(buffered.size())));
              buffer.removeIf(
                  record -> {
                    if (partition(record).equals(tp) && record.kafkaOffset() < below) {
                      write(record);
                      return true;
                    }
                    return false;
                  });
              if (world.random.nextInt(4) != 0) {
                out.put(tp, new OffsetAndMetadata(below));
              }
            });
        return out;
      }
      case ROLLING_FILES -> {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        currentOffsets.forEach(
            (tp, given) -> {
              List<SinkRecord> file = openFiles.getOrDefault(tp, List.of());
              Long last = lastWritten.get(tp);
              if (!file.isEmpty() && last != null) {
                out.put(tp, new OffsetAndMetadata(file.get(0).kafkaOffset()));
              } else if (file.isEmpty() && last != null) {
                out.put(tp, new OffsetAndMetadata(last + 1));
              }
            });
        return out;
      }
      case EMPTY_UNTIL_ROLL -> {
        if (buffer.size() < rollRecords) {
          return Map.of();
        }
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (SinkRecord record : buffer) {
          write(record);
          out.merge(
              partition(record),
              new OffsetAndMetadata(record.kafkaOffset() + 1),
              (a, b) -> a.offset() >= b.offset() ? a : b);
        }
        buffer.clear();
        out.keySet().retainAll(currentOffsets.keySet());
        return out;
      }
      default -> throw new IllegalStateException(mode.toString());
    }
  }

  private static TopicPartition partition(SinkRecord record) {
    return new TopicPartition(record.originalTopic(), record.originalKafkaPartition());
  }

  private void write(SinkRecord record) {
    world.durable.add(
        key(record.originalTopic(), record.originalKafkaPartition(), record.originalKafkaOffset()));
  }

  /** What an instance buffers dies with it (a crash, or a stop without a final flush). */
  void lose() {
    buffer.clear();
    openFiles.clear();
  }

  @Override
  public void close(Collection<TopicPartition> partitions) {
    // As S3-style sinks: the open files of closed partitions are discarded, not written.
    for (TopicPartition tp : partitions) {
      openFiles.remove(tp);
    }
    buffer.removeIf(record -> partitions.contains(partition(record)));
  }

  @Override
  public void stop() {
    lose();
  }
}
