package io.sharesink.engine.kafka;

import static io.sharesink.engine.kafka.BrokerTestSupport.bootstrap;
import static io.sharesink.engine.kafka.BrokerTestSupport.configureGroup;
import static io.sharesink.engine.kafka.BrokerTestSupport.consumerConfig;
import static io.sharesink.engine.kafka.BrokerTestSupport.createTopic;
import static io.sharesink.engine.kafka.BrokerTestSupport.produce;
import static io.sharesink.engine.kafka.BrokerTestSupport.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.AckResult;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.ShareBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link KafkaShareConsumerEngine} against a real Kafka 4.4 broker.
 *
 * <p>Broker tests (tag {@code broker}): the bootstrap address comes from {@code
 * SHARESINK_BOOTSTRAP} (system property or environment); without it the tests are skipped, or fail
 * when {@code SHARESINK_REQUIRE_BROKER=1}. Excluded from the default build; see {@link
 * BrokerTestSupport}.
 */
@Tag("broker")
class KafkaShareConsumerEngineBrokerTest {

  private static Map<Long, String> pollUntil(
      KafkaShareConsumerEngine engine, int expected, Duration timeout) {
    Map<Long, String> seen = new HashMap<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (seen.size() < expected && System.nanoTime() < deadline) {
      ShareBatch batch = engine.poll(Duration.ofMillis(500));
      for (int i = 0; i < batch.size(); i++) {
        String previous = seen.put(batch.offset(i), BrokerTestSupport.utf8(batch.value(i)));
        assertEquals(null, previous, "offset " + batch.offset(i) + " handed out twice");
        assertTrue(batch.lockDeadlineMs(i) > System.currentTimeMillis());
      }
    }
    return seen;
  }

