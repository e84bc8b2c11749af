package io.sharesink.connect.sink;

import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link SinkTaskContext} a legacy sink task gets in share mode. Create it before {@code
 * task.initialize(context)} and {@code task.start(props)} (a task may ask for its errant record
 * reporter in {@code start()}), then hand it to the {@link ShareSinkDriver}.
 *
 * <p>Differences from the runtime's context, all forced by share groups: {@link #offset} rewinds
 * are impossible (warned once, ignored); {@link #assignment()} is the partitions opened so far;
 * {@link #pause}/{@link #resume} accept any partition (records of a partition can arrive at any
 * time, so pausing one not yet opened is meaningful).
 *
 * <p>May be called from any thread the task uses; the driver reads it on the task thread.
 */
public final class ShareSinkTaskContext implements SinkTaskContext {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkTaskContext.class);

  /** An errant record reported by the task, waiting for its DLQ write. */
  record ErrantReport(TopicPartition partition, long offset, CompletableFuture<Void> written) {}

  /** Finds a record this member holds by its original coordinates; callable from any thread. */
  @FunctionalInterface
  interface HeldRecords {
    /** The record, or null when it is not (or no longer) held. */
    RawRecord find(TopicPartition partition, long offset);
  }

  private final Supplier<Map<String, String>> configs;
  private final ErrorHandling errors;
  private final PluginMetrics pluginMetrics;
  private final String taskName;
  private final ErrantRecordReporter reporter;

  private final Set<TopicPartition> opened = ConcurrentHashMap.newKeySet();
  private final Set<TopicPartition> paused = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean commitRequested = new AtomicBoolean();
  private final AtomicLong timeoutMs = new AtomicLong(-1);
  private final AtomicBoolean rewindWarned = new AtomicBoolean();
  private final ContextCalls calls;

  /** Set by the driver that owns the held records. */
  volatile HeldRecords held = (partition, offset) -> null;

  final ConcurrentLinkedQueue<ErrantReport> reports = new ConcurrentLinkedQueue<>();
  volatile Class<?> taskClass = SinkTask.class;

  /**
   * @param configs the task's latest configuration (the runtime returns the latest task config,
   *     which can differ from the start() props after a config-provider refresh)
   * @param config the driver settings (decide whether a reporter is offered)
   * @param errors logging and DLQ for reported records
   * @param pluginMetrics the host context's plugin metrics, or null when there are none
   * @param taskName for logs, e.g. {@code orders-to-pg-3}
   */
  public ShareSinkTaskContext(
      Supplier<Map<String, String>> configs,
      SinkDriverConfig config,
      ErrorHandling errors,
      PluginMetrics pluginMetrics,
      String taskName) {
    this.configs = configs;
    this.errors = errors;
    this.pluginMetrics = pluginMetrics;
    this.taskName = taskName;
    this.reporter = config.offersErrantRecordReporter() ? this::report : null;
    this.calls = new ContextCalls(taskName);
  }

  /** What the task has asked of this context so far. */
  ContextCalls calls() {
    return calls;
  }

  @Override
  public Map<String, String> configs() {
    calls.record(ContextCalls.Call.CONFIGS);
    return configs.get();
  }

  @Override
  public void offset(Map<TopicPartition, Long> offsets) {
    calls.record(ContextCalls.Call.OFFSET);
    warnRewind(offsets);
  }

  @Override
  public void offset(TopicPartition tp, long offset) {
    calls.record(ContextCalls.Call.OFFSET);
    warnRewind(Map.of(tp, offset));
  }

  private void warnRewind(Map<TopicPartition, Long> offsets) {
    if (rewindWarned.compareAndSet(false, true)) {
      log.warn(
          "{}: the task asked to rewind to {}; a share group cannot seek, so this and any later"
              + " rewind are ignored",
          taskName,
          offsets);
    }
  }

  @Override
  public void timeout(long timeoutMs) {
    calls.record(ContextCalls.Call.TIMEOUT);
    this.timeoutMs.set(timeoutMs);
  }

  /** The one-shot backoff the task set with {@link #timeout}, or -1; resets it, as the runtime. */
  long takeTimeout() {
    return timeoutMs.getAndSet(-1);
  }

  @Override
  public Set<TopicPartition> assignment() {
    calls.record(ContextCalls.Call.ASSIGNMENT);
    return Collections.unmodifiableSet(opened);
  }

  Set<TopicPartition> opened() {
    return opened;
  }

  @Override
  public void pause(TopicPartition... partitions) {
    calls.record(ContextCalls.Call.PAUSE);
    Collections.addAll(paused, partitions);
  }

  @Override
  public void resume(TopicPartition... partitions) {
    calls.record(ContextCalls.Call.RESUME);
    for (TopicPartition tp : partitions) {
      paused.remove(tp);
    }
  }

  boolean isPaused(TopicPartition tp) {
    return paused.contains(tp);
  }

  boolean anyPaused() {
    return !paused.isEmpty();
  }

  /**
   * Forgets what the failed task instance asked for (paused partitions, a put timeout, a commit
   * request) before a new instance is initialized with this context; the opened partitions were
   * closed.
   */
  void resetForNewTask() {
    opened.clear();
    paused.clear();
    commitRequested.set(false);
    timeoutMs.set(-1);
  }

  @Override
  public void requestCommit() {
    calls.record(ContextCalls.Call.REQUEST_COMMIT);
    commitRequested.set(true);
  }

  boolean takeCommitRequest() {
    return commitRequested.getAndSet(false);
  }

  @Override
  public ErrantRecordReporter errantRecordReporter() {
    calls.record(ContextCalls.Call.ERRANT_RECORD_REPORTER);
    return reporter;
  }

  @Override
  public PluginMetrics pluginMetrics() {
    calls.record(ContextCalls.Call.PLUGIN_METRICS);
    return pluginMetrics;
  }

  /**
   * Reports a record the task could not write: logged and written to the DLQ as configured, then
   * REJECTed by the driver once the write is acknowledged. With {@code errors.tolerance=none} this
   * throws, as the runtime does.
   */
  private Future<Void> report(SinkRecord record, Throwable error) {
    if (!errors.toleranceAll()) {
      throw new ToleranceExceededException("Tolerance exceeded in error handler", error);
    }
    TopicPartition tp = new TopicPartition(record.originalTopic(), record.originalKafkaPartition());
    long offset = record.originalKafkaOffset();
    RawRecord raw = held.find(tp, offset);
    if (raw == null) {
      // Not (or no longer) held by this member: nothing to REJECT, and no raw bytes to write.
      log.warn(
          "{}: errant record {}-{}@{} is not held by this task; logged only",
          taskName,
          tp.topic(),
          tp.partition(),
          offset,
          error);
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> written = errors.report(raw, ErrorStage.TASK_PUT, taskClass, error);
    reports.add(new ErrantReport(tp, offset, written));
    return written.copy();
  }
}
