package io.sharesink.connect.sink;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
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
 * is warned about once per task, naming the setting.
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

  private int emptyInARow;
  private boolean warned;

  PreCommitResults(SinkDriverConfig config, String taskName) {
    this.acceptOnEmpty = config.acceptOnEmptyPreCommit();
    int max = config.commitMaxRecords();
    this.fillingThreshold = max > 0 ? max : SinkDriverConfig.COMMIT_MAX_RECORDS_DEFAULT;
    this.taskName = taskName;
  }

  /**
   * Applies a preCommit result to {@code ledger}.
   *
   * @param lastPutSequence the last put that had returned when preCommit was called
   * @param passed the offsets preCommit was given
   * @param returned what it returned (null or empty: nothing, see the class comment)
   * @param windowUsedUp the last poll returned nothing although records are held
   */
  void apply(
      AckLedger ledger,
      long lastPutSequence,
      Map<TopicPartition, Long> passed,
      Map<TopicPartition, OffsetAndMetadata> returned,
      boolean windowUsedUp) {
    if (returned == null || returned.isEmpty()) {
      if (acceptOnEmpty) {
        ledger.committed(lastPutSequence, passed, passed);
      } else {
        emptyInARow++;
        maybeWarn(ledger, windowUsedUp);
      }
      return;
    }
    emptyInARow = 0;
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
              + " inside put and keeps its own offsets, set {}={}.",
          taskName,
          emptyInARow,
          waiting,
          SinkDriverConfig.EMPTY_PRECOMMIT,
          SinkDriverConfig.EMPTY_PRECOMMIT_HOLD,
          SinkDriverConfig.EMPTY_PRECOMMIT,
          SinkDriverConfig.EMPTY_PRECOMMIT_ACCEPT);
    }
  }
}
