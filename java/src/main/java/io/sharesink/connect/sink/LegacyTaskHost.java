package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The legacy task instance and every call into it: each runs under the task's own class loader and
 * is marked with the {@link LockKeeper}, so locks are renewed (within its bound) while the call
 * blocks. Also restarts the instance in place after a failure ({@code share.task.restart.*}): stops
 * the failed one ({@code close} of its partitions, {@code stop}) and, after the backoff, starts a
 * new one with the same context and props.
 *
 * <p>Not thread-safe: the task thread owns it.
 */
final class LegacyTaskHost {

  private static final Logger log = LoggerFactory.getLogger(LegacyTaskHost.class);

  private final ShareSinkTaskContext context;
  private final LockKeeper keeper;
  private final Time time;
  private final SinkDriverMetrics metrics;
  private final String taskName;

  private SinkTask task;
  private ClassLoader loader;
  private LegacyTaskRestarts restarts = LegacyTaskRestarts.disabled();

  /** The instance was stopped after a failure; the next one is not started yet. */
  private boolean down;

  LegacyTaskHost(
      SinkTask task,
      ShareSinkTaskContext context,
      LockKeeper keeper,
      Time time,
      SinkDriverMetrics metrics,
      String taskName) {
    this.task = Objects.requireNonNull(task, "task");
    this.loader = LoaderSwap.loaderOf(task);
    this.context = context;
    this.keeper = keeper;
    this.time = time;
    this.metrics = metrics;
    this.taskName = taskName;
    context.taskClass = task.getClass();
  }

  void restartWith(LegacyTaskRestarts restarts) {
    this.restarts = Objects.requireNonNull(restarts, "restarts");
  }

  /** Whether the instance is down, between a failure and the start of the next one. */
  boolean down() {
    return down;
  }

  void put(List<SinkRecord> records) {
    try (LockKeeper.Call call = keeper.enter("put")) {
      LoaderSwap.run(loader, () -> task.put(records));
    }
  }

  Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
    try (LockKeeper.Call call = keeper.enter("preCommit")) {
      return LoaderSwap.call(loader, () -> task.preCommit(offsets));
    }
  }

  /** Opens {@code partitions} (none of them opened yet) and adds them to the assignment. */
  void open(Collection<TopicPartition> partitions) {
    log.debug("{}: opening {}", taskName, partitions);
    try (LockKeeper.Call call = keeper.enter("open")) {
      LoaderSwap.run(loader, () -> task.open(new ArrayList<>(partitions)));
    }
    context.opened().addAll(partitions);
  }

  /**
   * Opens those of {@code partitions} not opened yet, if any (lazily, before a put holding them).
   */
  void openNew(Collection<TopicPartition> partitions) {
    Set<TopicPartition> opened = context.opened();
    Set<TopicPartition> fresh = new LinkedHashSet<>();
    for (TopicPartition tp : partitions) {
      if (!opened.contains(tp)) {
        fresh.add(tp);
      }
    }
    if (!fresh.isEmpty()) {
      open(fresh);
    }
  }

  /**
   * Closes {@code partitions} (all opened) and opens them again, as the classic runtime's rebalance
   * does before it rewinds them: the task drops what it buffered of them and its own view of their
   * offsets, so what it is given next reads as a fresh stream.
   */
  void reopen(Collection<TopicPartition> partitions) {
    log.debug("{}: closing and reopening {} to put redelivered records", taskName, partitions);
    try (LockKeeper.Call call = keeper.enter("close")) {
      LoaderSwap.run(loader, () -> task.close(new ArrayList<>(partitions)));
    }
    context.opened().removeAll(partitions);
    open(partitions);
  }

  /** Closes every opened partition (logging a failure) and empties the assignment. */
  void closeOpened() {
    Set<TopicPartition> opened = context.opened();
    if (opened.isEmpty()) {
      return;
    }
    try (LockKeeper.Call call = keeper.enter("close")) {
      LoaderSwap.run(loader, () -> task.close(new ArrayList<>(opened)));
    } catch (RuntimeException e) {
      log.error("{}: task close({}) failed", taskName, opened, e);
    }
    opened.clear();
  }

  /** Stops the instance, logging a failure. */
  void stopTask() {
    try (LockKeeper.Call call = keeper.enter("stop")) {
      LoaderSwap.run(loader, task::stop);
    } catch (RuntimeException e) {
      log.error("{}: task stop failed", taskName, e);
    }
  }

  /**
   * Answers a failure the instance threw from {@code where}: when the restart policy allows, stops
   * the failed instance and returns the backoff before the next one starts; returns -1 when the
   * Connect task must fail instead (the instance is then left as it is).
   */
  long failed(Throwable cause, String where, int heldRecords) {
    long backoffMs = restarts.onFailure(cause, time.milliseconds());
    if (backoffMs < 0) {
      return -1;
    }
    log.warn(
        "{}: the legacy task threw from {}: {}; restarting it in place in {} ms (restart {} of {}),"
            + " holding its {} records",
        taskName,
        where,
        cause,
        backoffMs,
        restarts.attempts(),
        restarts.maxAttempts(),
        heldRecords,
        cause);
    down = true;
    closeOpened();
    stopTask();
    context.resetForNewTask();
    return backoffMs;
  }

  /** When the next instance is due; Long.MAX_VALUE while the instance runs. */
  long restartAtMs() {
    return down ? restarts.restartAtMs() : Long.MAX_VALUE;
  }

  /**
   * While down: starts the next instance once its backoff has passed. Returns true when an instance
   * runs (again); false while it waits, or when the start failed and another attempt is scheduled.
   * Throws when no attempt is left.
   *
   * @param lastPutSequence the sequence of the last put before the restart
   */
  boolean startIfDue(long lastPutSequence, int heldRecords) {
    if (!down) {
      return true;
    }
    if (!restarts.due(time.milliseconds())) {
      return false;
    }
    metrics.taskRestarts.incrementAndGet();
    SinkTask fresh;
    try (LockKeeper.Call call = keeper.enter("start")) {
      fresh = restarts.startInstance();
    } catch (RuntimeException | Error e) {
      long backoffMs = restarts.onFailure(e, time.milliseconds());
      if (backoffMs < 0) {
        throw new ConnectException(
            taskName
                + ": the restarted legacy task failed to start"
                + restartsUsed()
                + "; stopping",
            e);
      }
      log.warn(
          "{}: the restarted legacy task failed to start: {}; next restart in {} ms (restart {} of"
              + " {}), holding {} records",
          taskName,
          e,
          backoffMs,
          restarts.attempts(),
          restarts.maxAttempts(),
          heldRecords,
          e);
      return false;
    }
    task = fresh;
    loader = LoaderSwap.loaderOf(fresh);
    context.taskClass = fresh.getClass();
    down = false;
    restarts.started(lastPutSequence);
    return true;
  }

  /** A put returned; logs when this makes a restarted instance healthy again. */
  void putReturned(long putSequence) {
    if (restarts.putReturned(putSequence)) {
      log.info("{}: the restarted legacy task is writing again", taskName);
    }
  }

  int restartAttempts() {
    return restarts.attempts();
  }

  int restartMaxAttempts() {
    return restarts.maxAttempts();
  }

  /** " after N restarts in place", or "" when none was used; for failure messages. */
  String restartsUsed() {
    int used = restarts.attempts();
    return used == 0 ? "" : " after " + used + " restarts in place";
  }
}
