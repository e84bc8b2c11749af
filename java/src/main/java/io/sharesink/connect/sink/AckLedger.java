package io.sharesink.connect.sink;

import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.apache.kafka.common.TopicPartition;

/**
 * Every record this member holds an acquisition lock on, per original partition, with the state
 * that decides how it will be acknowledged. Decisions leave the ledger as {@link Acknowledgements}
 * whose ranges are compacted: contiguous offsets of one partition with one type become one range.
 *
 * <p>Lifecycle of a record: {@link State#READY} (acquired, converted, waiting for a put, or held
 * back by a pause or a put retry) → {@link State#PUT} (a put holding it returned) → {@link
 * State#CONFIRMED} (a later put returned too, so a deferred failure of the first put would have
 * surfaced by now). Independently, a record becomes <em>flushed</em> once a preCommit covers it
 * (see {@link #committed}); a record both confirmed and flushed is ACCEPTed. {@link
 * State#REJECTING} waits for an errant record's DLQ write; the record is REJECTed when that
 * completes. Acknowledged records leave; so do records whose lock ran out before they could be
 * acknowledged ({@link #forgetExpired}), without any acknowledgement.
 *
 * <p>The driver's task thread makes the decisions; the lock keeper renews (and, past its bound,
 * releases) from its own thread, and a task's errant record reporter looks held records up from any
 * thread ({@link #attachment}). So every method is synchronized, and a decision is sent to the
 * engine while this ledger's monitor is held ({@link Acknowledger}), so that a RENEW never reaches
 * the engine after the ACCEPT of the same record.
 */
public final class AckLedger {

  /** What is known about one held record. */
  public enum State {
    READY,
    PUT,
    CONFIRMED,
    REJECTING
  }

  /** One held record. Mutable, owned by the ledger. */
  public static final class Entry {
    final TopicPartition partition;
    final long offset;
    final int deliveryCount;
    final long lockDurationMs;

    /** Offset of the last record received from the same acquired range, see takeAccepted. */
    final long acquiredLastOffset;

    long lockDeadlineMs;
    State state = State.READY;
    long putSequence = -1;

    /**
     * The highest offset of this partition put before this record (by the current task instance),
     * -1 when none: a preCommit's offset covers the record only when it is above this too, see
     * {@link AckLedger#committed}.
     */
    long priorMaxPutOffset = -1;

    /** A preCommit called after this record's put returned said the sink has it. */
    boolean flushed;

    /** When an accept scan first found it acceptable (waiting for its range), -1 before. */
    long acceptableSinceMs = -1;

    Object attachment;

    /**
     * Whether the ledger holds this record: set when it enters, cleared when it is acknowledged or
     * forgotten, so that {@link AckLedger#holds} is a field read instead of a search by offset (a
     * put checks every record it held).
     */
    boolean held;

    Entry(
        TopicPartition partition,
        long offset,
        int deliveryCount,
        long lockDurationMs,
        long lockDeadlineMs,
        long acquiredLastOffset) {
      this.partition = partition;
      this.offset = offset;
      this.deliveryCount = deliveryCount;
      this.lockDurationMs = lockDurationMs;
      this.lockDeadlineMs = lockDeadlineMs;
      this.acquiredLastOffset = acquiredLastOffset;
    }

    public TopicPartition partition() {
      return partition;
    }

    public long offset() {
      return offset;
    }

    public State state() {
      return state;
    }

    /** Whether a preCommit called after this record's put covered it. */
    public boolean flushed() {
      return flushed;
    }

    public int deliveryCount() {
      return deliveryCount;
    }

    public long lockDeadlineMs() {
      return lockDeadlineMs;
    }

    /** Whatever the driver keeps with the record (its raw bytes, for the DLQ). */
    public Object attachment() {
      return attachment;
    }

    @Override
    public String toString() {
      return partition + "@" + offset + "[" + state + "]";
    }
  }

  private static final class PartitionLedger {
    final OffsetMap<Entry> entries = new OffsetMap<>();

    /** Highest offset put (original coordinates) to the current task instance, -1 when none. */
    long maxPutOffset = -1;

    /** Highest offset of a held flushed record, -1 when none: where accept scans may stop. */
    long maxFlushedOffset = -1;

