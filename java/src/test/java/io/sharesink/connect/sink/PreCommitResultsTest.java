package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;

class PreCommitResultsTest {

  private static final TopicPartition TP = new TopicPartition("t", 0);

  private static List<AckLedger.Entry> putAndConfirm(AckLedger ledger, int count) {
    List<AckLedger.Entry> entries = new ArrayList<>();
    for (int offset = 0; offset < count; offset++) {
      entries.add(ledger.acquire(TP, offset, 1, 0, 30_000, offset));
    }
    ledger.putReturned(entries, 1);
    ledger.putReturned(List.of(), 2);
    return entries;
  }

  @Test
  void anEmptyMapCoversNothingByDefaultAndWarnsOnceTheWindowFills() {
    AckLedger ledger = new AckLedger();
    List<AckLedger.Entry> entries = putAndConfirm(ledger, 5);
    PreCommitResults results =
        new PreCommitResults(new SinkDriverConfig(Map.of("share.commit.max.records", "5")), "t-0");
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    for (int i = 1; i < PreCommitResults.EMPTY_RESULTS_BEFORE_WARNING; i++) {
      results.apply(ledger, 2, passed, Map.of(), false);
      assertFalse(results.warned(), "not yet: " + i + " empty maps");
    }
    results.apply(ledger, 2, passed, null, false);
    assertTrue(results.warned(), "5 records (the threshold) wait after 3 empty maps");
    assertTrue(entries.stream().noneMatch(AckLedger.Entry::flushed), "nothing covered");
    assertTrue(ledger.takeAccepted(tp -> false, 0, 0, false).isEmpty());
  }

  @Test
  void aFewRecordsWaitingWarnOnlyWhenTheWindowIsUsedUp() {
    AckLedger ledger = new AckLedger();
    putAndConfirm(ledger, 2);
    PreCommitResults results = new PreCommitResults(new SinkDriverConfig(Map.of()), "t-0");
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    for (int i = 0; i < 5; i++) {
      results.apply(ledger, 2, passed, Map.of(), false);
    }
    assertFalse(results.warned(), "2 of 1000: the window is far from full");
    results.apply(ledger, 2, passed, Map.of(), true);
    assertTrue(results.warned(), "a poll came back empty while they wait");
  }

  @Test
  void anOffsetResetsTheCountAndAcceptCoversWhatWasPut() {
    AckLedger ledger = new AckLedger();
    List<AckLedger.Entry> entries = putAndConfirm(ledger, 3);
    PreCommitResults results =
        new PreCommitResults(
            new SinkDriverConfig(Map.of("share.commit.empty.precommit", "accept")), "t-0");
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    results.apply(ledger, 2, passed, Map.of(), true);
    assertFalse(results.warned());
    assertTrue(entries.stream().allMatch(AckLedger.Entry::flushed), "accept: covered");
    assertEquals(1, ledger.takeAccepted(tp -> false, 0, 0, false).size());

    AckLedger other = new AckLedger();
    putAndConfirm(other, 3);
    PreCommitResults holding = new PreCommitResults(new SinkDriverConfig(Map.of()), "t-0");
    Map<TopicPartition, Long> given = other.currentOffsets(Set.of(TP));
    holding.apply(other, 2, given, Map.of(), true);
    holding.apply(other, 2, given, Map.of(), true);
    holding.apply(other, 2, given, Map.of(TP, new OffsetAndMetadata(1)), true);
    holding.apply(other, 2, given, Map.of(), true);
    assertFalse(holding.warned(), "the offset in between restarted the count");
  }

  private static PreCommitResults holdingFor(long stuckMs) {
    return new PreCommitResults(
        new SinkDriverConfig(
            Map.of(
                "share.commit.max.records",
                "5",
                "share.task.stuck.timeout.ms",
                String.valueOf(stuckMs))),
        "t-0");
  }

  @Test
  void emptyMapsWhileRecordsWaitAndNoneIsPutFailTheTaskAtTheStuckBound() {
    AckLedger ledger = new AckLedger();
    putAndConfirm(ledger, 5);
    PreCommitResults results = holdingFor(60_000);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    long t0 = 1_000_000;
    for (long t = t0; t < t0 + 60_000; t += 5_000) {
      results.apply(ledger, 2, passed, Map.of(), true, t, 5);
    }
    ConnectException e =
        assertThrows(
            ConnectException.class,
            () -> results.apply(ledger, 2, passed, Map.of(), true, t0 + 60_000, 5));
    assertTrue(e.getMessage().contains("manages its own offsets"), e.getMessage());
    assertTrue(e.getMessage().contains("share.task.stuck.timeout.ms=60000"), e.getMessage());
    assertTrue(e.getMessage().contains("share.commit.empty.precommit=accept"), e.getMessage());
    // Once: the final commit of the failed task does not throw again.
    results.apply(ledger, 2, passed, Map.of(), true, t0 + 61_000, 5);
  }

  @Test
  void recordsPutAnOffsetOrNothingWaitingStartTheSpanAgain() {
    AckLedger ledger = new AckLedger();
    putAndConfirm(ledger, 5);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    PreCommitResults results = holdingFor(60_000);
    results.apply(ledger, 2, passed, Map.of(), true, 0, 5);
    results.apply(ledger, 2, passed, Map.of(), true, 50_000, 6); // one more put: filling
    results.apply(ledger, 2, passed, Map.of(), true, 100_000, 6);
    assertThrows(
        ConnectException.class, () -> results.apply(ledger, 2, passed, Map.of(), true, 110_000, 6));

    PreCommitResults offsets = holdingFor(60_000);
    offsets.apply(ledger, 2, passed, Map.of(), true, 0, 5);
    offsets.apply(ledger, 2, passed, Map.of(TP, new OffsetAndMetadata(0)), true, 50_000, 5);
    offsets.apply(ledger, 2, passed, Map.of(), true, 70_000, 5);
    offsets.apply(ledger, 2, passed, Map.of(), true, 129_000, 5); // 59 s since the offsets

    AckLedger idle = new AckLedger();
    PreCommitResults nothingWaits = holdingFor(60_000);
    for (long t = 0; t < 600_000; t += 10_000) {
      nothingWaits.apply(idle, 0, Map.of(), Map.of(), true, t, 0);
    }
  }

  @Test
  void aFewRecordsWaitingWithRecordsStillComingAreNotStalled() {
    // Below the filling threshold and the last poll brought records: not a full window.
    AckLedger ledger = new AckLedger();
    putAndConfirm(ledger, 2);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    PreCommitResults results = holdingFor(60_000);
    for (long t = 0; t < 600_000; t += 10_000) {
      results.apply(ledger, 2, passed, Map.of(), false, t, 2);
    }
  }

  @Test
  void acceptNeverFails() {
    AckLedger ledger = new AckLedger();
    putAndConfirm(ledger, 5);
    Map<TopicPartition, Long> passed = ledger.currentOffsets(Set.of(TP));
    PreCommitResults results =
        new PreCommitResults(
            new SinkDriverConfig(
                Map.of(
                    "share.commit.empty.precommit", "accept",
                    "share.task.stuck.timeout.ms", "1000")),
            "t-0");
    for (long t = 0; t < 100_000; t += 10_000) {
      results.apply(ledger, 2, passed, Map.of(), true, t, 5);
    }
  }
}
