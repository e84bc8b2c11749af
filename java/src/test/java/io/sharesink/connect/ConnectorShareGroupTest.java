package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The share group the offsets endpoints act on, from a connector's stored configuration. */
class ConnectorShareGroupTest {

  @TempDir Path dir;

  private Map<String, String> worker(String... extra) {
    Map<String, String> w = new HashMap<>();
    w.put("bootstrap.servers", "worker:9092");
    w.put("config.providers", "file");
    w.put(
        "config.providers.file.class",
        "org.apache.kafka.common.config.provider.FileConfigProvider");
    for (int i = 0; i + 1 < extra.length; i += 2) {
      w.put(extra[i], extra[i + 1]);
    }
    return w;
  }

  private Map<String, String> stored(String... extra) {
    Map<String, String> c = new HashMap<>();
    c.put("connector.class", ShareSinkConnector.class.getName());
    c.put("name", "orders");
    c.put(
        ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG,
        "org.apache.kafka.connect.file.FileStreamSinkConnector");
    c.put("topics", "orders");
    for (int i = 0; i + 1 < extra.length; i += 2) {
      c.put(extra[i], extra[i + 1]);
    }
    return c;
  }

  @Test
  void theAdminSettingsAreResolvedWithTheWorkersConfigProviders() throws Exception {
    // Before: the offsets endpoints built the admin client from the stored config as it is, so
    // ${file:...} reached the client as a literal (the connector itself gets it resolved).
    Path secrets = dir.resolve("tenant.properties");
    Files.writeString(
        secrets,
        "servers=tenant-cluster:9093\njaas=ScramLoginModule required password=\"s3cret\";\n"
            + "group=tenant-group\n");
    String ref = "${file:" + secrets + ":";
    ConnectorShareGroup group =
        ConnectorShareGroup.of(
            "orders",
            stored(
                "admin.override.bootstrap.servers",
                ref + "servers}",
                "admin.override.sasl.jaas.config",
                ref + "jaas}",
                ShareSinkConfig.GROUP_ID_CONFIG,
                ref + "group}"),
            new WorkerDefaults(null, worker()));
    assertEquals("tenant-cluster:9093", group.adminSettings().get("bootstrap.servers"));
    assertEquals(
        "ScramLoginModule required password=\"s3cret\";",
        group.adminSettings().get("sasl.jaas.config"));
    assertEquals("tenant-group", group.groupId());
  }

  @Test
  void onlyTheWorkersProvidersResolveNotOnesTheConnectorDeclares() throws Exception {
    Path secrets = dir.resolve("worker-secret.properties");
    Files.writeString(secrets, "password=worker-secret\n");
    // A worker without providers: a connector's own config.providers are dropped, as Connect
    // drops them, so its reference stays a literal.
    ConnectorShareGroup group =
        ConnectorShareGroup.of(
            "orders",
            stored(
                "config.providers", "mine",
                "config.providers.mine.class",
                    "org.apache.kafka.common.config.provider.FileConfigProvider",
                "admin.override.sasl.jaas.config", "${mine:" + secrets + ":password}"),
            new WorkerDefaults(null, Map.of("bootstrap.servers", "worker:9092")));
    assertEquals("${mine:" + secrets + ":password}", group.adminSettings().get("sasl.jaas.config"));
  }

  @Test
  void resolvedSettingsStillGoThroughThePolicyAndErrorsHoldNoResolvedValue() throws Exception {
    Path secrets = dir.resolve("values.properties");
    Files.writeString(secrets, "servers=tenant:9093\nbad=not-a-number-s3cret\n");
    String ref = "${file:" + secrets + ":";
    ConnectException refused =
        assertThrows(
            ConnectException.class,
            () ->
                ConnectorShareGroup.of(
                    "orders",
                    stored("admin.override.bootstrap.servers", ref + "servers}"),
                    new WorkerDefaults(null, worker(ClientOverridePolicy.POLICY_CONFIG, "None"))));
    assertTrue(
        refused.getMessage().contains("admin.override.bootstrap.servers"), refused.getMessage());
    assertFalse(refused.getMessage().contains("tenant:9093"), refused.getMessage());
    ConfigException invalid =
        assertThrows(
            ConfigException.class,
            () ->
                ConnectorShareGroup.of(
                    "orders",
                    stored(ShareSinkConfig.LOCK_DURATION_MS_CONFIG, ref + "bad}"),
                    new WorkerDefaults(null, worker())));
    assertFalse(invalid.getMessage().contains("s3cret"), invalid.getMessage());
  }
}