    /** Highest offset acquired, -1 when none yet: a range is whole once its end is reached. */
    long maxAcquiredOffset = -1;
  }

  private final Map<TopicPartition, PartitionLedger> partitions = new LinkedHashMap<>();
  private int size;

  /** The partition of the last acquire and its ledger: a batch acquires runs of one partition. */
  private TopicPartition acquiredPartition;

  private PartitionLedger acquiredLedger;

  /*
   * Lower bounds that let the per-cycle lock checks skip scanning every held record: no lock can
   * be lost before lostCheckAtMs, and nothing is due for renewal before renewCheckAtMs (for the
   * margin renewCheckMarginMs). Adding a record lowers them; removals and renewals leave them
   * low, which costs at most one extra scan, after which they are exact again.
   */
  private long lostCheckAtMs = Long.MAX_VALUE;

  /**
   * The records in {@link State#PUT}, so that a put confirms the previous ones without a scan of
   * every held record: the last returned put's collection itself, not a copy. May also hold records
   * acknowledged, forgotten or put back to READY since (their state is checked on use).
   */
  private Collection<Entry> unconfirmed = List.of();

  private long renewCheckAtMs = Long.MIN_VALUE;
  private long renewCheckMarginMs = -1;

  /** Records the last {@link #takeAccepted} held back for the rest of their range, see there. */
  private int waitingForRange;

  /*
   * takeAccepted runs every driver cycle; it scans again only after a change that can make a record
   * acceptable (set by the mutators), or once a waiting record is due for renewal (recheck time,
   * for the margin of that scan).
   */
  private boolean acceptScanDue = true;
  private long acceptRecheckAtMs = Long.MAX_VALUE;
  private long acceptMarginMs = -1;

  /** Number of records held (not yet acknowledged). */
  public synchronized int size() {
    return size;
  }

  public synchronized boolean isEmpty() {
    return size == 0;
  }

  /**
   * Records a newly acquired record; {@code acquiredLastOffset} is the offset of the last record
   * the engine delivers from the same acquired range. Returns null when the ledger already holds
   * this offset: the engine delivered a record the driver still holds, which must not be put twice.
   */
  public synchronized Entry acquire(
      TopicPartition partition,
      long offset,
      int deliveryCount,
      long acquiredAtMs,
      long lockDeadlineMs,
      long acquiredLastOffset) {
    PartitionLedger ledger = acquiredLedger;
    if (partition != acquiredPartition) {
      ledger = partitions.computeIfAbsent(partition, p -> new PartitionLedger());
      acquiredPartition = partition;
      acquiredLedger = ledger;
    }
    // The lock duration is what the broker granted this time; renewals are assumed to grant the
    // same, which holds while the group's share.record.lock.duration.ms is unchanged.
    long lockDuration = Math.max(1, lockDeadlineMs - acquiredAtMs);
    Entry entry =
        new Entry(
            partition,
            offset,
            deliveryCount,
            lockDuration,
            lockDeadlineMs,
            Math.max(offset, acquiredLastOffset));
    if (ledger.entries.putIfAbsent(offset, entry) != null) {
      return null;
    }
    entry.held = true;
    ledger.maxAcquiredOffset = Math.max(ledger.maxAcquiredOffset, offset);
    acceptScanDue |= rangesWait(); // a new record is never acceptable, but may end a range
    size++;
    lostCheckAtMs = Math.min(lostCheckAtMs, lostAtMs(entry));
    if (renewCheckMarginMs >= 0) {
      renewCheckAtMs = Math.min(renewCheckAtMs, renewAtMs(entry, renewCheckMarginMs));
    }
    return entry;
  }

  /** What the driver keeps with a held record ({@link Entry#attachment}), or null when not held. */
  public synchronized Object attachment(TopicPartition partition, long offset) {
    Entry entry = get(partition, offset);
    return entry == null ? null : entry.attachment;
  }

  public synchronized Entry get(TopicPartition partition, long offset) {
    PartitionLedger ledger = partitions.get(partition);
    return ledger == null ? null : ledger.entries.get(offset);
  }

