package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.PutQueue.Pending;
import io.sharesink.connect.sink.PutQueue.PutBatch;
import io.sharesink.connect.sink.PutQueue.RetryState;
import io.sharesink.engine.AckType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

/**
 * The put queue on its own, over a real {@link AckLedger}: what the next put holds, in which order,
 * and what is put again after a rewind or a failed instance.
 */
class PutQueueTest {

  private static final TopicPartition A0 = new TopicPartition("a", 0);
  private static final TopicPartition A1 = new TopicPartition("a", 1);
  private static final TopicPartition B0 = new TopicPartition("b", 0);
  private static final long LOCK_MS = 30_000;
  private static final long STUCK_MS = 60_000;

  private final AckLedger ledger = new AckLedger();

  /** Offsets whose conversion anew fails and is tolerated (the converter returns null). */
  private final Set<Long> tolerated = new HashSet<>();

  /** Offsets whose conversion anew fails the task. */
  private final Set<Long> fatal = new HashSet<>();

  /** Every record the converter converted anew, in the order it did. */
  private final List<Entry> converted = new ArrayList<>();

  private final PutQueue queue = new PutQueue(ledger, this::convert, "test-0");

  private Pending convert(Entry entry) {
    if (fatal.contains(entry.offset())) {
      throw new ConnectException("conversion failed for " + entry);
    }
    converted.add(entry);
    return tolerated.contains(entry.offset()) ? null : pending(entry, "again");
  }

  private static Pending pending(Entry entry, String value) {
    SinkRecord record =
        new SinkRecord(
            entry.partition().topic(),
            entry.partition().partition(),
            null,
            null,
            Schema.STRING_SCHEMA,
            value + "@" + entry.offset(),
            entry.offset());
    return new Pending(entry, record);
  }

  /** Acquires and queues {@code offsets} of {@code tp}. */
  private List<Pending> add(TopicPartition tp, long... offsets) {
    List<Pending> added = new ArrayList<>();
    for (long offset : offsets) {
      Entry entry = ledger.acquire(tp, offset, 1, 0, LOCK_MS, offset);
      Pending pending = pending(entry, "first");
      queue.add(pending);
      added.add(pending);
    }
    return added;
  }

  private static List<String> order(PutBatch batch) {
    return batch.entries.stream().map(e -> e.partition() + "@" + e.offset()).toList();
  }

  private static List<String> order(List<Pending> items) {
    return items.stream().map(p -> p.entry().partition() + "@" + p.entry().offset()).toList();
  }

  @Test
  void theNextPutTakesEverythingWaitingInArrivalOrder() {
    add(A0, 5, 6);
    add(B0, 1);
    add(A0, 2);
    PutBatch batch = queue.takeReady(null);
    assertEquals(List.of("a-0@5", "a-0@6", "b-0@1", "a-0@2"), order(batch));
    assertEquals(4, batch.records.size());
    Map<TopicPartition, Long> lowest = new LinkedHashMap<>();
    lowest.put(A0, 2L);
    lowest.put(B0, 1L);
    assertEquals(lowest, batch.lowest, "each partition's lowest offset, by first appearance");
    assertEquals(0, queue.waiting());
    assertEquals(0, queue.takeReady(null).items.size());
  }

  @Test
  void aRecordDroppedByATransformIsPutWithoutASinkRecord() {
    Entry kept = ledger.acquire(A0, 0, 1, 0, LOCK_MS, 1);
    Entry dropped = ledger.acquire(A0, 1, 1, 0, LOCK_MS, 1);
    queue.add(pending(kept, "v"));
    queue.add(new Pending(dropped, null));
    PutBatch batch = queue.takeReady(null);
    assertEquals(List.of(kept, dropped), batch.entries, "both are acknowledged with the put");
    assertEquals(1, batch.records.size());
  }

  @Test
  void recordsOfAPausedPartitionKeepTheirPlaceUntilItIsResumed() {
    add(A0, 0);
    add(A1, 0);
    add(A0, 1);
    add(B0, 0);
    PutBatch first = queue.takeReady(A0::equals);
    assertEquals(List.of("a-1@0", "b-0@0"), order(first));
    assertEquals(2, queue.waiting());
    add(B0, 1);
    assertEquals(List.of("a-0@0", "a-0@1", "b-0@1"), order(queue.takeReady(null)));
  }

