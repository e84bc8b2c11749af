package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What goes into the next put, in which order:
 *
 * <ul>
 *   <li>records acquired and converted, in the order they came ({@link #add}); those of a paused
 *       partition wait until it is resumed ({@link #takeReady});
 *   <li>the batch of a put that threw RetriableException, again and whole, once its backoff is over
 *       ({@link #retryLater}, {@link #retryState}), and nothing else meanwhile;
 *   <li>put again, merged with what is put next: the records of a partition the legacy task
 *       instance closed and reopened to take a redelivered record below what it was given, that no
 *       preCommit covered yet ({@link #rewound}, {@link #putAgain});
 *   <li>ahead of everything waiting: after the instance failed (a restart in place follows), every
 *       held record it was given or was about to be given and that is not ACCEPTed yet ({@link
 *       #requeueUnaccepted}).
 * </ul>
 *
 * <p>Records put again are converted anew from their raw bytes (the instance that was given them is
 * gone, or dropped them), through the driver's converter, and sorted into partition then offset
 * order together with the records not put yet (one record in both goes once, converted anew).
 * Records the ledger no longer holds (forgotten for a lost lock, released by the lock keeper) are
 * dropped by {@link #pruneUnheld}, never put.
 *
 * <p>Not thread-safe: the task thread owns it.
 */
final class PutQueue {

  private static final Logger log = LoggerFactory.getLogger(PutQueue.class);

  /** An acquired, converted record waiting for a put; {@code record} null = dropped by an SMT. */
  record Pending(Entry entry, SinkRecord record) {}

  /**
   * What one put hands over, gathered in one pass over its items: a put runs every cycle over
   * thousands of records, and each further pass over their objects showed in profiles of a fast
   * sink. {@code lowest} is each partition's lowest offset, in order of first appearance.
   */
  static final class PutBatch {
    static final PutBatch EMPTY = new PutBatch(List.of());

    final List<Pending> items;
    final List<SinkRecord> records;
    final List<Entry> entries;
    final Map<TopicPartition, Long> lowest = new LinkedHashMap<>();

    PutBatch(List<Pending> items) {
      this.items = items;
      this.records = new ArrayList<>(items.size());
      this.entries = new ArrayList<>(items.size());
      // Records come in runs of one partition (one TopicPartition instance): the map is touched
      // once a run.
      TopicPartition run = null;
      long runLowest = Long.MAX_VALUE;
      for (Pending pending : items) {
        Entry entry = pending.entry;
        if (entry.partition() != run) {
          if (run != null) {
            lowest.merge(run, runLowest, Math::min);
          }
          run = entry.partition();
          runLowest = Long.MAX_VALUE;
        }
        runLowest = Math.min(runLowest, entry.offset());
        entries.add(entry);
        if (pending.record != null) {
          records.add(pending.record);
        }
      }
      if (run != null) {
        lowest.merge(run, runLowest, Math::min);
      }
    }
  }

  /**
   * A put that threw RetriableException: the same records go again at {@code retryAtMs}; {@code
   * failingSinceMs} is when the first put of them failed.
   */
  private record RetryBatch(PutBatch batch, long retryAtMs, long failingSinceMs) {}

  /** Where a pending put retry stands, see {@link #retryState}. */
  enum RetryState {
    /** No retry is pending: the next put takes what waits. */
    NONE,
    /** Its backoff runs: no put at all, not even {@code put(empty)}. */
    BACKOFF,
    /** Due: put {@link #retryBatch()} again. */
    DUE,
    /**
     * Failing for {@code share.task.stuck.timeout.ms}: release its records, see {@link #giveUp}.
     */
    GIVE_UP
  }

  /** Partition, then offset: the order a rewound or restarted put stream starts afresh in. */
  private static final Comparator<Pending> PARTITION_OFFSET_ORDER =
      Comparator.comparing((Pending p) -> p.entry.partition().topic())
          .thenComparingInt(p -> p.entry.partition().partition())
          .thenComparingLong(p -> p.entry.offset());

  private final AckLedger ledger;
  private final Function<Entry, Pending> converter;
  private final String taskName;
  private final List<Pending> ready = new ArrayList<>();
  private RetryBatch retry;

  /** The lock keeper's stuck releases already pruned, see {@link #pruneAfterReleases}. */
  private int releasesSeen;

  /**
   * @param ledger where the queued records are held
   * @param converter converts a held record anew from its raw bytes; returns null when the
   *     conversion failed and the failure was tolerated (the record is then left out), throws when
   *     it fails the task
   * @param taskName for logs
   */
  PutQueue(AckLedger ledger, Function<Entry, Pending> converter, String taskName) {
    this.ledger = ledger;
    this.converter = converter;
    this.taskName = taskName;
  }

  /** Queues a converted record behind those waiting. */
  void add(Pending pending) {
    ready.add(pending);
  }

  /** Records waiting for a put (a pending retry's not included). */
  int waiting() {
    return ready.size();
  }

  /** Records of the pending put retry, 0 when none. */
  int retrySize() {
    return retry == null ? 0 : retry.batch.items.size();
  }

  /** Whether a put retry is pending (it goes before anything else). */
  boolean retryPending() {
    return retry != null;
  }

  /** When the pending put retry is due; {@link Long#MAX_VALUE} when none is pending. */
  long retryAtMs() {
    return retry == null ? Long.MAX_VALUE : retry.retryAtMs;
  }

  /** Where the pending put retry stands at {@code nowMs}, bounded by {@code stuckTimeoutMs}. */
  RetryState retryState(long nowMs, long stuckTimeoutMs) {
    if (retry == null) {
      return RetryState.NONE;
    }
    if (nowMs < retry.retryAtMs) {
      return RetryState.BACKOFF;
    }
    return nowMs - retry.failingSinceMs >= stuckTimeoutMs ? RetryState.GIVE_UP : RetryState.DUE;
  }

  /** The batch to put again; only while a retry is pending. */
  PutBatch retryBatch() {
    return retry.batch;
  }

  /**
   * A put of {@code batch} threw RetriableException at {@code nowMs}: as the runtime does, the same
   * records go again at {@code nowMs + backoffMs} (renewed meanwhile). A batch that fails again
   * keeps when its first put failed, which bounds the retries ({@link RetryState#GIVE_UP}).
   */
  void retryLater(PutBatch batch, long nowMs, long backoffMs) {
    long failingSince = retry != null ? retry.failingSinceMs : nowMs;
    retry = new RetryBatch(batch, nowMs + backoffMs, failingSince);
    pruneUnheld();
  }

  /** A put returned: no retry is pending any more. */
  void putReturned() {
    retry = null;
  }

  /**
   * Gives the pending retry up (it has failed for {@code share.task.stuck.timeout.ms}): returns its
   * batch, whose records the caller releases; the task gets new records next.
   */
  PutBatch giveUp() {
    PutBatch batch = retry.batch;
    retry = null;
    return batch;
  }

  /** How long the pending retry's records have failed, at {@code nowMs}. */
  long failingForMs(long nowMs) {
    return nowMs - retry.failingSinceMs;
  }

  /**
   * Takes every waiting record of a partition not {@code paused} (null: none is), in queue order,
   * as the next put; the others keep their place.
   */
  PutBatch takeReady(Predicate<TopicPartition> paused) {
    List<Pending> items = new ArrayList<>();
    if (paused != null) {
      Iterator<Pending> it = ready.iterator();
      while (it.hasNext()) {
        Pending pending = it.next();
        if (!paused.test(pending.entry.partition())) {
          items.add(pending);
          it.remove();
        }
      }
    } else {
      items.addAll(ready);
      ready.clear();
    }
    return new PutBatch(items);
  }

  /**
   * The partitions of {@code batch} whose put would take the instance's put stream of the partition
   * backwards (a redelivered record below what it was given, see {@link AckLedger#rewinds}), among
   * those it has {@code opened}. A preCommit's answer would then be ambiguous ("everything below X"
   * against "everything up to my last put of X - 1", the way JDBC and S3-style sinks count), and
   * such a record could stay uncovered for good, its lock renewed, pinning the partition's
   * record-lock window; so the caller closes and reopens them first, as the classic runtime does
   * before it rewinds a partition, and puts {@link #putAgain} instead.
   */
  Set<TopicPartition> rewound(PutBatch batch, Set<TopicPartition> opened) {
    Set<TopicPartition> rewound = new LinkedHashSet<>();
    batch.lowest.forEach(
        (tp, offset) -> {
          if (opened.contains(tp) && ledger.rewinds(tp, offset)) {
            rewound.add(tp);
          }
        });
    return rewound;
  }

  /**
   * What to put instead of {@code batch} once the instance has closed and reopened {@code rewound}:
   * the records it was given of them and no preCommit covered yet ({@link
   * AckLedger#forgetPuts(Set)}), converted anew, with the batch's, in partition then offset order.
   */
  PutBatch putAgain(PutBatch batch, Set<TopicPartition> rewound) {
    List<Pending> ordered = reconvertAndSort(ledger.forgetPuts(rewound), batch.items);
    log.info(
        "{}: records redelivered below what the task was given of {}: closed and reopened them;"
            + " {} records put there before and not covered by a preCommit are put again",
        taskName,
        rewound,
        ordered.size() - batch.items.size());
    return new PutBatch(ordered);
  }

  /**
   * The instance failed (a restart in place follows): puts back at the head of the queue every held
   * record it was given or was about to be given and that is not ACCEPTed: those of {@code
   * failedPut} and of a pending retry still waiting for a put, and those put and not ACCEPTed
   * ({@link AckLedger#forgetPuts()}, converted anew), in partition then offset order.
   */
  void requeueUnaccepted(List<Pending> failedPut) {
    List<Pending> unput = new ArrayList<>();
    List<Pending> candidates = new ArrayList<>(failedPut);
    if (retry != null) {
      candidates.addAll(retry.batch.items);
      retry = null;
    }
    for (Pending pending : candidates) {
      if (pending.entry.state() == AckLedger.State.READY && ledger.holds(pending.entry)) {
        unput.add(pending);
      }
    }
    ready.addAll(0, reconvertAndSort(ledger.forgetPuts(), unput));
  }

  /**
   * {@code notPut} and the {@code forgotten} records converted anew, one entry once (the new
   * conversion wins; a record whose conversion failed and was tolerated is left out unless it is in
   * {@code notPut}), in partition then offset order.
   */
  private List<Pending> reconvertAndSort(List<Entry> forgotten, List<Pending> notPut) {
    Map<Entry, Pending> merged = new LinkedHashMap<>();
    for (Pending pending : notPut) {
      merged.putIfAbsent(pending.entry, pending);
    }
    for (Entry entry : forgotten) {
      Pending converted = converter.apply(entry);
      if (converted != null) {
        merged.put(entry, converted);
      }
    }
    List<Pending> ordered = new ArrayList<>(merged.values());
    ordered.sort(PARTITION_OFFSET_ORDER);
    return ordered;
  }

  /**
   * Drops from the queue and the pending retry the records the ledger no longer holds: forgotten
   * for an expired lock, or released by the lock keeper while a call was stuck.
   */
  void pruneUnheld() {
    ready.removeIf(pending -> !ledger.holds(pending.entry));
    if (retry != null) {
      List<Pending> items = new ArrayList<>();
      for (Pending pending : retry.batch.items) {
        if (ledger.holds(pending.entry)) {
          items.add(pending);
        }
      }
      retry =
          items.isEmpty()
              ? null
              : new RetryBatch(new PutBatch(items), retry.retryAtMs, retry.failingSinceMs);
    }
  }

  /**
   * {@link #pruneUnheld} once the lock keeper has released everything held for a stuck task since
   * the last call ({@code releases}: {@link LockKeeper#releases}, which only ever grows).
   */
  void pruneAfterReleases(int releases) {
    if (releases != releasesSeen) {
      releasesSeen = releases;
      pruneUnheld();
    }
  }

  /** Empties the queue (at stop: the engine's close releases what is left). */
  void clear() {
    ready.clear();
    retry = null;
  }
}