  /**
   * A put holding {@code entries} returned without throwing: they become {@link State#PUT}, and
   * every record of an earlier put becomes {@link State#CONFIRMED}, since this later put returned.
   * The ledger keeps {@code entries} (not a copy) until the next put returns: the caller must not
   * change it.
   */
  public synchronized void putReturned(Collection<Entry> entries, long putSequence) {
    // New PUTs are never acceptable, but may be the rest of a waiting range (waitingForRange).
    acceptScanDue |= !entries.isEmpty() && rangesWait();
    List<Entry> stillPut = null; // of a put with this same sequence: none from the driver
    for (Entry entry : unconfirmed) {
      if (entry.state == State.PUT && entry.putSequence < putSequence) {
        entry.state = State.CONFIRMED;
        acceptScanDue = true;
      } else if (entry.state == State.PUT) {
        if (stillPut == null) {
          stillPut = new ArrayList<>();
        }
        stillPut.add(entry);
      }
    }
    PartitionLedger ledger = null;
    TopicPartition ledgerKey = null;
    for (Entry entry : entries) {
      if (entry.state != State.READY || !entry.held) {
        // Reported as errant during the put (the reject decision stands), or released (the lock
        // keeper's bound) or forgotten while the put ran.
        continue;
      }
      if (entry.partition != ledgerKey) { // records of a run share one key instance
        ledgerKey = entry.partition;
        ledger = partitions.get(ledgerKey);
      }
      entry.state = State.PUT;
      entry.putSequence = putSequence;
      entry.priorMaxPutOffset = ledger.maxPutOffset;
      ledger.maxPutOffset = Math.max(ledger.maxPutOffset, entry.offset);
    }
    if (stillPut == null) {
      unconfirmed = entries;
    } else {
      stillPut.addAll(entries);
      unconfirmed = stillPut;
    }
  }

  /** Held records put to the task and not yet covered by a preCommit. */
  public synchronized int awaitingCommit() {
    int count = 0;
    for (PartitionLedger ledger : partitions.values()) {
      for (Entry entry : ledger.entries.values()) {
        if (!entry.flushed && (entry.state == State.PUT || entry.state == State.CONFIRMED)) {
          count++;
        }
      }
    }
    return count;
  }

  /** Whether any record waits for a following put to confirm it. */
  public synchronized boolean hasUnconfirmedPuts() {
    for (Entry entry : unconfirmed) {
      if (entry.state == State.PUT && entry.held) {
        return true;
      }
    }
    return false;
  }

  /**
   * The legacy task instance that was given the records put so far is gone (restarted in place):
   * every {@link State#PUT} or {@link State#CONFIRMED} record goes back to {@link State#READY}, to
   * be put to the new instance, and what preCommit said (and the highest put offsets passed to it)
   * is forgotten, since the new instance has none of that state. Returns those records, in
   * partition then offset order.
   */
  public synchronized List<Entry> forgetPuts() {
    acceptScanDue = true;
    unconfirmed = List.of();
    List<Entry> reset = new ArrayList<>();
    for (PartitionLedger ledger : partitions.values()) {
      for (Entry entry : ledger.entries.values()) {
        if (entry.state == State.PUT || entry.state == State.CONFIRMED) {
          entry.state = State.READY;
          entry.putSequence = -1;
          entry.priorMaxPutOffset = -1;
          entry.flushed = false;
          entry.acceptableSinceMs = -1;
          reset.add(entry);
        }
      }
      ledger.maxPutOffset = -1;
      ledger.maxFlushedOffset = -1;
    }
    return reset;
  }

  /**
   * Whether putting a record of {@code tp} at {@code offset} would take the current instance's put
   * stream of that partition backwards: it was given that offset or a higher one already (a
   * redelivery of a record another member held). What a preCommit then returns is ambiguous — "all
   * below X" and "everything up to my last put of X - 1" no longer name the same records — so the
   * driver closes and reopens the partition first (see {@link #forgetPuts(Set)}).
   */
  public synchronized boolean rewinds(TopicPartition tp, long offset) {
    PartitionLedger ledger = partitions.get(tp);
    return ledger != null && ledger.maxPutOffset >= offset;
  }

