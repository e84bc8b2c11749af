package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.Test;

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
    Config config = new ShareSinkConnector().validate(ShareSinkConfigTest.validConfig());
    config
        .configValues()
        .forEach(v -> assertTrue(v.errorMessages().isEmpty(), v.name() + v.errorMessages()));
  }

  @Test
  void drivesTheLegacyConnectorAndTagsItsTaskConfigs() {
    ShareSinkConnector connector = new ShareSinkConnector();
    connector.initialize(new StubContext());
    connector.start(ShareSinkConfigTest.validConfig());
    try {
      List<Map<String, String>> configs = connector.taskConfigs(3);
      assertEquals(3, configs.size());
      for (Map<String, String> task : configs) {
        assertEquals("/tmp/out.txt", task.get("file"));
        assertEquals(
            "org.apache.kafka.connect.file.FileStreamSinkTask",
            task.get(ShareSinkConfig.SINK_TASK_CLASS_CONFIG));
        assertEquals("localhost:9092", task.get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG));
      }
    } finally {
      connector.stop();
    }
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
}
