package io.sharesink.connect.sink;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@code preCommit} result means for the held records (see {@link AckLedger#committed} for
 * which records an offset covers). An empty or null map commits nothing under the sink runtime:
 * sinks that write files (S3, GCS, HDFS) return one while they buffer, and say nothing about the
 * records. So by default ({@code share.commit.empty.precommit=hold}) it covers nothing and the
 * records stay held and renewed; {@code accept} treats it as covering everything put before the
 * call, for sinks that write inside {@code put} and keep their own offsets. A task that keeps
 * returning empty maps while the broker's in-flight window fills will stall once it is full: that
 * is warned about once per task, naming the setting; and once it has returned only empty maps for
 * {@code share.task.stuck.timeout.ms} (on the task's clock) while records it was given waited and
 * no new ones were put, it fails, naming the sink's own offset management, instead of holding its
 * records for ever (a sink that commits its offsets itself, as Apache Iceberg's does, never returns
 * anything else).
 *
 * <p>Not thread-safe: the task thread owns it.
 */
final class PreCommitResults {

  private static final Logger log = LoggerFactory.getLogger(PreCommitResults.class);

  /** Empty results in a row before a filling window is worth a warning. */
  static final int EMPTY_RESULTS_BEFORE_WARNING = 3;

  private final boolean acceptOnEmpty;
  private final int fillingThreshold;
  private final String taskName;

  private final long stalledMaxMs;

  private int emptyInARow;
  private boolean warned;

  /**
   * When the current run of empty results began to hold records that wait while nothing new is put
   * (see {@link #apply}), on the task's clock; -1 while no such run is going on.
   */
  private long stalledSinceMs = -1;

  /** The driver's count of records put when {@link #stalledSinceMs} was (re)started. */
  private long recordsPutAtStall;

  PreCommitResults(SinkDriverConfig config, String taskName) {
    this.acceptOnEmpty = config.acceptOnEmptyPreCommit();
    int max = config.commitMaxRecords();
    this.fillingThreshold = max > 0 ? max : SinkDriverConfig.COMMIT_MAX_RECORDS_DEFAULT;
    this.stalledMaxMs = config.taskStuckTimeoutMs();
    this.taskName = taskName;
  }

  /**
   * {@link #apply(AckLedger, long, Map, Map, boolean, long, long)} with a clock that stands still.
   */
  void apply(
      AckLedger ledger,
      long lastPutSequence,
      Map<TopicPartition, Long> passed,
      Map<TopicPartition, OffsetAndMetadata> returned,
      boolean windowUsedUp) {
    apply(ledger, lastPutSequence, passed, returned, windowUsedUp, 0, 0);
  }

  /**
   * Applies a preCommit result to {@code ledger}.
   *
   * @param lastPutSequence the last put that had returned when preCommit was called
   * @param passed the offsets preCommit was given
   * @param returned what it returned (null or empty: nothing, see the class comment)
   * @param windowUsedUp the last poll returned nothing although records are held
   * @param nowMs the task's clock
   * @param recordsPut how many records the task has been put so far (never decreases)
   * @throws ConnectException when the task has returned only empty maps for {@code
   *     share.task.stuck.timeout.ms} while records waited for a commit and none was put meanwhile
   */
  void apply(
      AckLedger ledger,
      long lastPutSequence,
      Map<TopicPartition, Long> passed,
      Map<TopicPartition, OffsetAndMetadata> returned,
      boolean windowUsedUp,
      long nowMs,
      long recordsPut) {
    if (returned == null || returned.isEmpty()) {
      if (acceptOnEmpty) {
        ledger.committed(lastPutSequence, passed, passed);
      } else {
        emptyInARow++;
        maybeWarn(ledger, windowUsedUp);
        failIfStalled(ledger, windowUsedUp, nowMs, recordsPut);
      }
      return;
    }
    emptyInARow = 0;
    stalledSinceMs = -1;
    Map<TopicPartition, Long> offsets = new HashMap<>();
    returned.forEach(
        (tp, offset) -> {
          if (tp != null && offset != null) {
            offsets.put(tp, offset.offset());
          }
        });
    List<TopicPartition> ignored = ledger.committed(lastPutSequence, passed, offsets);
    if (!ignored.isEmpty()) {
      log.warn(
          "{}: preCommit returned offsets above those consumed for {}; ignored", taskName, ignored);
    }
  }

  /**
   * Fails the task once its records have waited for {@code share.task.stuck.timeout.ms} behind
   * nothing but empty maps with no record put meanwhile: the in-flight window is full of them (or
   * nothing is left to consume), so without a commit this task would hold them, renewed, for ever.
   * Records put meanwhile start the span again (a sink that buffers until a file rolls is still
   * filling it), as does a commit that finds nothing waiting or a map with offsets.
   */
  private void failIfStalled(AckLedger ledger, boolean windowUsedUp, long nowMs, long recordsPut) {
    int waiting = ledger.awaitingCommit();
    if (waiting == 0) {
      stalledSinceMs = -1;
      return;
    }
    boolean full = waiting >= fillingThreshold || windowUsedUp;
    if (stalledSinceMs < 0 || recordsPut != recordsPutAtStall) {
      stalledSinceMs = full ? nowMs : -1;
      recordsPutAtStall = recordsPut;
      return;
    }
    long stalledMs = nowMs - stalledSinceMs;
    if (stalledMs < stalledMaxMs) {
      return;
    }
    stalledSinceMs = -1; // once: the final commit of the failed task does not throw again
    throw new ConnectException(
        taskName
            + ": preCommit has returned only empty maps for "
            + stalledMs
            + " ms while "
            + waiting
            + " records put to the task waited for a commit and no more were put (the broker's"
            + " in-flight window is full of them, or nothing is left to consume). A sink that"
            + " manages its own offsets (it commits them itself, as Apache Iceberg's sink does"
            + " through its coordinator, and returns {} from preCommit) cannot run in share mode:"
            + " sharesink ACCEPTs a record only once preCommit reports it written, so this task"
            + " would hold its records for ever; run it on the classic runtime. A sink that writes"
            + " every record inside put and keeps its own offsets can set "
            + SinkDriverConfig.EMPTY_PRECOMMIT_CONFIG
            + "="
            + SinkDriverConfig.EMPTY_PRECOMMIT_ACCEPT
            + "; one that buffers until a file rolls must roll (by size or time) within the"
            + " window (share.partition.max.record.locks). Failing the task after "
            + SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG
            + "="
            + stalledMaxMs
            + " ms; its records are released, none was ACCEPTed");
  }

  /** Whether the warning about empty maps was logged (once per task). */
  boolean warned() {
    return warned;
  }

  private void maybeWarn(AckLedger ledger, boolean windowUsedUp) {
    if (warned || emptyInARow < EMPTY_RESULTS_BEFORE_WARNING) {
      return;
    }
    int waiting = ledger.awaitingCommit();
    if (waiting >= fillingThreshold || (windowUsedUp && waiting > 0)) {
      warned = true;
      log.warn(
          "{}: preCommit has returned an empty map {} times in a row while {} records put to the"
              + " task wait for a commit. With {}={} (the default) an empty map commits nothing, as"
              + " under the classic runtime: the records stay held and renewed until preCommit"
              + " returns offsets covering them, and once the broker's in-flight window"
              + " (share.partition.max.record.locks) is full this task gets no more. That is right"
              + " for a sink that buffers until it writes a file; if this task writes every record"
              + " inside put and keeps its own offsets, set {}={}. A task that goes on so for {}={}"
              + " ms with no record put fails (a sink that commits its own offsets cannot run in"
              + " share mode).",
          taskName,
          emptyInARow,
          waiting,
          SinkDriverConfig.EMPTY_PRECOMMIT_CONFIG,
          SinkDriverConfig.EMPTY_PRECOMMIT_HOLD,
          SinkDriverConfig.EMPTY_PRECOMMIT_CONFIG,
          SinkDriverConfig.EMPTY_PRECOMMIT_ACCEPT,
          SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG,
          stalledMaxMs);
    }
  }
}