  /**
   * The instance closed {@code closed} and opened them again, dropping what it had buffered of
   * them: their records put and not yet covered by a preCommit go back to {@link State#READY}, to
   * be put again, and the put stream of each starts afresh. Records a preCommit already covered
   * stay as they are (the sink has them). Returns the records to put again, in partition then
   * offset order.
   */
  public synchronized List<Entry> forgetPuts(Set<TopicPartition> closed) {
    acceptScanDue = true;
    List<Entry> reset = new ArrayList<>();
    for (TopicPartition tp : closed) {
      PartitionLedger ledger = partitions.get(tp);
      if (ledger == null) {
        continue;
      }
      for (Entry entry : ledger.entries.values()) {
        if ((entry.state == State.PUT || entry.state == State.CONFIRMED) && !entry.flushed) {
          entry.state = State.READY;
          entry.putSequence = -1;
          entry.priorMaxPutOffset = -1;
          entry.acceptableSinceMs = -1;
          reset.add(entry);
        } else if (entry.state == State.PUT || entry.state == State.CONFIRMED) {
          entry.priorMaxPutOffset = -1;
        }
      }
      ledger.maxPutOffset = -1;
    }
    return reset; // those in unconfirmed are READY now: its confirmation skips them
  }

  /**
   * The offsets to hand to preCommit: per partition that has had records put, the highest offset
   * put + 1, in original coordinates. Only partitions in {@code opened} are included.
   */
  public synchronized Map<TopicPartition, Long> currentOffsets(Set<TopicPartition> opened) {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    partitions.forEach(
        (tp, ledger) -> {
          if (ledger.maxPutOffset >= 0 && opened.contains(tp)) {
            offsets.put(tp, ledger.maxPutOffset + 1);
          }
        });
    return offsets;
  }

  /**
   * Applies what a preCommit returned for the offsets it was given ({@code passed}, from {@link
   * #currentOffsets}); {@code lastPutSequence} is the sequence of the last put that had returned
   * when preCommit was called. Offsets above what was passed, and partitions that were not passed,
   * are ignored, as the Connect runtime does. Returns the partitions whose returned offset was
   * ignored for being too high.
   *
   * <p>A returned offset X for a partition covers (marks flushed) a held record of it only when
   *
   * <ul>
   *   <li>its put returned before preCommit was called ({@code putSequence <= lastPutSequence}): a
   *       preCommit result says nothing of records the sink had not been given;
   *   <li>its offset is below X; and
   *   <li>no record of the partition with an offset of X or more was put before it. Under the sink
   *       runtime a partition's records arrive in offset order, so X also marks a position in the
   *       stream the task saw, and a sink may compute X from that position (an S3-style sink
   *       returns the first offset of the file it has not written yet). A share group delivers a
   *       partition out of order (a record released by another member comes back after higher
   *       ones), so a record put after a higher one lies beyond that position even when its offset
   *       is below X: such a sink has it in the unwritten file.
   * </ul>
   *
   * <p>So a lower offset redelivered after an earlier commit is never ACCEPTed until a preCommit
   * called after its put covers it, and never by an offset that the task may have derived from
   * records put before it.
   */
  public synchronized List<TopicPartition> committed(
      long lastPutSequence, Map<TopicPartition, Long> passed, Map<TopicPartition, Long> returned) {
    List<TopicPartition> ignored = new ArrayList<>();
    returned.forEach(
        (tp, offset) -> {
          Long given = passed.get(tp);
          if (given == null || offset == null) {
            return;
          }
          if (offset > given) {
            ignored.add(tp);
            return;
          }
          PartitionLedger ledger = partitions.get(tp);
          if (ledger == null) {
            return;
          }
          for (Entry entry : ledger.entries.below(offset)) {
            if (!entry.flushed
                && (entry.state == State.PUT || entry.state == State.CONFIRMED)
                && entry.putSequence <= lastPutSequence
                && entry.priorMaxPutOffset < offset) {
              entry.flushed = true;
              ledger.maxFlushedOffset = Math.max(ledger.maxFlushedOffset, entry.offset);
              acceptScanDue = true;
            }
          }
        });
    return ignored;
  }

