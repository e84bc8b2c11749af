package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
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
}
