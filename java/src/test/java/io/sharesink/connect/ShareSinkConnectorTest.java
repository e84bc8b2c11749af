package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.apache.kafka.connect.errors.ConnectException;
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
  void validationConnectsToNoServersTheCallerChose() throws Exception {
    // Before: validation built an admin client on admin.override.bootstrap.servers and connected
    // there (with the worker's top-level and admin.* credentials unless overridden), where
    // Connect's own validation of a sink connects to no cluster at all.
    try (java.net.ServerSocket callers = new java.net.ServerSocket(0, 50, localhost());
        java.net.ServerSocket workers = new java.net.ServerSocket(0, 50, localhost())) {
      String callersServers = "127.0.0.1:" + callers.getLocalPort();
      Map<String, String> props = ShareSinkConfigTest.validConfig();
      props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, callersServers);
      props.put("admin.override.bootstrap.servers", callersServers);
      Map<String, List<String>> errors =
          errors(
              onWorker(Map.of("bootstrap.servers", "127.0.0.1:" + workers.getLocalPort()))
                  .validate(props));
      assertEquals(Map.of(), errors);
      assertFalse(connected(callers), "validation connected to the caller's servers");
      assertFalse(connected(workers), "nothing needed the worker's servers either");

      // The control: without the caller's servers, validation reads the worker's cluster.
      Map<String, String> own = ShareSinkConfigTest.validConfig();
      own.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
      onWorker(Map.of("bootstrap.servers", "127.0.0.1:" + workers.getLocalPort())).validate(own);
      assertTrue(connected(workers), "the control: validation reads the worker's own cluster");
    }
  }

  private static java.net.InetAddress localhost() throws java.net.UnknownHostException {
    return java.net.InetAddress.getByName("127.0.0.1");
  }

  /**
   * Whether a client connected: a connection made during the validation completed its handshake
   * then, so it waits in the listen queue now.
   */
  private static boolean connected(java.net.ServerSocket server) throws IOException {
    server.setSoTimeout(200);
    try (java.net.Socket ignored = server.accept()) {
      return true;
    } catch (java.net.SocketTimeoutException e) {
      return false;
    }
  }

  @Test
  void onAWorkerWhoseConfigurationCannotBeSeenValidationRefusesEveryOverrideOnItsKey() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    props.put("share.consumer.max.poll.records", "7");
    props.put("producer.override.linger.ms", "5");
    ShareSinkConnector connector = new ShareSinkConnector();
    connector.workerDefaults = () -> WorkerDefaults.invisible("nothing visible in this test");
    Map<String, List<String>> errors = errors(connector.validate(props));
    // The producer's too, which the runtime would ask its own policy about: the start refuses it.
    assertEquals(
        Set.of("share.consumer.max.poll.records", "producer.override.linger.ms"),
        errors.keySet(),
        errors::toString);
    errors.forEach(
        (key, messages) ->
            assertTrue(String.join(" ", messages).contains("rest.extension.classes"), key));
    // Without overrides there is nothing to refuse.
    props.remove("share.consumer.max.poll.records");
    props.remove("producer.override.linger.ms");
    assertEquals(Map.of(), errors(connector.validate(props)));
  }

  /** A sink connector the worker could not instantiate: no public no-argument constructor. */
  public static class NoDefaultConstructorSink
      extends org.apache.kafka.connect.file.FileStreamSinkConnector {
    public NoDefaultConstructorSink(String unused) {}
  }

  @Test
  void aClassThatIsNoRunnableSinkIsAnErrorOnItsKeyNotAnException() {
    // Before: an interface or java.lang.Object made the check throw a NullPointerException
    // (its superclass is null), which the worker answers with a 500.
    for (String className :
        List.of(
            "java.lang.Object",
            "java.lang.Runnable",
            "org.apache.kafka.connect.connector.Task",
            "org.apache.kafka.connect.sink.SinkConnector",
            "org.apache.kafka.connect.file.FileStreamSourceConnector",
            NoDefaultConstructorSink.class.getName())) {
      Map<String, String> props = ShareSinkConfigTest.validConfig();
      props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
      props.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, className);
      Map<String, List<String>> errors =
          errors(onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).validate(props));
      List<String> onKey = errors.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
      assertTrue(onKey != null && !onKey.isEmpty(), className + ": " + errors);
      assertTrue(String.join(" ", onKey).contains(className), className + ": " + onKey);
      // And a connector start names the key too.
      ConfigException e =
          assertThrows(
              ConfigException.class,
              () -> onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).start(props),
              className);
      assertTrue(
          e.getMessage().contains(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG), e.getMessage());
    }
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
    ShareSinkConnector connector = new ShareSinkConnector(dns);
    connector.workerDefaults = () -> new WorkerDefaults(null, Map.of());
    String message = bootstrapError(connector.validate(props));
    assertTrue(message.startsWith("share.consumer.bootstrap.servers=127.0.0.1:9092;"), message);
    assertTrue(message.contains("separate servers with ','"), message);

    props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1,kafka-typo:9092");
    message = bootstrapError(connector.validate(props));
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
  void settingsOnlyASourceConnectorHasAreRefusedAtValidationAndStartNamingTheKey() {
    // Before: the runtime, which takes a share-mode connector for a source connector, created
    // the topic offsets.storage.topic named (and read it whole at every task start).
    for (String key :
        List.of(
            "offsets.storage.topic",
            "exactly.once.support",
            "transaction.boundary",
            "transaction.boundary.interval.ms",
            "topic.creation.groups",
            "topic.creation.default.partitions")) {
      Map<String, String> props = ShareSinkConfigTest.validConfig();
      props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
      props.put(key, "1");
      Map<String, List<String>> errors =
          errors(onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).validate(props));
      assertEquals(Set.of(key), errors.keySet(), key);
      String message = String.join(" ", errors.get(key));
      assertTrue(message.contains(key + " is a source connector setting"), message);

      // A config stored before the check: the connector's start refuses it, and so does a
      // task's, before anything else.
      ConnectException atStart =
          assertThrows(
              ConnectException.class,
              () -> onWorker(Map.of("bootstrap.servers", "127.0.0.1:1")).start(props));
      assertTrue(atStart.getMessage().contains(key + ": "), atStart.getMessage());
      // The checks a task's start makes (the connector's without the order check).
      ConnectException atTask =
          assertThrows(
              ConnectException.class,
              () ->
                  StartChecks.run(
                      new ShareSinkConfig(props),
                      props,
                      props.get("name"),
                      new WorkerDefaults(null, Map.of("bootstrap.servers", "127.0.0.1:1")),
                      host -> {},
                      StartChecks.Order.SKIP));
      assertEquals(atStart.getMessage(), atTask.getMessage());
    }
    assertTrue(SourceOnlyKeys.problems(ShareSinkConfigTest.validConfig()).isEmpty());
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
        LegacyConfigs.forTask(configs.get(0), "org.apache.kafka.connect.file.FileStreamSinkTask");
    // The topics come along as the sink runtime hands them to its tasks.
    assertEquals(
        Map.of(
            "file", "/tmp/out.txt",
            "topics", "orders, refunds",
            "task.class", "org.apache.kafka.connect.file.FileStreamSinkTask"),
        legacyTask);
    Map<String, String> legacyTask1 =
        LegacyConfigs.forTask(configs.get(1), "org.apache.kafka.connect.file.FileStreamSinkTask");
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