  /** Marks a held record for REJECT once its errant-record future is done. */
  public synchronized void rejecting(Entry entry) {
    entry.state = State.REJECTING;
    acceptScanDue = true;
  }

  /**
   * Takes records that are both confirmed and flushed (see {@link #committed}) as ACCEPT, skipping
   * the partitions {@code blocked} rejects (those with errant-record writes still outstanding).
   *
   * <p>Records are taken a whole acquired range at a time: the broker keeps one state for a range
   * acknowledged whole, but splits it into one state per offset (and persists one state batch per
   * offset) as soon as part of it is acknowledged, which costs it several times the CPU per record.
   * So a record whose range still has records this ledger holds in another state, or has not
   * received yet, waits for them ({@link #waitingForRange} counts those that could be taken but
   * wait, in ranges whose other held records are all put). It is taken anyway when {@code all} is
   * set (stop), or once {@code nowMs} is past its take-by time ({@link #takeByMs}), so the wait
   * stays well inside the lock.
   */
  public synchronized Acknowledgements takeAccepted(
      Predicate<TopicPartition> blocked, long nowMs, long renewMarginMs, boolean all) {
    Acknowledgements acks = new Acknowledgements();
    if (!all && !acceptScanDue && renewMarginMs == acceptMarginMs && nowMs < acceptRecheckAtMs) {
      return acks; // nothing changed since the last scan
    }
    acceptScanDue = false;
    acceptMarginMs = renewMarginMs;
    acceptRecheckAtMs = Long.MAX_VALUE;
    waitingForRange = 0;
    for (Map.Entry<TopicPartition, PartitionLedger> e : partitions.entrySet()) {
      PartitionLedger ledger = e.getValue();
      if (ledger.maxFlushedOffset < 0) {
        continue;
      }
      if (blocked.test(e.getKey())) {
        acceptScanDue = true; // scan again next time: the block lifts without telling the ledger
        continue;
      }
      int before = ledger.entries.size();
      new RangeScan(e.getKey(), ledger, acks, nowMs, renewMarginMs, all).run();
      size -= before - ledger.entries.size();
    }
    return acks;
  }

  /**
   * The latest time an acceptable {@code entry} waits for the rest of its range: when it would be
   * due for renewal (an ACCEPT is then no dearer than the RENEW it replaces), and at most a quarter
   * of its lock after it became acceptable (the lock keeper may renew it meanwhile, which moves the
   * first bound on).
   */
  private static long takeByMs(Entry entry, long renewMarginMs) {
    return Math.min(
        renewAtMs(entry, renewMarginMs), entry.acceptableSinceMs + entry.lockDurationMs / 4);
  }

  /** Whether {@code entry} may be ACCEPTed: confirmed by a later put and flushed. */
  private static boolean acceptable(Entry entry) {
    return entry.state == State.CONFIRMED && entry.flushed;
  }

  /**
   * One partition's part of {@link #takeAccepted}: one pass over the records up to the end of the
   * range holding the highest flushed offset, a range at a time (records of one range are adjacent
   * in offset order), and a second pass over the ranges taken.
   */
  private final class RangeScan {
    private final PartitionLedger ledger;
    private final long nowMs;
    private final long renewMarginMs;
    private final boolean all;

    private long first;
    private long end = Long.MIN_VALUE;
    private int held;
    private int acceptable;
    private boolean allPut;
    private long takeBy;

    /** [first, last] spans to take, adjacent taken ranges merged (no held record between). */
    private final List<long[]> take = new ArrayList<>();

    private boolean previousTaken;
    private final Compactor accepted;

    RangeScan(
        TopicPartition tp,
        PartitionLedger ledger,
        Acknowledgements acks,
        long nowMs,
        long renewMarginMs,
        boolean all) {
      this.ledger = ledger;
      this.nowMs = nowMs;
      this.renewMarginMs = renewMarginMs;
      this.all = all;
      this.accepted = new Compactor(acks, tp, AckType.ACCEPT);
    }