  /**
   * A one-partition topic holding {@code values} and a fresh share group on it with the shortest
   * lock Kafka allows by default (15 s), starting from the earliest offset; returns the group.
   */
  private static String shortLockGroup(String bootstrap, String topic, List<String> values)
      throws Exception {
    String group = unique(topic + "-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(
        bootstrap,
        group,
        Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"));
    produce(bootstrap, topic, values);
    return group;
  }

  private static Acknowledgements all(String topic, int count, AckType type) {
    return new Acknowledgements().add(topic, 0, 0, count - 1, type);
  }

  @Test
  void acceptedRecordsAreNotDeliveredAgain() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("engine-accept");
    String group = unique("engine-accept-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, IntStream.range(0, 20).mapToObj(i -> "v" + i).toList());

    try (KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      Map<Long, String> seen = pollUntil(engine, 20, Duration.ofSeconds(30));
      assertEquals(20, seen.size());
      assertEquals("v7", seen.get(7L));
      List<AckResult> results =
          engine.acknowledgeSync(all(topic, 20, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
      assertEquals(20, engine.metrics().acceptedRecords());
    }
    try (KafkaShareConsumerEngine peer =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(0, pollUntil(peer, 1, Duration.ofSeconds(5)).size(), "all were accepted");
    }
  }

  @Test
  void recordsHeldPastTheirLockAreRenewedNeverRepeatedAndNotGivenToAPeer() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("engine-renew");
    String group = shortLockGroup(bootstrap, topic, List.of("a", "b", "c"));

    try (KafkaShareConsumerEngine engine =
            new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
        KafkaShareConsumerEngine peer =
            new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(3, pollUntil(engine, 3, Duration.ofSeconds(30)).size());
      // Hold them for well past the 15 s lock, polling both members all along.
      List<Long> repeated = new ArrayList<>();
      int peerGot = 0;
      long until = System.nanoTime() + Duration.ofSeconds(22).toNanos();
      while (System.nanoTime() < until) {
        ShareBatch again = engine.poll(Duration.ofMillis(300));
        for (int i = 0; i < again.size(); i++) {
          repeated.add(again.offset(i));
        }
        peerGot += peer.poll(Duration.ofMillis(300)).size();
      }
      assertEquals(List.of(), repeated, "renewed records must not be handed out again");
      assertEquals(0, peerGot, "renewed records must stay with their holder");
      assertTrue(engine.metrics().renewedRecords() > 0);
      List<AckResult> results =
          engine.acknowledgeSync(all(topic, 3, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
    }
    try (KafkaShareConsumerEngine later =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(0, pollUntil(later, 1, Duration.ofSeconds(5)).size());
    }
  }

  @Test
  void closingReleasesUndecidedRecordsAtOnceAndRejectedOnesStayGone() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("engine-release");
    String group = unique("engine-release-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, List.of("a", "b", "c", "d"));

    try (KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(4, pollUntil(engine, 4, Duration.ofSeconds(30)).size());
      engine.acknowledge(new Acknowledgements().add(topic, 0, 0, AckType.REJECT));
      engine.acknowledge(new Acknowledgements().add(topic, 0, 1, AckType.ACCEPT));
    } // 2 and 3 undecided: released by close, long before their 30 s lock would expire
    long start = System.nanoTime();
    try (KafkaShareConsumerEngine peer =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      List<Long> offsets = new ArrayList<>();
      List<Integer> deliveries = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (offsets.size() < 2 && System.nanoTime() < deadline) {
        ShareBatch batch = peer.poll(Duration.ofMillis(500));
        for (int i = 0; i < batch.size(); i++) {
          offsets.add(batch.offset(i));
          deliveries.add(batch.deliveryCount(i));
        }
      }
      assertEquals(List.of(2L, 3L), offsets);
      assertEquals(List.of(2, 2), deliveries);
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(25).toNanos());
      peer.acknowledgeSync(all(topic, 4, AckType.ACCEPT), Duration.ofSeconds(5));
    }
  }

  @Test
  void aRecordDeliveredAgainAfterItsLockRanOutIsHandedOutAgain() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("engine-expired");
    String group = shortLockGroup(bootstrap, topic, List.of("a"));

    try (KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(1, pollUntil(engine, 1, Duration.ofSeconds(30)).size());
      // The driver is stuck elsewhere past the lock: the record expires, the driver forgets it
      // (it acknowledges nothing whose lock it lost), and the broker delivers it again.
      Thread.sleep(16_000);
      List<Integer> deliveries = nextDeliveryCounts(engine, Duration.ofSeconds(20));
      assertEquals(List.of(2), deliveries, "the new delivery is handed out, not swallowed");
      List<AckResult> results =
          engine.acknowledgeSync(all(topic, 1, AckType.ACCEPT), Duration.ofSeconds(10));
      if (results.stream().anyMatch(r -> r.errorCode() == INVALID_RECORD_STATE)) {
        // Kafka's client may send the RELEASE of the expired delivery after the fetch that
        // acquired the record again (seen once in CI, at a load of 8): the release then frees
        // the new delivery and the ACCEPT is refused. Nothing is lost: it is delivered again.
        List<Integer> again = nextDeliveryCounts(engine, Duration.ofSeconds(20));
        assertEquals(List.of(3), again, "a refused ACCEPT: the record comes back once more");
        results = engine.acknowledgeSync(all(topic, 1, AckType.ACCEPT), Duration.ofSeconds(10));
      }
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
    }
  }

  /** Kafka's INVALID_RECORD_STATE: an acknowledgement of a record this member does not hold. */
  private static final short INVALID_RECORD_STATE = 121;

  /** The delivery counts of the first poll that returns records within {@code within}. */
  private static List<Integer> nextDeliveryCounts(KafkaShareConsumerEngine engine, Duration within)
      throws Exception {
    List<Integer> counts = new ArrayList<>();
    long deadline = System.nanoTime() + within.toNanos();
    while (counts.isEmpty() && System.nanoTime() < deadline) {
      ShareBatch batch = engine.poll(Duration.ofMillis(500));
      for (int i = 0; i < batch.size(); i++) {
        counts.add(batch.deliveryCount(i));
      }
    }
    return counts;
  }

  @Test
  void renewalsFromAnotherThreadKeepTheRecordsWhileThePollingThreadIsBusy() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("engine-keeper");
    String group = shortLockGroup(bootstrap, topic, List.of("a", "b", "c"));

    try (KafkaShareConsumerEngine engine =
            new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
        KafkaShareConsumerEngine peer =
            new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      assertEquals(3, pollUntil(engine, 3, Duration.ofSeconds(30)).size());
      // The polling thread is inside a put that blocks for over two locks; the driver's lock
      // keeper asks for RENEWs from its own thread meanwhile.
      Thread keeper =
          new Thread(
              () -> {
                long until = System.nanoTime() + Duration.ofSeconds(35).toNanos();
                while (System.nanoTime() < until) {
                  engine.acknowledge(all(topic, 3, AckType.RENEW));
                  try {
                    Thread.sleep(3_000);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "test-lock-keeper");
      keeper.start();
      int peerGot = 0;
      while (keeper.isAlive()) {
        peerGot += peer.poll(Duration.ofMillis(500)).size();
      }
      keeper.join();
      assertEquals(0, peerGot, "renewed from the keeper's thread: nothing went to the peer");
      assertTrue(engine.metrics().renewedRecords() >= 3 * 10, "" + engine.metrics());
      List<AckResult> results =
          engine.acknowledgeSync(all(topic, 3, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
      assertEquals(3, engine.metrics().acceptedRecords());
    }
  }
}