  @Test
  void aFailedPutGoesAgainWholeAfterItsBackoffAndNothingElseMeanwhile() {
    add(A0, 0, 1);
    PutBatch batch = queue.takeReady(null);
    add(A0, 2);
    assertEquals(RetryState.NONE, queue.retryState(1_000, STUCK_MS));
    assertEquals(Long.MAX_VALUE, queue.retryAtMs());

    queue.retryLater(batch, 1_000, 500);
    assertTrue(queue.retryPending());
    assertEquals(2, queue.retrySize());
    assertEquals(1_500, queue.retryAtMs());
    assertEquals(RetryState.BACKOFF, queue.retryState(1_499, STUCK_MS));
    assertEquals(RetryState.DUE, queue.retryState(1_500, STUCK_MS));
    assertEquals(batch.items, queue.retryBatch().items, "the same records");
    assertSame(batch.records.get(0), queue.retryBatch().records.get(0), "the same SinkRecords");

    // Failing again keeps when the first put failed: the bound counts from there.
    queue.retryLater(batch, 2_000, 500);
    assertEquals(2_500, queue.retryAtMs());
    assertEquals(1_000, queue.failingForMs(2_000));
    assertEquals(RetryState.DUE, queue.retryState(1_000 + STUCK_MS - 1, STUCK_MS));
    assertEquals(RetryState.GIVE_UP, queue.retryState(1_000 + STUCK_MS, STUCK_MS));

    queue.putReturned();
    assertFalse(queue.retryPending());
    assertEquals(RetryState.NONE, queue.retryState(2_500, STUCK_MS));
    assertEquals(List.of("a-0@2"), order(queue.takeReady(null)), "the waiting record is intact");
  }

  @Test
  void givingARetryUpHandsBackItsRecordsForRelease() {
    add(A0, 0, 1);
    PutBatch batch = queue.takeReady(null);
    queue.retryLater(batch, 0, 100);
    PutBatch givenUp = queue.giveUp();
    assertEquals(batch.entries, givenUp.entries);
    assertFalse(queue.retryPending());
  }

  @Test
  void recordsTheLedgerNoLongerHoldsAreNeverPut() {
    List<Pending> a = add(A0, 0, 1, 2);
    PutBatch retried = new PutBatch(List.of(a.get(0), a.get(1)));
    queue.takeReady(null);
    queue.add(a.get(2));
    queue.retryLater(retried, 0, 100);
    // The lock keeper released offset 1 and 2 (a stuck call), say.
    ledger.take(List.of(a.get(1).entry(), a.get(2).entry()), AckType.RELEASE);
    queue.pruneUnheld();
    assertEquals(List.of("a-0@0"), order(queue.retryBatch()), "the retry keeps its backoff");
    assertEquals(100, queue.retryAtMs());
    assertEquals(0, queue.waiting());
    // A retry left with nothing is no retry.
    ledger.take(List.of(a.get(0).entry()), AckType.RELEASE);
    queue.pruneUnheld();
    assertFalse(queue.retryPending());
  }

  @Test
  void aStuckReleaseOfTheLockKeeperPrunesOnceForEachRelease() {
    List<Pending> a = add(A0, 0, 1);
    queue.pruneAfterReleases(0);
    assertEquals(2, queue.waiting());
    ledger.take(List.of(a.get(0).entry()), AckType.RELEASE); // the keeper's release, its count 1
    queue.pruneAfterReleases(1);
    assertEquals(1, queue.waiting());
    ledger.take(List.of(a.get(1).entry()), AckType.RELEASE); // not a keeper's release
    queue.pruneAfterReleases(1);
    assertEquals(1, queue.waiting(), "no new release: no scan (a later one prunes it)");
    queue.pruneAfterReleases(2);
    assertEquals(0, queue.waiting());
  }

  @Test
  void aRetryDropsWhatTheLedgerForgotWhileItsPutFailed() {
    List<Pending> a = add(A0, 0, 1);
    PutBatch batch = queue.takeReady(null);
    ledger.take(List.of(a.get(0).entry()), AckType.RELEASE);
    queue.retryLater(batch, 0, 100);
    assertEquals(List.of("a-0@1"), order(queue.retryBatch()));
  }

  @Test
  void aPutBelowWhatAnOpenedPartitionWasGivenRewindsIt() {
    List<Pending> put = add(A0, 5, 6);
    add(A1, 3);
    ledger.putReturned(queue.takeReady(null).entries, 1);
    add(A0, 4); // redelivered below 6
    add(A1, 2); // below 3, but a-1 was never opened
    add(B0, 9);
    PutBatch next = queue.takeReady(null);
    assertEquals(Set.of(A0), queue.rewound(next, Set.of(A0, B0)));
    assertEquals(Set.of(), queue.rewound(next, Set.of(B0)));
    assertEquals(AckLedger.State.PUT, put.get(0).entry().state());
  }