    void run() {
      boolean open = false;
      for (Entry entry : ledger.entries.values()) {
        if (entry.acquiredLastOffset != end) {
          if (open) {
            decide();
          }
          if (entry.offset > ledger.maxFlushedOffset) {
            open = false;
            break; // no flushed record from here on
          }
          open = true;
          first = entry.offset;
          end = entry.acquiredLastOffset;
          held = 0;
          acceptable = 0;
          allPut = true;
          takeBy = Long.MAX_VALUE;
        }
        held++;
        if (AckLedger.acceptable(entry)) {
          acceptable++;
          if (entry.acceptableSinceMs < 0) {
            entry.acceptableSinceMs = nowMs;
          }
          takeBy = Math.min(takeBy, takeByMs(entry, renewMarginMs));
        }
        allPut &= entry.state == State.PUT || entry.state == State.CONFIRMED;
      }
      if (open) {
        decide();
      }
      for (long[] span : take) {
        takeAcceptable(span[0], span[1]);
      }
      accepted.flush();
      if (ledger.entries.isEmpty()) {
        // Otherwise left as an upper bound: a stale one only makes the next scan longer.
        ledger.maxFlushedOffset = -1;
      }
    }

    /** Whether the range scanned so far is taken; records those that wait for it. */
    private void decide() {
      boolean taken = decideTaken();
      if (taken && previousTaken) {
        take.get(take.size() - 1)[1] = end;
      } else if (taken) {
        take.add(new long[] {first, end});
      }
      previousTaken = taken;
    }

    private boolean decideTaken() {
      if (acceptable == 0) {
        return false;
      }
      boolean whole = acceptable == held && ledger.maxAcquiredOffset >= end;
      if (whole || all || takeBy <= nowMs) {
        return true;
      }
      if (allPut) {
        waitingForRange += acceptable;
      }
      acceptRecheckAtMs = Math.min(acceptRecheckAtMs, takeBy);
      return false;
    }

    /** Removes the acceptable records of [from, to] and ACCEPTs them, compacted. */
    private void takeAcceptable(long from, long to) {
      Iterator<Entry> it = ledger.entries.between(from, to).iterator();
      while (it.hasNext()) {
        Entry entry = it.next();
        if (!AckLedger.acceptable(entry)) {
          continue;
        }
        it.remove();
        entry.held = false;
        accepted.add(entry.offset);
      }
    }
  }

  /** Whether the last scan of {@link #takeAccepted} held records back for their range. */
  private boolean rangesWait() {
    return acceptRecheckAtMs != Long.MAX_VALUE;
  }

  /**
   * Records the last {@link #takeAccepted} held back although they could have been taken, in ranges
   * whose other held records are all put: a commit covering those would let them go.
   */
  public synchronized int waitingForRange() {
    return waitingForRange;
  }

  /** Takes the given held records with one decision (REJECT, RELEASE, ...), compacted. */
  public synchronized Acknowledgements take(Collection<Entry> entries, AckType type) {
    Acknowledgements acks = new Acknowledgements();
    Map<TopicPartition, List<Long>> offsets = new LinkedHashMap<>();
    for (Entry entry : entries) {
      if (!entry.held) {
        continue; // already acknowledged (or named twice)
      }
      entry.held = false;
      offsets.computeIfAbsent(entry.partition, p -> new ArrayList<>()).add(entry.offset);
    }
    offsets.forEach(
        (tp, list) -> {
          list.sort(null);
          PartitionLedger ledger = partitions.get(tp);
          for (long offset : list) {
            ledger.entries.remove(offset);
            size--;
          }
          acceptScanDue = true; // the rest of a range may now be whole
          addCompacted(acks, tp, list, type);
        });
    return acks;
  }

  /** Takes every held record matching {@code filter} with one decision, compacted. */
  public synchronized Acknowledgements takeAll(Predicate<Entry> filter, AckType type) {
    Acknowledgements acks = new Acknowledgements();
    partitions.forEach((tp, ledger) -> takeInto(acks, tp, ledger, filter, type));
    return acks;
  }

