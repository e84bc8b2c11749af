package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.admin.GroupSettings;
import io.sharesink.engine.KafkaClientConfigTranslator;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ShareConsumerSettingsTest {

  private static final WorkerDefaults WORKER =
      new WorkerDefaults(
          Path.of("/etc/kafka/connect-distributed.properties"),
          Map.of(
              "bootstrap.servers", "worker:9092",
              "security.protocol", "SASL_SSL",
              "sasl.mechanism", "SCRAM-SHA-512",
              "group.id", "connect-cluster",
              "consumer.max.poll.records", "200",
              "consumer.fetch.max.bytes", "1000000",
              "consumer.sasl.mechanism", "PLAIN",
              "consumer.client.id", "from-worker",
              "consumer.auto.offset.reset", "latest"));

  @Test
  void eachLayerOverridesTheOneBelow() {
    Map<String, String> connector =
        Map.of(
            "consumer.override.fetch.max.bytes", "2000000",
            "consumer.override.client.id", "orders-sink",
            "consumer.override.fetch.min.bytes", "1024",
            "share.consumer.fetch.min.bytes", "4096");
    ShareConsumerSettings layered = ShareConsumerSettings.layer(WORKER, connector);
    Map<String, Object> s = layered.settings();
    assertEquals("worker:9092", s.get("bootstrap.servers")); // the worker's bootstrap.servers
    // The worker's top-level security settings are its own clients' (Worker.baseConsumerConfigs).
    assertFalse(s.containsKey("security.protocol"));
    assertEquals("PLAIN", s.get("sasl.mechanism")); // worker consumer.*
    assertEquals("200", s.get("max.poll.records")); // worker consumer.*
    assertEquals("2000000", s.get("fetch.max.bytes")); // consumer.override.* over consumer.*
    assertEquals("orders-sink", s.get("client.id"));
    assertEquals("4096", s.get("fetch.min.bytes")); // share.consumer.* over everything
    assertEquals("worker consumer.max.poll.records", layered.origin("max.poll.records"));
    assertEquals("consumer.override.fetch.max.bytes", layered.origin("fetch.max.bytes"));
    assertEquals("share.consumer.fetch.min.bytes", layered.origin("fetch.min.bytes"));
    assertEquals("worker bootstrap.servers", layered.origin("bootstrap.servers"));
    // The worker's own group.id is not a connection setting.
    assertFalse(s.containsKey("group.id"));
  }

  @Test
  void settingsAShareConsumerDoesNotTakeAreLeftOutAndNamed() {
    Map<String, String> connector =
        Map.of(
            "consumer.override.group.protocol", "share",
            "consumer.override.group.id", "mine",
            "consumer.override.enable.auto.commit", "true",
            "share.consumer.key.deserializer", "x.Y",
            "consumer.override.max.poll.records", "50");
    ShareConsumerSettings layered = ShareConsumerSettings.layer(WORKER, connector);
    Map<String, Object> s = layered.settings();
    for (String key :
        List.of(
            "group.protocol",
            "group.id",
            "enable.auto.commit",
            "key.deserializer",
            "auto.offset.reset")) {
      assertFalse(s.containsKey(key), key);
    }
    String ignored = String.join("; ", layered.ignored());
    for (String origin :
        List.of(
            "consumer.override.group.protocol",
            "consumer.override.group.id",
            "consumer.override.enable.auto.commit",
            "share.consumer.key.deserializer",
            "worker consumer.auto.offset.reset (the share group's start position is"
                + " share.auto.offset.reset)")) {
      assertTrue(ignored.contains(origin), ignored);
    }
    assertEquals("50", s.get("max.poll.records"));
  }

  @Test
  void theIsolationLevelIsTakenForTheGroupNotForTheClientNorIgnored() {
    WorkerDefaults worker =
        new WorkerDefaults(
            Path.of("/etc/kafka/connect-distributed.properties"),
            Map.of(
                "bootstrap.servers", "worker:9092", "consumer.isolation.level", "read_committed"));
    ShareConsumerSettings fromWorker = ShareConsumerSettings.layer(worker, Map.of());
    assertEquals(
        Optional.of(
            new GroupSettings.Isolation("read_committed", "worker consumer.isolation.level")),
        fromWorker.isolationLevel());
    assertFalse(fromWorker.settings().containsKey("isolation.level"));
    assertTrue(fromWorker.ignored().isEmpty(), fromWorker.ignored().toString());

    ShareConsumerSettings overridden =
        ShareConsumerSettings.layer(
            worker, Map.of("consumer.override.isolation.level", " read_uncommitted "));
    assertEquals(
        Optional.of(
            new GroupSettings.Isolation("read_uncommitted", "consumer.override.isolation.level")),
        overridden.isolationLevel());
    ShareConsumerSettings explicit =
        ShareConsumerSettings.layer(
            worker,
            Map.of(
                "consumer.override.isolation.level", "read_uncommitted",
                "share.consumer.isolation.level", "read_committed"));
    assertEquals(
        Optional.of(
            new GroupSettings.Isolation("read_committed", "share.consumer.isolation.level")),
        explicit.isolationLevel());
    assertEquals(Optional.empty(), ShareConsumerSettings.layer(WORKER, Map.of()).isolationLevel());
  }

  @Test
  void anInvisibleWorkerLeavesTheGroupsLevelUnknownUnlessTheConnectorAsks() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    ShareSinkConfig config = new ShareSinkConfig(props);
    WorkerDefaults invisible = WorkerDefaults.invisible("no file on the command line");
    assertEquals(
        GroupSettings.Isolation.UNKNOWN,
        ShareSinkConnector.groupSettings(config, ConnectorClients.of(invisible, props))
            .isolation());
    assertEquals(
        null,
        ShareSinkConnector.groupSettings(config, ConnectorClients.of(WORKER, props)).isolation(),
        "a visible worker that sets none: nobody asks");
    props.put("share.consumer.isolation.level", "read_committed");
    assertEquals(
        "read_committed",
        ShareSinkConnector.groupSettings(
                new ShareSinkConfig(props), ConnectorClients.of(invisible, props))
            .isolation()
            .level());
  }

  @Test
  void pollAndFetchSizesReachTheNativeEnginesProperties() {
    Map<String, String> connector =
        Map.of(
            "consumer.override.max.poll.records", "77",
            "consumer.override.fetch.max.wait.ms", "250");
    Map<String, String> props =
        KafkaClientConfigTranslator.translate(
            ShareConsumerSettings.layer(WORKER, connector).settings());
    assertEquals("77", props.get("max.poll.records"));
    assertEquals("1000000", props.get("fetch.max.bytes"));
    assertEquals("250", props.get("fetch.max.wait.ms"));
    assertEquals("from-worker", props.get("client.id"));
  }

  @Test
  void theShareConsumerGetsTheLayersTheAdminClientDoesNot() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put("consumer.override.max.poll.records", "10");
    ConnectorClients clients = ConnectorClients.of(WORKER, props);
    assertEquals("10", clients.consumer().settings().get("max.poll.records"));
    assertEquals("localhost:9092", clients.consumer().settings().get("bootstrap.servers"));
    assertFalse(clients.admin().containsKey("max.poll.records"));
    assertEquals("worker:9092", clients.admin().get("bootstrap.servers"));
  }

  @Test
  void theCheckIntervalIsTheConsumersMetadataMaxAge() {
    assertEquals(300_000, ShareConsumerSettings.metadataMaxAgeMs(Map.of()));
    assertEquals(
        5_000, ShareConsumerSettings.metadataMaxAgeMs(Map.of("metadata.max.age.ms", "5000")));
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put("share.consumer.metadata.max.age.ms", "5000");
    assertEquals(
        5_000,
        ShareConsumerSettings.metadataMaxAgeMs(
            ConnectorClients.of(WorkerDefaults.NONE, props).consumer().settings()));
  }
}
