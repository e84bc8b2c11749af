package io.sharesink.engine;

import static io.sharesink.engine.kafka.BrokerTestSupport.bootstrap;
import static io.sharesink.engine.kafka.BrokerTestSupport.configureGroup;
import static io.sharesink.engine.kafka.BrokerTestSupport.consumerConfig;
import static io.sharesink.engine.kafka.BrokerTestSupport.createTopic;
import static io.sharesink.engine.kafka.BrokerTestSupport.produce;
import static io.sharesink.engine.kafka.BrokerTestSupport.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link NativeShareConsumerEngine} (JNI + the Rust engine) against a real Kafka 4.4 broker. Same
 * scheme as the other broker tests: tag {@code broker}, bootstrap from {@code SHARESINK_BOOTSTRAP},
 * see {@link io.sharesink.engine.kafka.BrokerTestSupport}.
 */
@Tag("broker")
class NativeShareConsumerEngineBrokerTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  /** What a test keeps of a polled record (the batch view dies with the next poll). */
  record Seen(long offset, String key, String value, int deliveryCount, long lockDeadlineMs) {}

  static String utf8(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static Map<Long, Seen> pollUntil(ShareConsumerEngine engine, int expected, Duration timeout) {
    Map<Long, Seen> seen = new TreeMap<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (seen.size() < expected && System.nanoTime() < deadline) {
      ShareBatch batch = engine.poll(Duration.ofMillis(500));
      for (int i = 0; i < batch.size(); i++) {
        Seen s =
            new Seen(
                batch.offset(i),
                utf8(batch.key(i)),
                utf8(batch.value(i)),
                batch.deliveryCount(i),
                batch.lockDeadlineMs(i));
        assertNull(seen.put(s.offset(), s), "offset " + s.offset() + " handed out twice");
      }
    }
    return seen;
  }

  private static String topicWithGroup(String name, String group, Map<String, String> groupConfig)
      throws Exception {
    String topic = unique(name);
    createTopic(bootstrap(), topic, 1);
    configureGroup(bootstrap(), group, groupConfig);
    return topic;
  }

  private static NativeShareConsumerEngine engine(String group, String topic) {
    return new NativeShareConsumerEngine(consumerConfig(bootstrap(), group), List.of(topic));
  }

  @Test
  void acceptedRecordsAreNotDeliveredAgain() throws Exception {
    String group = unique("native-accept-group");
    String topic =
        topicWithGroup("native-accept", group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap(), topic, IntStream.range(0, 20).mapToObj(i -> "v" + i).toList());

    try (NativeShareConsumerEngine engine = engine(group, topic)) {
      Map<Long, Seen> seen = pollUntil(engine, 20, Duration.ofSeconds(30));
      assertEquals(20, seen.size());
      assertEquals("v7", seen.get(7L).value());
      assertEquals("k7", seen.get(7L).key());
      assertEquals(1, seen.get(7L).deliveryCount());
      assertTrue(seen.get(7L).lockDeadlineMs() > System.currentTimeMillis());
      List<AckResult> results =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 0, 19, AckType.ACCEPT), Duration.ofSeconds(10));
      assertEquals(1, results.size());
      assertTrue(results.get(0).ok(), results.toString());
      EngineMetrics metrics = engine.metrics();
      assertEquals(20, metrics.acceptedRecords());
      assertTrue(metrics.recordsFetched() >= 20, metrics.toString());
    }
    try (NativeShareConsumerEngine peer = engine(group, topic)) {
      assertEquals(0, pollUntil(peer, 1, Duration.ofSeconds(5)).size(), "all were accepted");
    }
  }

  @Test
  void releasedRecordsComeBackWithDeliveryCountTwo() throws Exception {
    String group = unique("native-release-group");
    String topic =
        topicWithGroup("native-release", group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap(), topic, List.of("a", "b", "c"));

    try (NativeShareConsumerEngine engine = engine(group, topic)) {
      assertEquals(3, pollUntil(engine, 3, Duration.ofSeconds(30)).size());
      List<AckResult> released =
          engine.acknowledgeSync(
              new Acknowledgements()
                  .add(topic, 0, 0, 1, AckType.RELEASE)
                  .add(topic, 0, 2, AckType.ACCEPT),
              Duration.ofSeconds(10));
      assertTrue(released.stream().allMatch(AckResult::ok), released.toString());
      Map<Long, Seen> again = pollUntil(engine, 2, Duration.ofSeconds(20));
      assertEquals(List.of(0L, 1L), new ArrayList<>(again.keySet()));
      assertTrue(again.values().stream().allMatch(s -> s.deliveryCount() == 2), again.toString());
      List<AckResult> accepted =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 0, 1, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(accepted.get(0).ok(), accepted.toString());
      assertEquals(2, engine.metrics().releasedRecords());
    }
  }

  @Test
  void renewedRecordsOutliveTheirLockAndStayWithTheirHolder() throws Exception {
    String group = unique("native-renew-group");
    String topic =
        topicWithGroup(
            "native-renew",
            group,
            Map.of(
                "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"));
    produce(bootstrap(), topic, List.of("a", "b", "c"));

    try (NativeShareConsumerEngine engine = engine(group, topic)) {
      assertEquals(3, pollUntil(engine, 3, Duration.ofSeconds(30)).size());
      // The peer starts only now: started with the holder, it could fetch the records first.
      int peerGot = 0;
      int repeated = 0;
      try (NativeShareConsumerEngine peer = engine(group, topic)) {
        long until = System.nanoTime() + Duration.ofSeconds(22).toNanos();
        long nextRenew = 0;
        while (System.nanoTime() < until) {
          if (System.nanoTime() >= nextRenew) {
            engine.acknowledge(new Acknowledgements().add(topic, 0, 0, 2, AckType.RENEW));
            nextRenew = System.nanoTime() + Duration.ofSeconds(5).toNanos();
          }
          repeated += engine.poll(Duration.ofMillis(300)).size();
          peerGot += peer.poll(Duration.ofMillis(300)).size();
        }
      }
      assertEquals(0, repeated, "renewed records are not handed out again");
      assertEquals(0, peerGot, "renewed records stay with their holder past the 15 s lock");
      assertTrue(engine.metrics().renewedRecords() >= 3 * 4, engine.metrics().toString());
      List<AckResult> results =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 0, 2, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
    }
  }

  /**
   * A batch larger than the poll buffer is split; the part not written goes back to the engine,
   * which keeps its locks alive: a task that does not poll again for more than two locks (a put
   * blocked inside the sink) still gets the rest at its first delivery, and a peer gets none of it.
   */
  @Test
  void theRestOfASplitBatchStaysHeldWhileTheTaskDoesNotPoll() throws Exception {
    String group = unique("native-split-group");
    String topic =
        topicWithGroup(
            "native-split",
            group,
            Map.of(
                "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"));
    String value = "x".repeat(1000);
    produce(bootstrap(), topic, List.of(value, value, value, value, value));

    // Room for two of the five records per poll.
    try (NativeShareConsumerEngine engine =
        new NativeShareConsumerEngine(
            consumerConfig(bootstrap(), group), List.of(topic), 3000, new NativeLogBridge())) {
      Map<Long, Seen> first = pollUntil(engine, 1, Duration.ofSeconds(30));
      assertEquals(List.of(0L, 1L), new ArrayList<>(first.keySet()));
      List<AckResult> accepted =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 0, 1, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(accepted.get(0).ok(), accepted.toString());
      // The peer starts only now: started first, it could fetch the records before this member.
      try (NativeShareConsumerEngine peer = engine(group, topic)) {
        long idleUntil = System.nanoTime() + Duration.ofSeconds(35).toNanos();
        int peerGot = 0;
        while (System.nanoTime() < idleUntil) {
          peerGot += peer.poll(Duration.ofMillis(500)).size();
        }
        assertEquals(0, peerGot, "the peer got records the task was yet to poll");
      }
      Map<Long, Seen> rest = pollUntil(engine, 3, Duration.ofSeconds(10));
      assertEquals(List.of(2L, 3L, 4L), new ArrayList<>(rest.keySet()));
      assertTrue(rest.values().stream().allMatch(s -> s.deliveryCount() == 1), rest.toString());
      assertTrue(
          rest.values().stream().allMatch(s -> s.lockDeadlineMs() > System.currentTimeMillis()),
          rest.toString());
      List<AckResult> results =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 2, 4, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.stream().allMatch(AckResult::ok), results.toString());
      EngineMetrics metrics = engine.metrics();
      assertTrue(metrics.recordsRenewedUnpolled() >= 3 * 4, metrics.toString());
      assertEquals(0, metrics.recordsExpired(), metrics.toString());
    }
  }

  @Test
  void closeReleasesUnacknowledgedRecordsAtOnce() throws Exception {
    String group = unique("native-close-group");
    String topic =
        topicWithGroup(
            "native-close",
            group,
            Map.of(
                "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000"));
    produce(bootstrap(), topic, List.of("a", "b", "c", "d"));

    try (NativeShareConsumerEngine engine = engine(group, topic)) {
      assertEquals(4, pollUntil(engine, 4, Duration.ofSeconds(30)).size());
      engine.acknowledge(new Acknowledgements().add(topic, 0, 0, AckType.REJECT));
      engine.acknowledge(new Acknowledgements().add(topic, 0, 1, AckType.ACCEPT));
    } // 2 and 3 undecided: released by close, long before their 60 s lock would expire
    long start = System.nanoTime();
    try (NativeShareConsumerEngine peer = engine(group, topic)) {
      Map<Long, Seen> got = pollUntil(peer, 2, Duration.ofSeconds(30));
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertEquals(List.of(2L, 3L), new ArrayList<>(got.keySet()));
      assertTrue(got.values().stream().allMatch(s -> s.deliveryCount() == 2), got.toString());
      assertTrue(ms < 20_000, "released at close, not at lock expiry: " + ms + " ms");
      System.out.printf("close released records: a second member got them after %d ms%n", ms);
    }
  }

  @Test
  void useAfterCloseIsAnIllegalStateNotACrash() throws Exception {
    String group = unique("native-closed-group");
    String topic =
        topicWithGroup("native-closed", group, Map.of("share.auto.offset.reset", "earliest"));
    NativeShareConsumerEngine engine = engine(group, topic);
    engine.poll(Duration.ofMillis(10));
    engine.close();
    engine.close(); // idempotent
    engine.wakeup(); // harmless
    assertThrows(IllegalStateException.class, () -> engine.poll(Duration.ofMillis(10)));
    assertThrows(IllegalStateException.class, engine::metrics);
    assertThrows(
        IllegalStateException.class,
        () -> engine.acknowledge(new Acknowledgements().add(topic, 0, 0, AckType.ACCEPT)));
    assertThrows(
        IllegalStateException.class,
        () ->
            engine.acknowledgeSync(
                new Acknowledgements().add(topic, 0, 0, AckType.ACCEPT), Duration.ofSeconds(1)));
  }

  @Test
  void wakeupFromAnotherThreadEndsABlockedPoll() throws Exception {
    String group = unique("native-wakeup-group");
    String topic =
        topicWithGroup("native-wakeup", group, Map.of("share.auto.offset.reset", "earliest"));
    try (NativeShareConsumerEngine engine = engine(group, topic)) {
      engine.poll(Duration.ofMillis(100));
      CompletableFuture<Void> waker =
          CompletableFuture.runAsync(
              () -> {
                sleep(500);
                engine.wakeup();
              });
      long start = System.nanoTime();
      ShareBatch batch = engine.poll(Duration.ofSeconds(10));
      long ms = (System.nanoTime() - start) / 1_000_000;
      waker.get(5, TimeUnit.SECONDS);
      assertEquals(0, batch.size());
      assertTrue(ms < 3_000, "woken after ~500 ms, not at the 10 s bound: " + ms + " ms");
      System.out.printf("wakeup ended a 10 s poll after %d ms%n", ms);
    }
  }

  @Test
  void closeFromAnotherThreadEndsABlockedPollWithinItsBound() throws Exception {
    String group = unique("native-stop-group");
    String topic =
        topicWithGroup("native-stop", group, Map.of("share.auto.offset.reset", "earliest"));
    NativeShareConsumerEngine engine = engine(group, topic);
    engine.poll(Duration.ofMillis(100));
    CompletableFuture<Long> closer =
        CompletableFuture.supplyAsync(
            () -> {
              sleep(500);
              long start = System.nanoTime();
              engine.close();
              return (System.nanoTime() - start) / 1_000_000;
            });
    long start = System.nanoTime();
    ShareBatch batch = engine.poll(Duration.ofSeconds(10));
    long ms = (System.nanoTime() - start) / 1_000_000;
    long closeMs = closer.get(30, TimeUnit.SECONDS);
    assertEquals(0, batch.size());
    assertTrue(ms < 5_000, "close ended the 10 s poll after " + ms + " ms");
    assertThrows(IllegalStateException.class, () -> engine.poll(Duration.ofMillis(10)));
    System.out.printf(
        "close from another thread ended a 10 s poll after %d ms (close took %d ms)%n",
        ms, closeMs);
  }

  @Test
  void batchesLargerThanTheBufferAreSplitAndHugeRecordsGrowIt() throws Exception {
    String group = unique("native-split-group");
    String topic =
        topicWithGroup("native-split", group, Map.of("share.auto.offset.reset", "earliest"));
    String big = "x".repeat(100_000);
    List<String> values = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      values.add(i == 7 ? big : "small-" + i);
    }
    produce(bootstrap(), topic, values);
    // 4 KiB: a few small records per poll, and record 7 does not fit at all.
    try (NativeShareConsumerEngine engine =
        new NativeShareConsumerEngine(
            consumerConfig(bootstrap(), group), List.of(topic), 4096, new NativeLogBridge())) {
      Map<Long, Seen> seen = pollUntil(engine, 30, Duration.ofSeconds(30));
      assertEquals(30, seen.size());
      assertEquals(big, seen.get(7L).value());
      assertEquals("small-29", seen.get(29L).value());
    }
  }

  /** A log sink that keeps every line with the thread that logged it. */
  static final class RecordingSink implements NativeLogBridge.Sink {
    record Line(int level, String target, String text, String thread) {}

    final List<Line> lines = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public int maxLevel() {
      return 4;
    }

    @Override
    public void log(int level, String target, String text) {
      lines.add(new Line(level, target, text, Thread.currentThread().getName()));
    }

    boolean has(String needle) {
      return lines.stream().anyMatch(l -> l.text().contains(needle));
    }
  }

  @Test
  void nativeLogLinesReachTheirOwnConsumersCallerThread() throws Exception {
    String groupA = unique("native-logs-a");
    String groupB = unique("native-logs-b");
    String topic =
        topicWithGroup("native-logs", groupA, Map.of("share.auto.offset.reset", "earliest"));
    configureGroup(bootstrap(), groupB, Map.of("share.auto.offset.reset", "earliest"));
    RecordingSink a = new RecordingSink();
    RecordingSink b = new RecordingSink();
    String testThread = Thread.currentThread().getName();
    try (NativeShareConsumerEngine engineA =
            new NativeShareConsumerEngine(
                consumerConfig(bootstrap(), groupA),
                List.of(topic),
                1 << 16,
                new NativeLogBridge(a));
        NativeShareConsumerEngine engineB =
            new NativeShareConsumerEngine(
                consumerConfig(bootstrap(), groupB),
                List.of(topic),
                1 << 16,
                new NativeLogBridge(b))) {
      for (int i = 0; i < 10; i++) {
        engineA.poll(Duration.ofMillis(200));
        engineB.poll(Duration.ofMillis(200));
      }
    }
    for (RecordingSink sink : List.of(a, b)) {
      assertTrue(sink.has("starting share consumer"), sink.lines.toString());
      assertTrue(sink.has("share consumer closed"), sink.lines.toString());
      assertTrue(
          sink.lines.stream().allMatch(l -> l.thread().equals(testThread)),
          "logged on the caller's thread only: " + sink.lines);
      assertTrue(
          sink.lines.stream().anyMatch(l -> l.target().startsWith("sharesink_engine")),
          sink.lines.toString());
    }
    assertTrue(a.lines.stream().noneMatch(l -> l.text().contains(groupB)), a.lines.toString());
    assertTrue(b.lines.stream().noneMatch(l -> l.text().contains(groupA)), b.lines.toString());
    a.lines.stream().limit(8).forEach(l -> System.out.println("native log A: " + l));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