  /**
   * RENEWs every held record whose lock has less than half its duration left at {@code nowMs} (or
   * less than {@code minMarginMs}, when that is larger), and moves its assumed deadline on. The
   * records stay in the ledger. A record whose lock is already lost ({@link #lockLost}) is left for
   * {@link #forgetExpired}: the broker would refuse its RENEW and roll back the rest of the
   * partition's acknowledgements in that request.
   */
  public synchronized Acknowledgements renewDue(long nowMs, long minMarginMs) {
    Acknowledgements acks = new Acknowledgements();
    if (minMarginMs == renewCheckMarginMs && nowMs < renewCheckAtMs) {
      return acks;
    }
    long next = Long.MAX_VALUE;
    for (Map.Entry<TopicPartition, PartitionLedger> e : partitions.entrySet()) {
      List<Long> due = new ArrayList<>();
      for (Entry entry : e.getValue().entries.values()) {
        if (lockLost(entry, nowMs)) {
          continue;
        }
        if (renewAtMs(entry, minMarginMs) <= nowMs) {
          due.add(entry.offset);
          entry.lockDeadlineMs = nowMs + entry.lockDurationMs;
        }
        next = Math.min(next, renewAtMs(entry, minMarginMs));
      }
      addCompacted(acks, e.getKey(), due, AckType.RENEW);
    }
    renewCheckMarginMs = minMarginMs;
    renewCheckAtMs = next;
    return acks;
  }

  /**
   * When {@code entry} is due for renewal: less than half its lock (or the margin) left, but never
   * before a quarter of it has passed, so that a margin as long as the lock does not renew on every
   * cycle.
   */
  private static long renewAtMs(Entry entry, long minMarginMs) {
    long lock = entry.lockDurationMs;
    return entry.lockDeadlineMs - Math.min(Math.max(lock / 2, minMarginMs), lock - lock / 4);
  }

  /** When {@code entry}'s lock counts as lost, see {@link #lockLost}. */
  private static long lostAtMs(Entry entry) {
    return entry.lockDeadlineMs - expiryMarginMs(entry.lockDurationMs);
  }

  /**
   * The least lock time a held record must have left to be acknowledged: below it, an ACCEPT,
   * RENEW, RELEASE or REJECT may reach the broker after the lock ran out. One second, or a quarter
   * of the lock when that is shorter.
   */
  static long expiryMarginMs(long lockDurationMs) {
    return Math.min(EXPIRY_MARGIN_MS, lockDurationMs / 4);
  }

  /** See {@link #expiryMarginMs}. */
  static final long EXPIRY_MARGIN_MS = 1_000;

  /** Whether {@code entry}'s lock has run out at {@code nowMs}, or is about to. */
  public static boolean lockLost(Entry entry, long nowMs) {
    return entry.lockDeadlineMs - nowMs <= expiryMarginMs(entry.lockDurationMs);
  }

  /**
   * Removes, without any acknowledgement, every held record whose lock has run out at {@code nowMs}
   * (or is about to, see {@link #expiryMarginMs}) and returns them. The broker has made them
   * available again (or will before an ack could arrive): it refuses acknowledgements of records
   * this member no longer holds (INVALID_RECORD_STATE) and rolls back every other acknowledgement
   * of the same partition in that request, so they must not be acknowledged.
   */
  public synchronized List<Entry> forgetExpired(long nowMs) {
    List<Entry> forgotten = new ArrayList<>();
    if (nowMs < lostCheckAtMs) {
      return forgotten;
    }
    long next = Long.MAX_VALUE;
    for (PartitionLedger ledger : partitions.values()) {
      Iterator<Entry> it = ledger.entries.values().iterator();
      while (it.hasNext()) {
        Entry entry = it.next();
        if (lockLost(entry, nowMs)) {
          forgotten.add(entry);
          it.remove();
          entry.held = false;
          size--;
          acceptScanDue = true;
        } else {
          next = Math.min(next, lostAtMs(entry));
        }
      }
    }
    lostCheckAtMs = next;
    return forgotten;
  }

  /** Whether the ledger holds {@code entry} (it was neither acknowledged nor forgotten). */
  public synchronized boolean holds(Entry entry) {
    return entry.held;
  }

