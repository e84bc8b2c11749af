package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.junit.jupiter.api.Test;

/** Configuration, transforms, converters, context and metrics of the driver, with real parts. */
class SinkDriverPartsTest {

  private final MockTime time = new SteppingMockTime();

  @Test
  void configDefaultsFollowTheRuntimeAndAnEmptyPreCommitHolds() {
    SinkDriverConfig config = new SinkDriverConfig(Map.of("topics", "ignored"));
    assertEquals(5_000, config.commitIntervalMs());
    assertFalse(config.acceptOnEmptyPreCommit());
    assertEquals(900_000, config.taskStuckTimeoutMs());
    assertFalse(config.toleranceAll());
    assertEquals(0, config.retryTimeoutMs());
    assertEquals(60_000, config.retryMaxDelayMs());
    assertFalse(config.offersErrantRecordReporter());
    assertTrue(
        new SinkDriverConfig(Map.of("errors.log.enable", "true")).offersErrantRecordReporter());
    assertTrue(
        new SinkDriverConfig(Map.of("errors.deadletterqueue.topic.name", "dlq"))
            .offersErrantRecordReporter());
    assertTrue(
        new SinkDriverConfig(Map.of("share.commit.empty.precommit", "ACCEPT"))
            .acceptOnEmptyPreCommit());
    assertThrows(
        ConfigException.class,
        () -> new SinkDriverConfig(Map.of("share.commit.empty.precommit", "maybe")));
    assertThrows(
        ConfigException.class, () -> new SinkDriverConfig(Map.of("errors.tolerance", "some")));
  }

