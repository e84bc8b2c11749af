package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShareSinkConnectorTest {

  /** Enough of the runtime's context for a connector that never asks for offsets. */
  private static final class StubContext implements SourceConnectorContext {
    int reconfigurations;

    @Override
    public OffsetStorageReader offsetStorageReader() {
      return null;
    }

    @Override
    public void requestTaskReconfiguration() {
      reconfigurations++;
    }

    @Override
    public void raiseError(Exception e) {}

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }

  /** A connector on a worker whose configuration is {@code settings}. */
  static ShareSinkConnector onWorker(Map<String, String> settings) {
    ShareSinkConnector connector = new ShareSinkConnector();
    connector.workerDefaults = () -> new WorkerDefaults(null, settings);
    return connector;
  }

  @Test
  void isRegisteredForServiceLoaderDiscovery() {
    boolean found =
        ServiceLoader.load(SourceConnector.class).stream()
            .anyMatch(p -> p.type() == ShareSinkConnector.class);
    assertTrue(found, "META-INF/services lists ShareSinkConnector");
  }

  @Test
  void reportsTheJarVersion() {
    assertEquals(System.getProperty("sharesink.test.version"), new ShareSinkConnector().version());
  }

  @Test
  void validatesCleanlyWhenTheNativeLibraryLoads() {
    // No broker behind localhost:1: the cluster checks fall back to Kafka's defaults.
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    Config config = onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).validate(props);
    config
        .configValues()
        .forEach(v -> assertTrue(v.errorMessages().isEmpty(), v.name() + v.errorMessages()));
    // The legacy connector's own keys are in the result too.
    assertTrue(config.configValues().stream().anyMatch(v -> v.name().equals("file")));
  }

  @Test
  void validationNamesTheMissingBootstrapAndTheLegacyConnectorsErrors() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    Map<String, List<String>> errors =
        errors(onWorker(Map.of("bootstrap.servers", " ")).validate(props));
    String message = String.join(" ", errors.get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG));
    assertTrue(message.contains("no bootstrap servers"), message);

    // The mode=broker prefix rule needs no cluster when the broker's prefix is the default.
    props.put(ShareSinkConfig.DLQ_MODE_CONFIG, "broker");
    props.put("errors.deadletterqueue.topic.name", "orders-dlq");
    props.put(ShareSinkConfig.LOCK_DURATION_MS_CONFIG, "20000");
    props.put(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG, "15000");
    errors = errors(onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).validate(props));
    assertTrue(errors.containsKey("errors.deadletterqueue.topic.name"), errors::toString);
    assertTrue(errors.containsKey(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG), errors::toString);
  }

  @Test
  void validationRefusesMalformedOrUnresolvableBootstrapServersNamingTheKey() {
    BootstrapServers.HostResolver dns =
        host -> {
          if (!host.equals("127.0.0.1")) {
            throw new java.net.UnknownHostException(host);
          }
        };
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9092;127.0.0.1:9093");
    String message = bootstrapError(new ShareSinkConnector(dns).validate(props));
    assertTrue(message.startsWith("share.consumer.bootstrap.servers=127.0.0.1:9092;"), message);
    assertTrue(message.contains("separate servers with ','"), message);

    props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1,kafka-typo:9092");
    message = bootstrapError(new ShareSinkConnector(dns).validate(props));
    assertTrue(message.startsWith("share.consumer.bootstrap.servers="), message);
    assertTrue(message.contains("host kafka-typo cannot be resolved"), message);
  }

  @Test
  void aBadBootstrapFromTheWorkerFileIsReportedAsTheWorkerFiles(@TempDir Path dir)
      throws IOException {
    Path workerFile = dir.resolve("worker.properties");
    Files.writeString(workerFile, "bootstrap.servers=kafka-typo:9092\n");
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    BootstrapServers.HostResolver dns =
        host -> {
          throw new java.net.UnknownHostException(host);
        };
    ShareSinkConnector connector = new ShareSinkConnector(dns);
    connector.workerDefaults = () -> WorkerDefaults.read(workerFile);
    String message = bootstrapError(connector.validate(props));
    assertTrue(message.startsWith("bootstrap.servers=kafka-typo:9092 from "), message);
    assertTrue(message.contains(workerFile.toString()), message);
    assertTrue(message.contains("set share.consumer.bootstrap.servers on the connector"), message);

    // start() refuses it the same way, before any client is built.
    ConfigException e = assertThrows(ConfigException.class, () -> connector.start(props));
    assertEquals(message, e.getMessage());
  }

  private static String bootstrapError(Config config) {
    Map<String, List<String>> errors = errors(config);
    assertEquals(Set.of(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG), errors.keySet());
    return String.join(" ", errors.get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG));
  }

  private static Map<String, List<String>> errors(Config config) {
    Map<String, List<String>> errors = new HashMap<>();
    config.configValues().stream()
        .filter(v -> !v.errorMessages().isEmpty())
        .forEach(v -> errors.put(v.name(), v.errorMessages()));
    return errors;
  }

  @Test
  void commitThresholdFollowsTheWindowUnlessSetExplicitly() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    assertEquals(2000, ShareSinkConnector.derivedCommitMaxRecords(props, 4000));
    assertEquals(1000, ShareSinkConnector.derivedCommitMaxRecords(props, 2000));
    assertEquals(50, ShareSinkConnector.derivedCommitMaxRecords(props, 100));
    props.put(SinkDriverConfig.COMMIT_MAX_RECORDS_CONFIG, "1000");
    assertEquals(null, ShareSinkConnector.derivedCommitMaxRecords(props, 4000));
  }

  @Test
  void taskConfigsCarryOurKeysAndTheConnectorLevelSettings() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put("transforms", "route");
    props.put("transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter");
    props.put("errors.tolerance", "all");
    props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put("consumer.override.max.poll.records", "10");
    // A legacy connector that returns only its own key, and one that copies everything.
    List<Map<String, String>> legacy =
        List.of(
            Map.of("file", "/tmp/out.txt"),
            Map.of("file", "/tmp/out.txt", "errors.tolerance", "none"));
    List<Map<String, String>> configs =
        ShareSinkConnector.taskConfigs(
            legacy, "org.apache.kafka.connect.file.FileStreamSinkTask", props, "broker");
    assertEquals(2, configs.size());
    for (int id = 0; id < 2; id++) {
      Map<String, String> task = configs.get(id);
      assertEquals("/tmp/out.txt", task.get("file"));
      assertEquals(
          "org.apache.kafka.connect.file.FileStreamSinkTask",
          task.get(ShareSinkConfig.SINK_TASK_CLASS_CONFIG));
      assertEquals("localhost:9092", task.get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG));
      assertEquals("files", task.get(ShareSinkConfig.CONNECTOR_NAME_CONFIG));
      assertEquals(Integer.toString(id), task.get(ShareSinkConfig.TASK_ID_CONFIG));
      assertEquals("broker", task.get(ShareSinkConfig.DLQ_RESOLVED_CONFIG));
      assertEquals("route", task.get("transforms"));
      // The tasks build the share consumer, so they need the connector's consumer overrides.
      assertEquals("10", task.get("consumer.override.max.poll.records"));
    }
    // The legacy connector's own value wins; added keys are stripped again for the legacy task.
    assertEquals("all", configs.get(0).get("errors.tolerance"));
    assertEquals("none", configs.get(1).get("errors.tolerance"));
    Map<String, String> legacyTask =
        ShareSinkTask.legacyTaskProps(
            configs.get(0), "org.apache.kafka.connect.file.FileStreamSinkTask");
    // The topics come along as the sink runtime hands them to its tasks.
    assertEquals(
        Map.of(
            "file", "/tmp/out.txt",
            "topics", "orders, refunds",
            "task.class", "org.apache.kafka.connect.file.FileStreamSinkTask"),
        legacyTask);
    Map<String, String> legacyTask1 =
        ShareSinkTask.legacyTaskProps(
            configs.get(1), "org.apache.kafka.connect.file.FileStreamSinkTask");
    assertEquals("none", legacyTask1.get("errors.tolerance"));
  }

  @Test
  void legacyConfigsDropShareKeysAndNameTheLegacyClasses() {
    Map<String, String> ours = ShareSinkConfigTest.validConfig();
    Map<String, String> legacy = LegacyConfigs.forConnector(ours, "com.example.Sink");
    assertEquals("com.example.Sink", legacy.get("connector.class"));
    assertEquals("orders, refunds", legacy.get("topics"));
    assertTrue(legacy.keySet().stream().noneMatch(k -> k.startsWith("share.")));
    Map<String, String> task = LegacyConfigs.forTask(ours, "com.example.SinkTask");
    assertEquals("com.example.SinkTask", task.get("task.class"));
  }

  @Test
  void aLegacyValueWithImmutableListsTakesOurErrors() {
    org.apache.kafka.common.config.ConfigValue legacy =
        new org.apache.kafka.common.config.ConfigValue(
            "document.id.strategy", "x", java.util.List.of(), java.util.List.of("theirs"));
    legacy.visible(false);
    org.apache.kafka.common.config.ConfigValue copy = ShareSinkConnector.mutableCopy(legacy);
    copy.addErrorMessage("ours");
    org.junit.jupiter.api.Assertions.assertEquals(
        java.util.List.of("theirs", "ours"), copy.errorMessages());
    org.junit.jupiter.api.Assertions.assertEquals("x", copy.value());
    org.junit.jupiter.api.Assertions.assertFalse(copy.visible());
  }
}