  /** When {@link #renewDue} will next find something to renew; Long.MAX_VALUE when nothing. */
  public synchronized long nextRenewalAtMs(long nowMs, long minMarginMs) {
    if (minMarginMs == renewCheckMarginMs
        && renewCheckAtMs > nowMs
        && renewCheckAtMs != Long.MAX_VALUE) {
      return renewCheckAtMs; // a lower bound: at worst one early wake-up, then exact again
    }
    long next = Long.MAX_VALUE;
    for (PartitionLedger ledger : partitions.values()) {
      for (Entry entry : ledger.entries.values()) {
        next = Math.min(next, renewAtMs(entry, minMarginMs));
      }
    }
    renewCheckMarginMs = minMarginMs;
    renewCheckAtMs = next;
    return next;
  }

  /** Held records in a state, in partition then offset order. */
  public synchronized List<Entry> entries(State state) {
    List<Entry> result = new ArrayList<>();
    for (PartitionLedger ledger : partitions.values()) {
      for (Entry entry : ledger.entries.values()) {
        if (entry.state == state) {
          result.add(entry);
        }
      }
    }
    return result;
  }

  /** Forgets partitions that hold nothing and were never put, to keep the map small. */
  public synchronized void pruneEmptyPartitions(Set<TopicPartition> keep) {
    partitions
        .entrySet()
        .removeIf(e -> e.getValue().entries.isEmpty() && !keep.contains(e.getKey()));
    acquiredPartition = null; // its ledger may be gone
    acquiredLedger = null;
  }

  private void takeInto(
      Acknowledgements acks,
      TopicPartition tp,
      PartitionLedger ledger,
      Predicate<Entry> filter,
      AckType type) {
    List<Long> taken = new ArrayList<>();
    Iterator<Entry> it = ledger.entries.values().iterator();
    while (it.hasNext()) {
      Entry entry = it.next();
      if (filter.test(entry)) {
        taken.add(entry.offset);
        it.remove();
        entry.held = false;
        size--;
        acceptScanDue = true;
      }
    }
    addCompacted(acks, tp, taken, type);
  }

  /**
   * {@code topic-partition@first..last#delivery} ranges of some entries, in the order given, for
   * logs (at most 10 ranges).
   */
  static String describe(List<Entry> entries) {
    StringBuilder out = new StringBuilder();
    int shown = 0;
    for (int i = 0; i < entries.size(); ) {
      Entry first = entries.get(i);
      int j = i + 1;
      while (j < entries.size()
          && entries.get(j).partition().equals(first.partition())
          && entries.get(j).offset() == entries.get(j - 1).offset() + 1
          && entries.get(j).deliveryCount() == first.deliveryCount()) {
        j++;
      }
      if (shown++ == 10) {
        out.append(", ...");
        break;
      }
      out.append(shown == 1 ? "" : ", ")
          .append(first.partition())
          .append('@')
          .append(first.offset());
      if (j - 1 > i) {
        out.append("..").append(entries.get(j - 1).offset());
      }
      out.append('#').append(first.deliveryCount());
      i = j;
    }
    return out.toString();
  }

  /**
   * Appends sorted offsets of one partition as the fewest contiguous ranges. Only strictly adjacent
   * offsets merge: a gap may hide a record held in another state or by another member, and
   * acknowledging offsets this member did not acquire fails the whole range on the broker.
   */
  static void addCompacted(
      Acknowledgements acks, TopicPartition tp, List<Long> sortedOffsets, AckType type) {
    Compactor compactor = new Compactor(acks, tp, type);
    for (long offset : sortedOffsets) {
      compactor.add(offset);
    }
    compactor.flush();
  }

  /** Turns ascending offsets of one partition into the fewest ranges, see {@link #addCompacted}. */
  private static final class Compactor {
    private final Acknowledgements acks;
    private final TopicPartition tp;
    private final AckType type;
    private long first = -1;
    private long last = -1;

    Compactor(Acknowledgements acks, TopicPartition tp, AckType type) {
      this.acks = acks;
      this.tp = tp;
      this.type = type;
    }

    void add(long offset) {
      if (first >= 0 && offset == last + 1) {
        last = offset;
      } else if (first < 0 || offset > last) {
        flush();
        first = offset;
        last = offset;
      } // else a duplicate
    }

    void flush() {
      if (first >= 0) {
        acks.add(tp.topic(), tp.partition(), first, last, type);
        first = -1;
      }
    }
  }
}
