package io.sharesink.connect.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class ShareGroupAdminStableLagTest {

  private static final TopicPartition P0 = new TopicPartition("orders", 0);
  private static final TopicPartition P1 = new TopicPartition("orders", 1);
  private static final TopicPartition P2 = new TopicPartition("orders", 2);

  private static SharePartitionOffsetInfo info(long start, Long lag) {
    return new SharePartitionOffsetInfo(start, Optional.of(0), Optional.ofNullable(lag));
  }

  @Test
  void aLagCountsToTheLastStableOffsetNotTheEnd() {
    // P0: a transaction of 40 records is open at offset 60 of 100; the group delivered all before.
    // P1: nothing open; the lag stays. P2: the broker reported no lag.
    Map<TopicPartition, SharePartitionOffsetInfo> stable =
        ShareGroupAdmin.toStableOffsets(
            Map.of(P0, info(60, 40L), P1, info(10, 5L), P2, info(0, null)),
            Map.of(P0, 100L, P1, 15L, P2, 7L),
            Map.of(P0, 60L, P1, 15L, P2, 7L));
    assertEquals(Optional.of(0L), stable.get(P0).lag());
    assertEquals(60, stable.get(P0).startOffset());
    assertEquals(Optional.of(5L), stable.get(P1).lag());
    assertEquals(Optional.empty(), stable.get(P2).lag());
  }

  @Test
  void aLagNeverFallsBelowZeroAndUnknownEndsKeepIt() {
    // Records produced between the lag's read and the ends' read: the open transaction's records
    // outnumber the lag read before them.
    Map<TopicPartition, SharePartitionOffsetInfo> stable =
        ShareGroupAdmin.toStableOffsets(
            Map.of(P0, info(0, 3L), P1, info(0, 9L)), Map.of(P0, 50L), Map.of(P0, 40L));
    assertEquals(Optional.of(0L), stable.get(P0).lag());
    assertEquals(Optional.of(9L), stable.get(P1).lag(), "no ends read for P1: its lag stays");
  }
}
