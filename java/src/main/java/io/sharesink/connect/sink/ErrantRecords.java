package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.ShareSinkTaskContext.ErrantReport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.TopicPartition;

/**
 * Records to be REJECTed once their dead letter queue write is acknowledged: those that failed
 * conversion under {@code errors.tolerance=all}, and those the task reported through its errant
 * record reporter. A partition with a write outstanding is not ACCEPTed meanwhile (the runtime's
 * promise: errant records reach the DLQ before the framework commits their partition).
 *
 * <p>Not thread-safe: the task thread owns it; reports from other threads arrive through the
 * context's queue.
 */
final class ErrantRecords {

  /** A record waiting for its DLQ write. */
  private record Wait(Entry entry, CompletableFuture<Void> written) {}

  /** What the finished writes decided. */
  record Finished(List<Entry> rejects, List<Entry> failedWrites, Throwable failure) {}

  private final Map<TopicPartition, List<Wait>> waits = new LinkedHashMap<>();

  /** Adds a record whose DLQ write ({@code written}) is under way; marks it REJECTING. */
  void add(AckLedger ledger, Entry entry, CompletableFuture<Void> written) {
    ledger.rejecting(entry);
    waits.computeIfAbsent(entry.partition(), p -> new ArrayList<>()).add(new Wait(entry, written));
  }

  /** Moves the task's reports (made on any thread) in; ignores records no longer held. */
  void collect(Queue<ErrantReport> reports, AckLedger ledger) {
    ErrantReport report;
    while ((report = reports.poll()) != null) {
      Entry entry = ledger.get(report.partition(), report.offset());
      if (entry == null || entry.state() == AckLedger.State.REJECTING) {
        continue; // already acknowledged, or reported twice
      }
      add(ledger, entry, report.written());
    }
  }

  /** Whether {@code tp} has a DLQ write outstanding (its records are not ACCEPTed meanwhile). */
  boolean blocks(TopicPartition tp) {
    return waits.containsKey(tp);
  }

  boolean isEmpty() {
    return waits.isEmpty();
  }

  /** Takes the records whose write is done: to REJECT, or to RELEASE when the write failed. */
  Finished takeFinished() {
    List<Entry> rejects = new ArrayList<>();
    List<Entry> failedWrites = new ArrayList<>();
    Throwable failure = null;
    for (Iterator<List<Wait>> it = waits.values().iterator(); it.hasNext(); ) {
      List<Wait> partitionWaits = it.next();
      for (Iterator<Wait> wit = partitionWaits.iterator(); wit.hasNext(); ) {
        Wait wait = wit.next();
        if (!wait.written.isDone()) {
          continue;
        }
        wit.remove();
        try {
          wait.written.join();
          rejects.add(wait.entry);
        } catch (RuntimeException e) {
          failedWrites.add(wait.entry);
          failure = e.getCause() != null ? e.getCause() : e;
        }
      }
      if (partitionWaits.isEmpty()) {
        it.remove();
      }
    }
    return new Finished(rejects, failedWrites, failure);
  }

  /**
   * Waits up to {@code timeout} for every outstanding write (at stop). A write that fails or does
   * not finish is left for {@link #takeFinished} (failed ones are released) or dropped at {@link
   * #clear} (released with everything else).
   */
  void awaitAll(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (List<Wait> partitionWaits : waits.values()) {
      for (Wait wait : partitionWaits) {
        try {
          // Real time: the write completes on a producer's thread, not on the driver's clock.
          wait.written.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (ExecutionException | TimeoutException e) {
          // Left for takeFinished(), or released at stop.
        }
      }
    }
  }

  void clear() {
    waits.clear();
  }
}