  @Test
  void transformChainAppliesPredicatesAndNegation() {
    Map<String, String> props = new HashMap<>();
    props.put("transforms", "keepOnlyAudit");
    props.put("transforms.keepOnlyAudit.type", "org.apache.kafka.connect.transforms.Filter");
    props.put("transforms.keepOnlyAudit.predicate", "isAudit");
    props.put("transforms.keepOnlyAudit.negate", "true");
    props.put("predicates", "isAudit");
    props.put(
        "predicates.isAudit.type",
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches");
    props.put("predicates.isAudit.pattern", "audit.*");
    try (TransformChain chain = TransformChain.fromConfig(props, getClass().getClassLoader())) {
      assertEquals(1, chain.stages().size());
      TransformChain.Stage stage = chain.stages().get(0);
      SinkRecord audit = record("audit-log");
      SinkRecord orders = record("orders");
      assertSame(audit, stage.apply(audit), "negated predicate: audit records pass untouched");
      assertNull(stage.apply(orders), "everything else is filtered");
    }
  }

  @Test
  void transformChainRejectsBadConfigurations() {
    ClassLoader loader = getClass().getClassLoader();
    assertThrows(
        ConfigException.class,
        () -> TransformChain.fromConfig(Map.of("transforms", "a"), loader),
        "missing type");
    assertThrows(
        ConfigException.class,
        () ->
            TransformChain.fromConfig(
                Map.of(
                    "transforms", "a",
                    "transforms.a.type", "org.apache.kafka.connect.transforms.Filter",
                    "transforms.a.negate", "true"),
                loader),
        "negate without predicate");
    assertThrows(
        ConfigException.class,
        () ->
            TransformChain.fromConfig(
                Map.of("transforms", "a", "transforms.a.type", "java.lang.String"), loader),
        "not a transformation");
    assertTrue(TransformChain.fromConfig(Map.of(), loader).stages().isEmpty());
  }

  @Test
  void convertersAreConfiguredWithTheirPrefixedSettings() {
    ClassLoader loader = getClass().getClassLoader();
    Map<String, String> props =
        Map.of(
            "value.converter", "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable", "false");
    Converter value = ConnectPlugins.newConverter(props, "value.converter", loader);
    assertEquals(
        Map.of("a", 1L),
        value
            .toConnectData("t", "{\"a\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8))
            .value());
    HeaderConverter headers = ConnectPlugins.newHeaderConverter(props, loader);
    assertTrue(headers instanceof SimpleHeaderConverter);
    assertThrows(
        ConfigException.class,
        () -> ConnectPlugins.newConverter(Map.of(), "key.converter", loader));
  }

  @Test
  void contextKeepsRuntimeSemanticsForTimeoutCommitRequestsAndConfigs() {
    AtomicReference<Map<String, String>> latest = new AtomicReference<>(Map.of("v", "1"));
    SinkDriverConfig config = new SinkDriverConfig(Map.of());
    ShareSinkTaskContext context =
        new ShareSinkTaskContext(
            latest::get, config, new ErrorHandling(config, "t-0", null, false, time), null, "t-0");
    latest.set(Map.of("v", "2"));
    assertEquals(Map.of("v", "2"), context.configs(), "the latest task config");
    assertEquals(-1, context.takeTimeout());
    context.timeout(250);
    assertEquals(250, context.takeTimeout());
    assertEquals(-1, context.takeTimeout(), "one-shot");
    assertFalse(context.takeCommitRequest());
    context.requestCommit();
    assertTrue(context.takeCommitRequest());
    assertFalse(context.takeCommitRequest());
    TopicPartition tp = new TopicPartition("t", 0);
    context.offset(tp, 5); // ignored, warned once
    context.offset(Map.of(tp, 6L));
    context.pause(tp);
    assertTrue(context.isPaused(tp));
    context.resume(tp);
    assertFalse(context.anyPaused());
    assertTrue(context.assignment().isEmpty());
    assertThrows(UnsupportedOperationException.class, () -> context.assignment().add(tp));
  }

  @Test
  void countersArePublishedThroughPluginMetrics() throws Exception {
    try (Metrics metrics = new Metrics();
        PluginMetricsImpl pluginMetrics = new PluginMetricsImpl(metrics, Map.of("plugin", "x"))) {
      InMemoryShareGroup group = new InMemoryShareGroup(time, 30_000, 10);
      group.produce("t", 0, null, "v");
      DriverFixture fixture =
          DriverFixture.start(
              new ScriptedSinkTask(), Map.of("share.commit.interval.ms", "50"), group);
      List<MetricName> names =
          fixture.driver.metrics().registerWith(pluginMetrics, new LinkedHashMap<>());
      fixture.runUntil(
          () -> group.count(InMemoryShareGroup.State.ACCEPTED) == 1,
          Duration.ofSeconds(5),
          "accepted");
      MetricName accepted =
          names.stream()
              .filter(n -> n.name().equals("share-records-accepted-total"))
              .findFirst()
              .orElseThrow();
      assertNotNull(metrics.metric(accepted));
      assertEquals(1.0, ((Number) metrics.metric(accepted).metricValue()).doubleValue());
      fixture.driver.stop();
    }
  }

  @Test
  void engineCountersArePublishedAndOutliveTheEngine() throws Exception {
    try (Metrics metrics = new Metrics();
        PluginMetricsImpl pluginMetrics = new PluginMetricsImpl(metrics, Map.of("plugin", "x"))) {
      InMemoryShareGroup group = new InMemoryShareGroup(time, 30_000, 10);
      group.produce("t", 0, null, "a");
      group.produce("t", 0, null, "b");
      DriverFixture fixture =
          DriverFixture.start(
              new ScriptedSinkTask(), Map.of("share.commit.interval.ms", "50"), group);
      List<MetricName> names = EngineGauges.register(group, pluginMetrics, new LinkedHashMap<>());
      fixture.runUntil(
          () -> group.count(InMemoryShareGroup.State.ACCEPTED) == 2,
          Duration.ofSeconds(5),
          "accepted");
      Map<String, Double> read = new LinkedHashMap<>();
      for (MetricName n : names) {
        read.put(n.name(), ((Number) metrics.metric(n).metricValue()).doubleValue());
      }
      assertEquals(2.0, read.get("share-engine-records-fetched-total"), read.toString());
      double polls = read.get("share-engine-fetch-requests-total");
      assertTrue(polls >= 1, read.toString());
      assertTrue(read.containsKey("share-engine-ack-latency-avg-ms"), read.toString());
      fixture.driver.stop();
      group.close();
      MetricName fetched =
          names.stream()
              .filter(n -> n.name().equals("share-engine-records-fetched-total"))
              .findFirst()
              .orElseThrow();
      assertEquals(
          2.0,
          ((Number) metrics.metric(fetched).metricValue()).doubleValue(),
          "a closed engine's last figures stay readable");
    }
  }

  @Test
  void aTaskWhoseStartFailsIsStillStopped() {
    ScriptedSinkTask task = new ScriptedSinkTask();
    org.apache.kafka.connect.errors.ConnectException failure =
        assertThrows(
            org.apache.kafka.connect.errors.ConnectException.class,
            () ->
                DriverFixture.start(
                    task, Map.of("test.fail.start", "1"), new InMemoryShareGroup(time, 30_000, 1)));
    assertTrue(failure.getMessage().contains("failed to start"), failure.getMessage());
    assertTrue(task.stopped, "stop() follows a failed start(), as in the runtime");
  }

  @Test
  void aTaskWhoseStartThrowsIsStoppedAndWhatWasBuiltForItClosed() {
    for (String failure : List.of("test.fail.start", "test.fail.start.missing.class")) {
      CloseCountingConverter.CLOSED.set(0);
      ScriptedSinkTask task = new ScriptedSinkTask();
      Throwable thrown =
          assertThrows(
              Throwable.class,
              () ->
                  DriverFixture.start(
                      task,
                      Map.of(
                          failure,
                          "1",
                          "key.converter",
                          CloseCountingConverter.class.getName(),
                          "value.converter",
                          CloseCountingConverter.class.getName()),
                      new InMemoryShareGroup(time, 30_000, 1)));
      // An exception comes back as the runtime's ConnectException, an Error as it was thrown.
      assertEquals(
          failure.endsWith("missing.class")
              ? NoClassDefFoundError.class
              : org.apache.kafka.connect.errors.ConnectException.class,
          thrown.getClass(),
          failure);
      assertTrue(task.stopped, failure + ": stop() follows a failed start()");
      assertEquals(2, CloseCountingConverter.CLOSED.get(), failure + ": both converters closed");
    }
  }

  private static SinkRecord record(String topic) {
    return new SinkRecord(topic, 0, null, null, Schema.STRING_SCHEMA, "v", 0);
  }
}
