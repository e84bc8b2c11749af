package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.file.FileStreamSinkTask;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

/**
 * The driver against real Connect parts (Kafka's FileStreamSinkTask, JsonConverter,
 * StringConverter, RegexRouter, Filter + TopicNameMatches, the runtime's InternalSinkRecord) and an
 * in-memory share partition that enforces the broker's acquisition rules: the records a task sees
 * and the plugins' class loader.
 */
class ShareSinkDriverTest extends DriverTestBase {

  @Test
  void fileSinkWithJsonRoutingAndFilteringAcceptsEverythingAfterItIsWritten() throws IOException {
    Path file = dir.resolve("out.txt");
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 7);
    for (int i = 0; i < 10; i++) {
      group.produce("orders", i % 2, "k" + i, "{\"id\":" + i + "}");
    }
    for (int i = 0; i < 3; i++) {
      group.produce("audit", 0, null, "{\"audit\":" + i + "}");
    }
    // Each ACCEPT must find its record already in the file: ACK only after the sink wrote it.
    List<String> acceptedTooEarly = new ArrayList<>();
    group.onAccept =
        rec -> {
          try {
            if (rec.topic.equals("orders")
                && !Files.readString(file)
                    .contains(rec.valueString().replace("\"", "").replace(":", "="))) {
              acceptedTooEarly.add(rec.topic + "@" + rec.offset);
            }
          } catch (IOException e) {
            acceptedTooEarly.add(e.toString());
          }
        };
    DriverFixture fixture =
        start(
            new FileStreamSinkTask(),
            props(
                "file", file.toString(),
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable", "false",
                "transforms", "route,dropAudit",
                "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex", "orders",
                "transforms.route.replacement", "orders-routed",
                "transforms.dropAudit.type", "org.apache.kafka.connect.transforms.Filter",
                "transforms.dropAudit.predicate", "isAudit",
                "predicates", "isAudit",
                "predicates.isAudit.type",
                    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                "predicates.isAudit.pattern", "audit"),
            group);

    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<String> lines = Files.readAllLines(file);
    assertEquals(10, lines.size(), "filtered audit records must not reach the file: " + lines);
    for (int i = 0; i < 10; i++) {
      assertTrue(lines.contains("{id=" + i + "}"), "missing " + i + " in " + lines);
    }
    assertEquals(List.of(), acceptedTooEarly);
    assertEquals(List.of(), group.violations);
    // The task saw its partitions in original coordinates, never the routed topic.
    assertEquals(
        Set.of(
            new TopicPartition("orders", 0),
            new TopicPartition("orders", 1),
            new TopicPartition("audit", 0)),
        fixture.context.assignment());
    // One contiguous ACCEPT range per partition and commit, not one per record.
    assertTrue(
        group.received(AckType.ACCEPT).size() < 13,
        "ranges not compacted: " + group.received(AckType.ACCEPT));
    assertEquals(13, fixture.driver.metrics().snapshot().recordsAccepted());
  }

  @Test
  void recordsCarryOriginalCoordinatesAndAreInternalSinkRecords() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("orders", 3, "k", "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "transforms", "route",
                "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex", "(.*)",
                "transforms.route.replacement", "$1-copy"),
            group);
    fixture.runUntil(() -> !task.allPut().isEmpty(), Duration.ofSeconds(5), "a put");
    SinkRecord record = task.allPut().get(0);
    assertEquals("orders-copy", record.topic());
    assertEquals("orders", record.originalTopic());
    assertEquals(3, record.originalKafkaPartition());
    assertEquals(0, record.originalKafkaOffset());
    assertEquals("v", record.value());
    assertNotNull(record.timestamp());
    assertEquals(
        "org.apache.kafka.connect.runtime.InternalSinkRecord", record.getClass().getName());
    assertEquals(List.of(List.of(new TopicPartition("orders", 3))), task.opens);
  }

  @Test
  void everyCallIntoPluginsRunsUnderThePluginLoader() throws Exception {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props(), group);
    try (URLClassLoader foreign = new URLClassLoader(new URL[0], null)) {
      Thread.currentThread().setContextClassLoader(foreign);
      try {
        fixture.driver.runCycle(Duration.ofMillis(10));
        assertSame(foreign, Thread.currentThread().getContextClassLoader(), "restored");
      } finally {
        Thread.currentThread().setContextClassLoader(ShareSinkDriverTest.class.getClassLoader());
      }
    }
    assertSame(ScriptedSinkTask.class.getClassLoader(), task.putLoaders.get(0));
  }

  @Test
  void theDeliveryCountHeaderCountsRedeliveriesAndTransformsSeeIt() {
    long lock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 2);
    ScriptedSinkTask task = new ScriptedSinkTask();
    AtomicInteger attempts = new AtomicInteger();
    task.onPut =
        records -> {
          if (!records.isEmpty() && attempts.incrementAndGet() == 1) {
            // The locks run out while the put fails: the broker delivers the records again.
            time.setCurrentTimeMs(time.milliseconds() + 1_500);
            task.ctx().timeout(10);
            throw new RetriableException("database busy");
          }
        };
    // A transform conditioned on the header: it only fires when the header is already there.
    DriverFixture fixture =
        start(
            task,
            props(
                "share.delivery.count.header", "x-delivery-count",
                "transforms", "seen",
                "transforms.seen.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.seen.regex", "(.*)",
                "transforms.seen.replacement", "$1-counted",
                "transforms.seen.predicate", "counted",
                "predicates", "counted",
                "predicates.counted.type",
                    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
                "predicates.counted.name", "x-delivery-count"),
            group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<List<SinkRecord>> nonEmpty = task.puts.stream().filter(p -> !p.isEmpty()).toList();
    assertEquals(2, nonEmpty.size(), "the failed put, then the redelivered records");
    for (int delivery = 1; delivery <= 2; delivery++) {
      for (SinkRecord record : nonEmpty.get(delivery - 1)) {
        List<org.apache.kafka.connect.header.Header> counts = new ArrayList<>();
        record.headers().allWithName("x-delivery-count").forEachRemaining(counts::add);
        assertEquals(1, counts.size(), record + ": one delivery count header");
        assertEquals(delivery, counts.get(0).value(), record + ": delivery " + delivery);
        assertEquals(org.apache.kafka.connect.data.Schema.INT32_SCHEMA, counts.get(0).schema());
        assertEquals("t-counted", record.topic(), "the transform saw the header");
      }
    }
    assertEquals(List.of(), group.violations);
  }

  @Test
  void noDeliveryCountHeaderUnlessAsked() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 2);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");
    assertTrue(
        task.puts.stream().flatMap(List::stream).allMatch(r -> r.headers().isEmpty()),
        "no header added by default");
  }
}
