package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.Acknowledgements.Range;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class AckLedgerTest {

  private static final TopicPartition TP0 = new TopicPartition("orders", 0);
  private static final TopicPartition TP1 = new TopicPartition("orders", 1);
  private static final long LOCK_MS = 30_000;

  private final AckLedger ledger = new AckLedger();

  /** The sequence of the last put that returned, as the driver passes it to committed(). */
  private long lastPut;

  private void putReturned(List<AckLedger.Entry> entries, long sequence) {
    ledger.putReturned(entries, sequence);
    lastPut = sequence;
  }

  /** A preCommit called now (after every put so far) returned {@code returned}. */
  private List<TopicPartition> committed(
      Map<TopicPartition, Long> passed, Map<TopicPartition, Long> returned) {
    return ledger.committed(lastPut, passed, returned);
  }

  private List<AckLedger.Entry> acquire(TopicPartition tp, long from, long to, long nowMs) {
    List<AckLedger.Entry> entries = new ArrayList<>();
    for (long offset = from; offset <= to; offset++) {
      entries.add(ledger.acquire(tp, offset, 1, nowMs, nowMs + LOCK_MS, offset));
    }
    return entries;
  }

  /** Acquires [from, to] of {@code tp} as one acquired range ending at {@code to} (at time 0). */
  private List<AckLedger.Entry> acquireRange(TopicPartition tp, long from, long to) {
    List<AckLedger.Entry> entries = new ArrayList<>();
    for (long offset = from; offset <= to; offset++) {
      entries.add(ledger.acquire(tp, offset, 1, 0, LOCK_MS, to));
    }
    return entries;
  }

  /** Puts {@code entries}, confirms them with a put(empty) and commits everything put. */
  private void putConfirmAndCommit(List<AckLedger.Entry> entries, long sequence) {
    putReturned(entries, sequence);
    putReturned(List.of(), sequence + 1);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0, TP1));
    committed(passed, passed);
  }

  private static Range range(TopicPartition tp, long first, long last, AckType type) {
    return new Range(tp.topic(), tp.partition(), first, last, type);
  }

  @Test
  void compactsContiguousOffsetsIntoOneRangeAndSplitsAtGaps() {
    Acknowledgements acks = new Acknowledgements();
    AckLedger.addCompacted(acks, TP0, List.of(3L, 4L, 5L, 7L, 8L, 10L), AckType.ACCEPT);
    assertEquals(
        List.of(
            range(TP0, 3, 5, AckType.ACCEPT),
            range(TP0, 7, 8, AckType.ACCEPT),
            range(TP0, 10, 10, AckType.ACCEPT)),
        acks.ranges());
  }

  @Test
  void compactionIgnoresDuplicateOffsetsAndEmptyInput() {
    Acknowledgements acks = new Acknowledgements();
    AckLedger.addCompacted(acks, TP0, List.of(), AckType.RENEW);
    assertTrue(acks.isEmpty());
    AckLedger.addCompacted(acks, TP0, List.of(1L, 1L, 2L), AckType.RENEW);
    assertEquals(List.of(range(TP0, 1, 2, AckType.RENEW)), acks.ranges());
  }

  @Test
  void refusesARecordItAlreadyHolds() {
    assertNotNull(ledger.acquire(TP0, 5, 1, 0, LOCK_MS, 5));
    assertNull(ledger.acquire(TP0, 5, 2, 10, 10 + LOCK_MS, 5));
    assertEquals(1, ledger.size());
  }

  @Test
  void acceptsOnlyRecordsConfirmedByALaterPutAndCoveredByPreCommit() {
    List<AckLedger.Entry> first = acquire(TP0, 0, 9, 0);
    putReturned(first, 1);
    assertTrue(ledger.hasUnconfirmedPuts());

    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    assertEquals(Map.of(TP0, 10L), passed);
    committed(passed, passed);
    // preCommit covers them, but no later put has returned: a deferred failure could still come.
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty());

    putReturned(List.of(), 2); // put(empty) returned without throwing
    assertFalse(ledger.hasUnconfirmedPuts());
    assertEquals(
        List.of(range(TP0, 0, 9, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertTrue(ledger.isEmpty());
  }

  @Test
  void acceptsOnlyBelowTheReturnedOffset() {
    putReturned(acquire(TP0, 0, 9, 0), 1);
    putReturned(List.of(), 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    committed(passed, Map.of(TP0, 4L)); // the sink flushed 0..3 only
    assertEquals(
        List.of(range(TP0, 0, 3, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertEquals(6, ledger.size());
  }

  @Test
  void ignoresReturnedOffsetsAboveWhatWasPassedAndUnknownPartitions() {
    putReturned(acquire(TP0, 0, 4, 0), 1);
    putReturned(List.of(), 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    List<TopicPartition> ignored = committed(passed, Map.of(TP0, 99L, TP1, 3L));
    assertEquals(List.of(TP0), ignored);
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty());
    assertEquals(5, ledger.size());
  }

  @Test
  void currentOffsetsLeaveOutPartitionsNotOpened() {
    putReturned(acquire(TP0, 0, 1, 0), 1);
    putReturned(acquire(TP1, 7, 8, 0), 1);
    assertEquals(Map.of(TP1, 9L), ledger.currentOffsets(Set.of(TP1)));
    assertEquals(Map.of(TP0, 2L, TP1, 9L), ledger.currentOffsets(Set.of(TP0, TP1)));
  }

  @Test
  void blockedPartitionsWaitForTheirErrantWrites() {
    putReturned(acquire(TP0, 0, 2, 0), 1);
    putReturned(acquire(TP1, 0, 2, 0), 1);
    putReturned(List.of(), 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0, TP1));
    committed(passed, passed);
    Acknowledgements acks = ledger.takeAccepted(tp -> tp.equals(TP1), 0, 0, false);
    assertEquals(List.of(range(TP0, 0, 2, AckType.ACCEPT)), acks.ranges());
    assertEquals(
        List.of(range(TP1, 0, 2, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
  }

  @Test
  void anErrantRecordIsRejectedAloneAndSplitsTheAcceptedRanges() {
    List<AckLedger.Entry> entries = acquire(TP0, 0, 5, 0);
    putReturned(entries, 1);
    AckLedger.Entry bad = ledger.get(TP0, 3);
    ledger.rejecting(bad);
    putReturned(List.of(), 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    committed(passed, passed);
    assertEquals(
        List.of(range(TP0, 0, 2, AckType.ACCEPT), range(TP0, 4, 5, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertEquals(
        List.of(range(TP0, 3, 3, AckType.REJECT)),
        ledger.take(List.of(bad), AckType.REJECT).ranges());
    assertTrue(ledger.isEmpty());
  }

  @Test
  void aRecordReportedDuringItsPutIsNotMarkedPut() {
    List<AckLedger.Entry> entries = acquire(TP0, 0, 1, 0);
    ledger.rejecting(entries.get(1));
    putReturned(entries, 1);
    assertEquals(AckLedger.State.PUT, entries.get(0).state());
    assertEquals(AckLedger.State.REJECTING, entries.get(1).state());
  }

  @Test
  void takeSkipsRecordsAlreadyAcknowledged() {
    List<AckLedger.Entry> entries = acquire(TP0, 0, 3, 0);
    assertEquals(1, ledger.take(entries.subList(0, 2), AckType.RELEASE).size());
    Acknowledgements again = ledger.take(entries, AckType.RELEASE);
    assertEquals(List.of(range(TP0, 2, 3, AckType.RELEASE)), again.ranges());
    assertTrue(ledger.isEmpty());
  }

  /**
   * A record the ledger no longer holds is never acknowledged again, whichever way it left: the
   * broker refuses an acknowledgement of a record this member does not hold and rolls back the rest
   * of the partition's acknowledgements in that request. An errant-record report may name a record
   * after its ACCEPT, and a put may return after the keeper released its records.
   */
  @Test
  void recordsThatLeftTheLedgerAreNotTakenOrPutAgain() {
    List<AckLedger.Entry> accepted = acquire(TP0, 0, 1, 0);
    putConfirmAndCommit(accepted, 1);
    assertEquals(
        List.of(range(TP0, 0, 1, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    List<AckLedger.Entry> released = acquire(TP1, 0, 1, 0);
    assertEquals(
        List.of(range(TP1, 0, 1, AckType.RELEASE)),
        ledger.takeAll(entry -> entry.partition().equals(TP1), AckType.RELEASE).ranges());
    List<AckLedger.Entry> gone = new ArrayList<>(accepted);
    gone.addAll(released);
    for (AckLedger.Entry entry : gone) {
      assertFalse(ledger.holds(entry), entry.toString());
    }
    assertTrue(ledger.take(gone, AckType.REJECT).isEmpty());
    putReturned(released, 3);
    assertEquals(AckLedger.State.READY, released.get(0).state());
    assertFalse(ledger.hasUnconfirmedPuts());
    assertTrue(ledger.isEmpty());
  }

  @Test
  void renewsOnlyRecordsPastHalfTheirLockAndMovesTheirDeadline() {
    acquire(TP0, 0, 4, 0); // deadline 30 000
    acquire(TP0, 5, 9, 10_000); // deadline 40 000
    assertTrue(ledger.renewDue(10_000, 0).isEmpty());
    assertEquals(List.of(range(TP0, 0, 4, AckType.RENEW)), ledger.renewDue(15_000, 0).ranges());
    assertEquals(45_000, ledger.get(TP0, 0).lockDeadlineMs());
    assertEquals(40_000, ledger.get(TP0, 9).lockDeadlineMs());
    assertEquals(List.of(range(TP0, 5, 9, AckType.RENEW)), ledger.renewDue(25_000, 0).ranges());
    assertEquals(10, ledger.size());
    assertEquals(45_000, ledger.get(TP0, 0).lockDeadlineMs());
    assertEquals(55_000, ledger.get(TP0, 9).lockDeadlineMs());
  }

  @Test
  void aLargerMarginRenewsEarlier() {
    acquire(TP0, 0, 0, 0);
    assertTrue(ledger.renewDue(5_000, 20_000).isEmpty());
    assertEquals(1, ledger.renewDue(10_000, 20_000).size());
  }

  @Test
  void takeAllReleasesEverythingLeftInOneRangePerRun() {
    List<AckLedger.Entry> entries = acquire(TP0, 0, 9, 0);
    putReturned(entries.subList(0, 5), 1);
    acquire(TP1, 100, 101, 0);
    Acknowledgements acks = ledger.takeAll(e -> true, AckType.RELEASE);
    assertEquals(
        List.of(range(TP0, 0, 9, AckType.RELEASE), range(TP1, 100, 101, AckType.RELEASE)),
        acks.ranges());
    assertTrue(ledger.isEmpty());
  }

  @Test
  void aLowerOffsetReturnedLaterTakesNothingBack() {
    putReturned(acquire(TP0, 0, 9, 0), 1);
    putReturned(List.of(), 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    committed(passed, Map.of(TP0, 8L));
    committed(passed, Map.of(TP0, 2L));
    assertEquals(
        List.of(range(TP0, 0, 7, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
  }

  @Test
  void aRedeliveredLowerOffsetPutLaterIsCoveredOnlyByACommitAfterItsPut() {
    putReturned(acquire(TP0, 10, 12, 0), 1);
    putReturned(List.of(), 2);
    committed(ledger.currentOffsets(Set.of(TP0)), Map.of(TP0, 13L));
    assertEquals(
        List.of(range(TP0, 10, 12, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    // Offset 5 was released by another member and reaches this one afterwards: the commit above
    // said nothing about it, whatever its offset. A sink that buffers until flush has it in memory.
    putReturned(acquire(TP0, 5, 5, 1_000), 3);
    assertEquals(Map.of(TP0, 13L), ledger.currentOffsets(Set.of(TP0)));
    putReturned(List.of(), 4);
    putReturned(List.of(), 5);
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty(), "no flush covered it yet");
    assertEquals(1, ledger.awaitingCommit());
    committed(Map.of(TP0, 13L), Map.of(TP0, 13L));
    assertEquals(
        List.of(range(TP0, 5, 5, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
  }

  @Test
  void aPreCommitCalledBeforeARecordsPutDoesNotCoverIt() {
    List<AckLedger.Entry> first = acquire(TP0, 0, 4, 0);
    putReturned(first, 1);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP0));
    // The driver calls preCommit after put 1; the result arrives once put 2 (offsets 5..6) ran.
    List<AckLedger.Entry> second = acquire(TP0, 5, 6, 0);
    ledger.putReturned(second, 2);
    ledger.putReturned(List.of(), 3);
    ledger.committed(1, passed, Map.of(TP0, 5L));
    ledger.committed(1, Map.of(TP0, 7L), Map.of(TP0, 7L)); // as if it had covered 5..6 too
    assertEquals(
        List.of(range(TP0, 0, 4, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertFalse(second.get(0).flushed());
  }

  @Test
  void anOffsetDerivedFromRecordsPutEarlierDoesNotCoverALowerRecordPutAfterThem() {
    // An S3-style sink returns the first offset of the file it has not written yet (150): under
    // the runtime everything below it was put before it. Offset 30 comes back after 150 (released
    // by another member), so it is in that unwritten file although 30 < 150.
    putReturned(acquire(TP0, 100, 149, 0), 1);
    putReturned(acquire(TP0, 150, 160, 0), 2);
    putReturned(acquire(TP0, 30, 30, 0), 3);
    putReturned(List.of(), 4);
    committed(ledger.currentOffsets(Set.of(TP0)), Map.of(TP0, 150L));
    assertEquals(
        List.of(range(TP0, 100, 149, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertFalse(ledger.get(TP0, 30).flushed(), "put after 150: not covered by 150");
    // The sink writes that file and moves on: 161 covers it.
    committed(ledger.currentOffsets(Set.of(TP0)), Map.of(TP0, 161L));
    assertEquals(
        List.of(range(TP0, 30, 30, AckType.ACCEPT), range(TP0, 150, 160, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
  }

  @Test
  void aRestartedInstanceStartsItsOwnStream() {
    putReturned(acquire(TP0, 50, 59, 0), 1);
    AckLedger.Entry low = acquire(TP0, 10, 10, 0).get(0);
    putReturned(List.of(low), 2);
    // The instance is replaced: what it was given no longer orders anything for the next one.
    assertEquals(11, ledger.forgetPuts().size());
    putReturned(List.of(low), 3);
    putReturned(List.of(), 4);
    committed(ledger.currentOffsets(Set.of(TP0)), Map.of(TP0, 11L));
    assertTrue(low.flushed(), "the new instance was given 10 first");
  }

  @Test
  void recordsWhoseLockRanOutOrIsAboutToAreForgottenWithoutAnAcknowledgement() {
    long t0 = 1_000_000;
    List<AckLedger.Entry> old = acquire(TP0, 0, 2, t0);
    List<AckLedger.Entry> fresh = acquire(TP1, 0, 1, t0 + 20_000);
    // 30 s locks: at t0 + 29.5 s, TP0's have 0.5 s left (below the 1 s margin), TP1's 20.5 s
    List<AckLedger.Entry> lost = ledger.forgetExpired(t0 + 29_500);
    assertEquals(old, lost);
    assertEquals(2, ledger.size());
    assertFalse(ledger.holds(old.get(0)));
    assertTrue(ledger.holds(fresh.get(0)));
    // nothing is left to acknowledge for them: no RENEW, no RELEASE
    assertEquals(List.of(), ledger.take(old, AckType.RELEASE).ranges());
    assertEquals(
        List.of(range(TP1, 0, 1, AckType.RENEW)),
        ledger.renewDue(t0 + 36_000, 0).ranges(),
        "only the held ones are renewed");
    assertEquals(List.of(), ledger.forgetExpired(t0 + 36_000), "renewed: 30 s left");
    assertEquals(500, AckLedger.expiryMarginMs(2_000), "a quarter of a short lock");
  }

  @Test
  void theLockChecksSkipScanningUntilALockCanBeDueButNeverMissARecordAddedLater() {
    long t0 = 1_000_000;
    acquire(TP0, 0, 9, t0);
    // checked once: nothing is due, and the next checks can skip the scan until t0 + 15 s
    assertEquals(List.of(), ledger.forgetExpired(t0 + 1_000));
    assertTrue(ledger.renewDue(t0 + 1_000, 0).isEmpty());
    // a record acquired with a shorter lock (a 2 s grant) lowers both bounds
    AckLedger.Entry shortLock = ledger.acquire(TP1, 0, 1, t0 + 1_000, t0 + 3_000, 0);
    assertEquals(
        List.of(range(TP1, 0, 0, AckType.RENEW)),
        ledger.renewDue(t0 + 2_000, 0).ranges(),
        "half of its 2 s lock is gone at t0 + 2 s");
    assertEquals(
        t0 + 3_000, ledger.nextRenewalAtMs(t0 + 2_000, 0), "renewed at t0 + 2 s with a 2 s lock");
    assertEquals(List.of(), ledger.forgetExpired(t0 + 2_000));
    assertEquals(List.of(shortLock), ledger.forgetExpired(t0 + 3_600), "0.4 s left: lost");
    assertEquals(t0 + 15_000, ledger.nextRenewalAtMs(t0 + 3_600, 0), "exact again after the scan");
    // a removal leaves the bound low: one early, empty check, then exact again
    ledger.take(ledger.entries(AckLedger.State.READY), AckType.ACCEPT);
    assertTrue(ledger.renewDue(t0 + 16_000, 0).isEmpty());
    assertEquals(List.of(), ledger.forgetExpired(t0 + 40_000));
    assertEquals(Long.MAX_VALUE, ledger.nextRenewalAtMs(t0 + 40_000, 0));
  }

  @Test
  void anAcquiredRangeIsAcceptedWholeNotPartByPart() {
    List<AckLedger.Entry> entries = acquireRange(TP0, 0, 9);
    putConfirmAndCommit(entries.subList(0, 4), 1);
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty(), "0-3 wait for 4-9");
    assertEquals(10, ledger.size());
    putReturned(entries.subList(4, 10), 3);
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty());
    assertEquals(4, ledger.waitingForRange(), "the rest is put: a commit would let them go");
    putConfirmAndCommit(List.of(), 4);
    assertEquals(
        List.of(range(TP0, 0, 9, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertEquals(0, ledger.waitingForRange());
    assertTrue(ledger.isEmpty());
  }

  @Test
  void aRangeWaitsForRecordsNotReceivedYetButNotForOtherRanges() {
    List<AckLedger.Entry> first = acquireRange(TP0, 0, 4);
    // 5-9 are one range of which only 5-6 have reached the driver so far.
    List<AckLedger.Entry> second = new ArrayList<>();
    for (long offset = 5; offset <= 6; offset++) {
      second.add(ledger.acquire(TP0, offset, 1, 0, LOCK_MS, 9));
    }
    List<AckLedger.Entry> both = new ArrayList<>(first);
    both.addAll(second);
    putConfirmAndCommit(both, 1);
    assertEquals(
        List.of(range(TP0, 0, 4, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, false).ranges());
    assertEquals(2, ledger.waitingForRange());
  }

  @Test
  void aRangeWithARecordNotPutYetWaitsWithoutAskingForACommit() {
    List<AckLedger.Entry> entries = acquireRange(TP0, 0, 4);
    putConfirmAndCommit(entries.subList(0, 3), 1); // 3-4 still READY (a pause, say)
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty());
    assertEquals(0, ledger.waitingForRange(), "a commit would not let them go");
  }

  @Test
  void aWaitingRecordIsAcceptedOnceItWouldBeDueForRenewalOrWhenEverythingIsTaken() {
    List<AckLedger.Entry> entries = acquireRange(TP0, 0, 4);
    putConfirmAndCommit(entries.subList(0, 2), 1);
    assertTrue(ledger.takeAccepted(tp -> false, LOCK_MS / 2 - 1, 0, false).isEmpty());
    assertEquals(
        List.of(range(TP0, 0, 1, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, LOCK_MS / 2, 0, false).ranges(),
        "half the lock left: accepted rather than renewed");
    putConfirmAndCommit(entries.subList(2, 4), 3);
    assertEquals(
        List.of(range(TP0, 2, 3, AckType.ACCEPT)),
        ledger.takeAccepted(tp -> false, 0, 0, true).ranges(),
        "all: taken although 4 is not");
  }
}
