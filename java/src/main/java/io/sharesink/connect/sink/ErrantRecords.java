package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.ShareSinkTaskContext.ErrantReport;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;

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
  private final Time time;

  ErrantRecords(Time time) {
    this.time = time;
  }

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
   * Waits until every outstanding write is done, or until {@code deadlineMs} on the task's clock
   * (at stop). A write that fails or does not finish is left for {@link #takeFinished} (failed ones
   * are released) or dropped at {@link #clear} (released with everything else).
   *
   * <p>The writes complete on a producer's thread; the wait is {@link Time#waitObject} on a monitor
   * their completion notifies: a timed wait on the system clock, and on a {@code MockTime} a wait
   * that ends when the writes complete or a test moves the clock past the deadline.
   */
  void awaitAll(long deadlineMs) {
    List<CompletableFuture<Void>> outstanding = new ArrayList<>();
    for (List<Wait> partitionWaits : waits.values()) {
      for (Wait wait : partitionWaits) {
        if (!wait.written.isDone()) {
          outstanding.add(wait.written);
        }
      }
    }
    if (outstanding.isEmpty()) {
      return;
    }
    // Done once every write is, whether it succeeded or not.
    CompletableFuture<Void> all =
        CompletableFuture.allOf(outstanding.toArray(new CompletableFuture[0]));
    Object done = new Object();
    all.whenComplete(
        (ignored, error) -> {
          synchronized (done) {
            done.notifyAll();
          }
        });
    try {
      time.waitObject(done, all::isDone, deadlineMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException e) {
      // Left for takeFinished(), or released at stop.
    }
  }

  void clear() {
    waits.clear();
  }
}
