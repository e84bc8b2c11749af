package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.ErrorHandling.RecordFailedException;
import io.sharesink.connect.sink.PutQueue.Pending;
import io.sharesink.engine.AckType;
import io.sharesink.engine.ShareBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes a polled batch in: every record enters the {@link AckLedger} first, so the lock keeper
 * renews the whole batch while a converter retries ({@code errors.retry.timeout}) on one of them;
 * then each is converted and transformed ({@link RecordPipeline}) and queued for a put ({@link
 * PutQueue}). A record the engine delivers while the ledger still holds it is ignored.
 *
 * <p>A record that fails conversion follows {@code errors.tolerance}: under {@code all} it is
 * REJECTed once its DLQ write is acknowledged ({@link ErrantRecords}); under {@code none} it is
 * RELEASEd (not REJECTed: the failure may be ours, a converter misconfigured, and the broker's
 * delivery count limit still archives a record that fails everywhere) and the task fails naming it.
 * The same holds for a record converted anew to be put again ({@link #convert}).
 *
 * <p>Not thread-safe: the task thread owns it.
 */
final class Intake {

  private static final Logger log = LoggerFactory.getLogger(Intake.class);

  private final AckLedger ledger;
  private final RecordPipeline pipeline;
  private final ErrorHandling errors;
  private final ErrantRecords errants;
  private final Acknowledger acknowledger;
  private final LockKeeper keeper;
  private final SinkDriverMetrics metrics;
  private final Time time;
  private final String taskName;
  private final BooleanSupplier stopping;

  // Read once: the lock check runs per record, and each AbstractConfig read is a map lookup plus
  // a write to its set of used keys (a JFR profile of a FileStream task at 900,000 records/s put
  // 3% of the task thread's samples there).
  private final long commitIntervalMs;
  private boolean lockWarned;

  /**
   * @param stopping whether the task is asked to stop: a converter's retries end then
   */
  Intake(
      DriverParts parts,
      AckLedger ledger,
      ErrantRecords errants,
      Acknowledger acknowledger,
      LockKeeper keeper,
      SinkDriverMetrics metrics,
      BooleanSupplier stopping) {
    this.ledger = ledger;
    this.pipeline = parts.pipeline();
    this.errors = parts.errors();
    this.errants = errants;
    this.acknowledger = acknowledger;
    this.keeper = keeper;
    this.metrics = metrics;
    this.time = parts.time();
    this.taskName = parts.taskName();
    this.stopping = stopping;
    this.commitIntervalMs = parts.config().commitIntervalMs();
  }

  /** Acquires {@code batch} into the ledger and queues its records in {@code queue}. */
  void take(ShareBatch batch, PutQueue queue) {
    if (batch.size() == 0) {
      return;
    }
    long nowMs = time.milliseconds();
    List<Entry> redelivered = new ArrayList<>();
    List<Entry> acquired = new ArrayList<>(batch.size());
    int maxDeliveryCount = 0;
    int duplicates = 0;
    TopicPartition tp = null;
    for (int i = 0; i < batch.size(); i++) {
      RawRecord raw = RawRecord.from(batch, i);
      if (tp == null || tp.partition() != raw.partition() || !tp.topic().equals(raw.topic())) {
        tp = raw.topicPartition(); // one per run of a partition: its hash is computed once
      }
      Entry entry =
          ledger.acquire(
              tp,
              raw.offset(),
              raw.deliveryCount(),
              nowMs,
              batch.lockDeadlineMs(i),
              batch.acquiredLastOffset(i));
      if (entry == null) {
        duplicates++;
        log.debug("{}: {} is already held; ignored", taskName, raw);
        continue;
      }
      warnIfLockTooShort(batch.lockDeadlineMs(i) - nowMs);
      if (raw.deliveryCount() > 1) {
        redelivered.add(entry);
        maxDeliveryCount = Math.max(maxDeliveryCount, raw.deliveryCount());
      }
      entry.attachment = raw;
      acquired.add(entry);
    }
    // Counted once a batch: an atomic add per record showed in profiles of a fast sink.
    metrics.duplicatesIgnored.addAndGet(duplicates);
    metrics.polled(acquired.size());
    metrics.redeliveries.addAndGet(redelivered.size());
    metrics.inFlight(ledger.size());
    if (!redelivered.isEmpty()) {
      log.info(
          "{}: {} records delivered again (up to delivery {}): {}",
          taskName,
          redelivered.size(),
          maxDeliveryCount,
          AckLedger.describe(redelivered));
    }
    try (LockKeeper.Call call = keeper.enter("conversion")) {
      for (Entry entry : acquired) {
        Pending pending = convert(entry);
        if (pending != null) {
          queue.add(pending);
        }
      }
    }
  }

  /**
   * Converts a held record from its raw bytes ({@link Entry#attachment}). Returns null when the
   * conversion failed under {@code errors.tolerance=all} (the record then waits for its DLQ write,
   * to be REJECTed); throws {@link ConnectException} when it fails the task.
   */
  Pending convert(Entry entry) {
    RawRecord raw = (RawRecord) entry.attachment();
    SinkRecord record;
    try {
      record = pipeline.convert(raw, stopping);
    } catch (RecordFailedException e) {
      conversionFailed(entry, raw, e);
      return null;
    }
    return new Pending(entry, record);
  }

  private void warnIfLockTooShort(long lockMs) {
    // The lock left at acquisition is a little under the granted duration: allow a second.
    if (!lockWarned && lockMs > 0 && commitIntervalMs > (lockMs + AckLedger.EXPIRY_MARGIN_MS) / 2) {
      lockWarned = true;
      log.warn(
          "{}: {}={} ms is not well below the acquisition lock ({} ms): records the sink buffers"
              + " will be renewed before every commit; lower it or raise the group's"
              + " share.record.lock.duration.ms",
          taskName,
          SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG,
          commitIntervalMs,
          lockMs);
    }
  }

  private void conversionFailed(Entry entry, RawRecord raw, RecordFailedException e) {
    Throwable cause = e.getCause();
    if (errors.toleranceAll()) {
      errants.add(ledger, entry, errors.report(raw, e.stage(), e.executingClass(), cause));
      return;
    }
    errors.logFailure(raw, e.stage(), e.executingClass(), cause);
    // RELEASE, not REJECT: the failure may be ours (a converter misconfigured), and the broker's
    // delivery count limit still archives a record that fails everywhere.
    acknowledger.settle(l -> l.take(List.of(entry), AckType.RELEASE));
    throw new ConnectException(
        "Tolerance exceeded in error handler: "
            + e.stage()
            + " failed for record topic="
            + raw.topic()
            + " partition="
            + raw.partition()
            + " offset="
            + raw.offset()
            + " (released for another delivery attempt)",
        cause);
  }
}
