package io.sharesink.connect.sink;

import static io.sharesink.engine.kafka.BrokerTestSupport.bootstrap;
import static io.sharesink.engine.kafka.BrokerTestSupport.configureGroup;
import static io.sharesink.engine.kafka.BrokerTestSupport.consumerConfig;
import static io.sharesink.engine.kafka.BrokerTestSupport.createTopic;
import static io.sharesink.engine.kafka.BrokerTestSupport.produce;
import static io.sharesink.engine.kafka.BrokerTestSupport.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.kafka.KafkaShareConsumerEngine;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.file.FileStreamSinkTask;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver end to end on a real Kafka 4.4 broker through {@link KafkaShareConsumerEngine}.
 *
 * <p>Broker tests (tag {@code broker}): the bootstrap address comes from {@code
 * SHARESINK_BOOTSTRAP} (system property or environment); without it the tests are skipped, or fail
 * when {@code SHARESINK_REQUIRE_BROKER=1}. Excluded from the default build; see {@code
 * io.sharesink.engine.kafka.BrokerTestSupport}.
 */
@Tag("broker")
class ShareSinkDriverBrokerTest {

  @TempDir Path dir;

  @Test
  void fileSinkConsumesATopicThroughAShareGroupAndLeavesNothingBehind() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("driver-file");
    String group = unique("driver-file-group");
    createTopic(bootstrap, topic, 3);
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, IntStream.range(0, 30).mapToObj(i -> "{\"n\":" + i + "}").toList());
    Path file = dir.resolve("sink.txt");

    KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
    DriverFixture fixture =
        DriverFixture.start(
            new FileStreamSinkTask(),
            Map.of(
                "file", file.toString(),
                "topics", topic,
                "share.commit.interval.ms", "500",
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable", "false"),
            engine);
    int opened;
    try {
      fixture.runUntil(
          () -> fixture.driver.metrics().snapshot().recordsAccepted() == 30,
          Duration.ofSeconds(60),
          "30 records accepted");
      opened = fixture.context.assignment().size();
    } finally {
      fixture.driver.stop();
      engine.close();
    }
    List<String> lines = Files.readAllLines(file);
    assertEquals(30, lines.size(), lines.toString());
    assertEquals(30, new HashSet<>(lines).size(), "no record written twice");
    assertEquals(3, opened, "each original partition opened");
    try (KafkaShareConsumerEngine peer =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      int redelivered = 0;
      while (System.nanoTime() < deadline) {
        redelivered += peer.poll(Duration.ofMillis(500)).size();
      }
      assertEquals(0, redelivered, "everything was accepted");
    }
  }

  @Test
  void aRecordReleasedByOneTaskReachesTheNextWithDeliveryCountHeaderTwo() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("driver-count");
    String group = unique("driver-count-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, List.of("a", "b", "c"));
    Map<String, String> props =
        Map.of("share.commit.interval.ms", "200", "share.delivery.count.header", "x-delivery");

    // The first task never reports anything flushed: its stop RELEASEs all three records.
    ScriptedSinkTask first = new ScriptedSinkTask();
    first.onPreCommit = offsets -> Map.of();
    try (KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      DriverFixture fixture = DriverFixture.start(first, props, engine);
      try {
        fixture.runUntil(() -> first.allPut().size() == 3, Duration.ofSeconds(60), "3 records put");
      } finally {
        fixture.driver.stop();
      }
    }
    ScriptedSinkTask second = new ScriptedSinkTask();
    try (KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      DriverFixture fixture = DriverFixture.start(second, props, engine);
      try {
        fixture.runUntil(
            () -> fixture.driver.metrics().snapshot().recordsAccepted() == 3,
            Duration.ofSeconds(60),
            "3 records accepted by the second task");
      } finally {
        fixture.driver.stop();
      }
    }
    assertEquals(List.of(1, 1, 1), deliveryCounts(first.allPut()));
    assertEquals(List.of(2, 2, 2), deliveryCounts(second.allPut()));
  }

  private static List<Object> deliveryCounts(List<SinkRecord> records) {
    return records.stream().map(r -> r.headers().lastWithName("x-delivery").value()).toList();
  }

  @Test
  void twoTasksShareOnePartitionAndTogetherWriteEveryRecordOnce() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("driver-two");
    String group = unique("driver-two-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, IntStream.range(0, 200).mapToObj(i -> "r" + i).toList());

    List<KafkaShareConsumerEngine> engines = new ArrayList<>();
    List<DriverFixture> tasks = new ArrayList<>();
    List<Path> files = List.of(dir.resolve("task0.txt"), dir.resolve("task1.txt"));
    try {
      for (Path file : files) {
        KafkaShareConsumerEngine engine =
            new KafkaShareConsumerEngine(
                Map.of("bootstrap.servers", bootstrap, "group.id", group, "max.poll.records", "20"),
                List.of(topic));
        engines.add(engine);
        tasks.add(
            DriverFixture.start(
                new FileStreamSinkTask(),
                Map.of("file", file.toString(), "share.commit.interval.ms", "200"),
                engine));
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (tasks.stream().mapToLong(t -> t.driver.metrics().snapshot().recordsAccepted()).sum()
              < 200
          && System.nanoTime() < deadline) {
        for (DriverFixture task : tasks) {
          task.driver.runCycle(Duration.ofMillis(100));
        }
      }
    } finally {
      tasks.forEach(t -> t.driver.stop());
      engines.forEach(KafkaShareConsumerEngine::close);
    }
    List<String> written = new ArrayList<>();
    for (Path file : files) {
      written.addAll(Files.readAllLines(file));
    }
    assertEquals(200, written.size(), "every record written once across both tasks");
    assertEquals(200, new HashSet<>(written).size());
    assertTrue(
        Files.readAllLines(files.get(0)).size() > 0 && Files.readAllLines(files.get(1)).size() > 0,
        "both tasks consumed from the single partition");
  }

  @Test
  void aPoisonRecordGoesToTheDeadLetterQueueWithContextHeadersAndIsRejected() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("driver-dlq");
    String dlqTopic = unique("driver-dlq-errors");
    String group = unique("driver-dlq-group");
    createTopic(bootstrap, topic, 1);
    // No DLQ topic yet: the queue creates it before anything is sent, as Connect does.
    configureGroup(bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap, topic, List.of("{\"ok\":1}", "{poison", "{\"ok\":2}"));

    ScriptedSinkTask task = new ScriptedSinkTask();
    Map<String, String> props =
        Map.of(
            "value.converter", "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable", "false",
            "errors.tolerance", "all",
            "errors.deadletterqueue.topic.name", dlqTopic,
            "errors.deadletterqueue.context.headers.enable", "true",
            "share.commit.interval.ms", "300");
    KafkaDeadLetterQueue dlq =
        KafkaDeadLetterQueue.create(
            Map.of("bootstrap.servers", bootstrap),
            Map.of("bootstrap.servers", bootstrap),
            dlqTopic,
            (short) 1,
            true,
            "dlq-test",
            7);
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      TopicDescription created =
          admin.describeTopics(List.of(dlqTopic)).allTopicNames().get().get(dlqTopic);
      assertEquals(1, created.partitions().size(), "the DLQ topic exists before any send");
    }
    KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
    DriverFixture fixture = DriverFixture.start(task, props, engine, dlq, false);
    try {
      fixture.runUntil(
          () -> {
            SinkDriverMetrics.Snapshot m = fixture.driver.metrics().snapshot();
            return m.recordsAccepted() == 2 && m.recordsRejected() == 1;
          },
          Duration.ofSeconds(60),
          "2 accepted, 1 rejected");
    } finally {
      fixture.driver.stop();
      engine.close();
    }
    assertEquals(2, task.allPut().size());

    try (KafkaConsumer<byte[], byte[]> reader =
        new KafkaConsumer<>(
            Map.of(
                "bootstrap.servers", bootstrap,
                "key.deserializer", ByteArrayDeserializer.class,
                "value.deserializer", ByteArrayDeserializer.class))) {
      TopicPartition dlqPartition = new TopicPartition(dlqTopic, 0);
      reader.assign(List.of(dlqPartition));
      reader.seekToBeginning(List.of(dlqPartition));
      List<ConsumerRecord<byte[], byte[]>> dead = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (dead.isEmpty() && System.nanoTime() < deadline) {
        reader.poll(Duration.ofMillis(500)).forEach(dead::add);
      }
      assertEquals(1, dead.size());
      ConsumerRecord<byte[], byte[]> record = dead.get(0);
      assertEquals("{poison", new String(record.value(), StandardCharsets.UTF_8), "raw bytes");
      assertEquals(topic, header(record, "__connect.errors.topic"));
      assertEquals("0", header(record, "__connect.errors.partition"));
      assertEquals("1", header(record, "__connect.errors.offset"));
      assertEquals("dlq-test", header(record, "__connect.errors.connector.name"));
      assertEquals("7", header(record, "__connect.errors.task.id"));
      assertEquals("VALUE_CONVERTER", header(record, "__connect.errors.stage"));
      assertEquals(
          "org.apache.kafka.connect.json.JsonConverter",
          header(record, "__connect.errors.class.name"));
      assertEquals(
          "org.apache.kafka.connect.errors.DataException",
          header(record, "__connect.errors.exception.class.name"));
    }
    try (KafkaShareConsumerEngine peer =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic))) {
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      int redelivered = 0;
      while (System.nanoTime() < deadline) {
        redelivered += peer.poll(Duration.ofMillis(500)).size();
      }
      assertEquals(0, redelivered, "the poison record was rejected, the rest accepted");
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String key) {
    Header header = record.headers().lastHeader(key);
    return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
  }

  @Test
  void aSinkHoldingRecordsPastTheLockKeepsThemAndPutsThemOnce() throws Exception {
    String bootstrap = bootstrap();
    String topic = unique("driver-hold");
    String group = unique("driver-hold-group");
    createTopic(bootstrap, topic, 1);
    configureGroup(
        bootstrap,
        group,
        Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"));
    produce(bootstrap, topic, List.of("a", "b", "c"));

    ScriptedSinkTask task = new ScriptedSinkTask();
    TopicPartition tp = new TopicPartition(topic, 0);
    long flushAt = System.currentTimeMillis() + 22_000;
    // The sink reports nothing flushed for longer than the 15 s lock.
    task.onPreCommit =
        offsets ->
            System.currentTimeMillis() < flushAt ? Map.of(tp, new OffsetAndMetadata(0)) : offsets;
    KafkaShareConsumerEngine engine =
        new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
    DriverFixture fixture =
        DriverFixture.start(task, Map.of("share.commit.interval.ms", "1000"), engine);
    KafkaShareConsumerEngine peer = null;
    int peerGot = 0;
    try {
      fixture.runUntil(() -> task.allPut().size() == 3, Duration.ofSeconds(30), "3 records put");
      // A second member joins only now, so that any record it gets is one the first lost.
      peer = new KafkaShareConsumerEngine(consumerConfig(bootstrap, group), List.of(topic));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (fixture.driver.metrics().snapshot().recordsAccepted() < 3
          && System.nanoTime() < deadline) {
        fixture.driver.runCycle(Duration.ofMillis(200));
        ShareBatch stolen = peer.poll(Duration.ofMillis(50));
        peerGot += stolen.size();
      }
    } finally {
      fixture.driver.stop();
      engine.close();
      if (peer != null) {
        peer.close();
      }
    }
    assertEquals(3, fixture.driver.metrics().snapshot().recordsAccepted());
    assertTrue(System.currentTimeMillis() >= flushAt, "accepted only after the sink flushed");
    assertEquals(0, peerGot, "held records stayed with their holder");
    assertEquals(
        List.of("a", "b", "c"), task.allPut().stream().map(SinkRecord::value).toList(), "put once");
  }
}