  @Test
  void aRewoundPartitionPutsAgainWhatNoPreCommitCoveredConvertedAnewInOffsetOrder() {
    List<Pending> put = add(A0, 5, 6, 8);
    add(B0, 1);
    ledger.putReturned(queue.takeReady(null).entries, 1);
    add(A0, 4, 7);
    add(B0, 2);
    PutBatch next = queue.takeReady(null);
    Set<TopicPartition> rewound = queue.rewound(next, Set.of(A0, B0));
    assertEquals(Set.of(A0), rewound);

    PutBatch again = queue.putAgain(next, rewound);
    assertEquals(
        List.of("a-0@4", "a-0@5", "a-0@6", "a-0@7", "a-0@8", "b-0@2"),
        order(again),
        "partition then offset order; b-0's put stream goes on");
    assertEquals(
        List.of(put.get(0).entry(), put.get(1).entry(), put.get(2).entry()),
        converted,
        "only the records put before are converted anew");
    assertEquals("again@5", again.records.get(1).value());
    assertEquals("first@4", again.records.get(0).value(), "the new ones keep their conversion");
    assertEquals(AckLedger.State.READY, put.get(0).entry().state(), "put again from scratch");
    assertEquals(Set.of(), queue.rewound(again, Set.of(A0, B0)), "the stream starts afresh");
  }

  @Test
  void aRecordWhoseConversionAnewFailsAndIsToleratedIsLeftOut() {
    add(A0, 5, 6);
    ledger.putReturned(queue.takeReady(null).entries, 1);
    add(A0, 4);
    PutBatch next = queue.takeReady(null);
    tolerated.add(6L);
    PutBatch again = queue.putAgain(next, queue.rewound(next, Set.of(A0)));
    assertEquals(List.of("a-0@4", "a-0@5"), order(again));
  }

  @Test
  void aConversionAnewThatFailsTheTaskFailsThePutAgain() {
    add(A0, 5);
    ledger.putReturned(queue.takeReady(null).entries, 1);
    add(A0, 4);
    PutBatch next = queue.takeReady(null);
    fatal.add(5L);
    Set<TopicPartition> rewound = queue.rewound(next, Set.of(A0));
    assertThrows(ConnectException.class, () -> queue.putAgain(next, rewound));
  }

  @Test
  void aRecordBothQueuedAndPutBeforeGoesOnceConvertedAnew() {
    List<Pending> put = add(A0, 5);
    ledger.putReturned(queue.takeReady(null).entries, 1);
    add(A0, 4);
    // The put's own item listed again with the next put (the merge takes it once).
    List<Pending> items = new ArrayList<>(queue.takeReady(null).items);
    items.add(put.get(0));
    PutBatch next = new PutBatch(items);
    PutBatch again = queue.putAgain(next, queue.rewound(next, Set.of(A0)));
    assertEquals(List.of("a-0@4", "a-0@5"), order(again));
    assertEquals("again@5", again.records.get(1).value());
    assertNotSame(put.get(0), again.items.get(1));
  }

  @Test
  void afterAFailedInstanceEveryUnacceptedRecordGoesFirstInOffsetOrder() {
    List<Pending> put = add(A0, 3, 4);
    add(B0, 0);
    ledger.putReturned(queue.takeReady(null).entries, 1); // given to the failed instance
    List<Pending> retried = add(A1, 7);
    PutBatch retry = queue.takeReady(null);
    queue.retryLater(retry, 0, 100);
    List<Pending> failed = add(A0, 1);
    PutBatch failedPut = queue.takeReady(null);
    List<Pending> waiting = add(B0, 5);
    // Accepted already: not put again.
    Entry accepted = ledger.acquire(A0, 0, 1, 0, LOCK_MS, 0);
    ledger.putReturned(List.of(accepted), 2);
    ledger.take(List.of(accepted), AckType.ACCEPT);

    queue.requeueUnaccepted(failedPut.items);

    assertFalse(queue.retryPending(), "the retry is put to the next instance, as part of it");
    assertEquals(
        List.of("a-0@1", "a-0@3", "a-0@4", "a-1@7", "b-0@0", "b-0@5"),
        order(queue.takeReady(null)),
        "what the failed instance had, sorted, then what waited");
    assertEquals(
        List.of(put.get(0).entry(), put.get(1).entry(), ledger.get(B0, 0)),
        converted,
        "those it was given are converted anew; the others keep their conversion");
    assertEquals(AckLedger.State.READY, put.get(0).entry().state());
    assertEquals(AckLedger.State.READY, retried.get(0).entry().state());
    assertEquals(AckLedger.State.READY, failed.get(0).entry().state());
    assertEquals(AckLedger.State.READY, waiting.get(0).entry().state());
  }

  @Test
  void aRequeueLeavesOutWhatIsNoLongerHeldOrAlreadyDecided() {
    List<Pending> failed = add(A0, 0, 1, 2);
    PutBatch failedPut = queue.takeReady(null);
    ledger.take(List.of(failed.get(0).entry()), AckType.RELEASE); // lock lost meanwhile
    ledger.rejecting(failed.get(1).entry()); // reported as errant during the put
    queue.requeueUnaccepted(failedPut.items);
    assertEquals(List.of("a-0@2"), order(queue.takeReady(null)));
  }

  @Test
  void clearEmptiesTheQueueAndTheRetry() {
    add(A0, 0);
    queue.retryLater(queue.takeReady(null), 0, 100);
    add(A0, 1);
    queue.clear();
    assertFalse(queue.retryPending());
    assertEquals(0, queue.waiting());
  }
}
