package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkerDefaultsTest {

  @TempDir Path dir;

  private Path workerFile(String text) throws Exception {
    Path file = dir.resolve("connect-distributed.properties");
    Files.writeString(file, text);
    return file;
  }

  @Test
  void findsTheFileAfterTheConnectMainClass() throws Exception {
    Path file = workerFile("bootstrap.servers=b:9092\n");
    List<String> args =
        List.of(
            "/usr/bin/java",
            "-Xmx1g",
            "-cp",
            "/opt/kafka/libs/*",
            "org.apache.kafka.connect.cli.ConnectDistributed",
            file.toString());
    assertEquals(Optional.of(file.toString()), WorkerDefaults.argumentAfterMain(args));
    assertEquals(
        Optional.of(file.toString()),
        WorkerDefaults.argumentAfterMain(
            "org.apache.kafka.connect.cli.ConnectStandalone " + file + " sink.properties"));
    assertEquals(
        Optional.empty(), WorkerDefaults.argumentAfterMain(List.of("java", "kafka.Kafka")));
    assertEquals(Optional.empty(), WorkerDefaults.argumentAfterMain("com.example.Main x"));
    assertTrue(WorkerDefaults.readableFile(file));
    assertFalse(WorkerDefaults.readableFile(Path.of("/no/such/file")));
  }

  @Test
  void readsSettingsAndConverterDefaults() throws Exception {
    Path file =
        workerFile(
            String.join(
                "\n",
                "bootstrap.servers=b1:9092,b2:9092",
                "security.protocol=SASL_SSL",
                "sasl.mechanism=SCRAM-SHA-512",
                "ssl.truststore.location=/etc/ts.jks",
                "group.id=connect-cluster",
                "offset.storage.topic=connect-offsets",
                "key.converter=org.apache.kafka.connect.storage.StringConverter",
                "value.converter=org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable=false",
                ""));
    WorkerDefaults worker = WorkerDefaults.read(file);
    assertEquals(Optional.of(file), worker.file());
    assertEquals("b1:9092,b2:9092", worker.settings().get("bootstrap.servers"));
    assertEquals("SASL_SSL", worker.settings().get("security.protocol"));
    assertEquals(Set.of("connect-offsets"), worker.internalTopics());
    assertEquals(
        Map.of(
            "value.converter", "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable", "false"),
        worker.converter("value.converter"));
    assertEquals(Map.of(), worker.converter("header.converter"));
  }

  @Test
  void resolvesConfigProviderVariablesWithTheWorkersProviders() throws Exception {
    Path secrets = dir.resolve("secrets.properties");
    Files.writeString(secrets, "jaas=org.example.Login required;\n");
    Path file =
        workerFile(
            "bootstrap.servers=b:9092\n"
                + "config.providers=file\n"
                + "config.providers.file.class="
                + "org.apache.kafka.common.config.provider.FileConfigProvider\n"
                + "sasl.jaas.config=${file:"
                + secrets
                + ":jaas}\n");
    WorkerDefaults worker = WorkerDefaults.read(file);
    assertEquals("org.example.Login required;", worker.settings().get("sasl.jaas.config"));
  }

  @Test
  void aFileThatCannotBeReadIsAnError() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> WorkerDefaults.read(dir.resolve("missing.properties")));
    assertTrue(e.getMessage().contains("missing.properties"), e.getMessage());
  }

  @Test
  void withoutAWorkerOnTheCommandLineThereAreNoDefaults() {
    // Surefire's JVM is not a Connect worker.
    assertEquals(Optional.empty(), WorkerDefaults.current().file());
    assertEquals(Map.of(), WorkerDefaults.current().settings());
  }

  @Test
  void aConfigurationThatCannotBeSeenIsSaidSoNotTakenForAnEmptyOne() {
    // Surefire's JVM: no extension handed a configuration over, no Connect main class.
    WorkerDefaults worker = WorkerDefaults.current();
    assertFalse(worker.visible());
    assertTrue(
        worker.invisibleBecause().orElseThrow().contains("command line names no worker"),
        worker.invisibleBecause()::toString);
    assertTrue(new WorkerDefaults(null, Map.of()).visible());
    // A file named after the main class that cannot be read is not a visible configuration.
    assertEquals(
        Optional.of("/no/such/file"),
        WorkerDefaults.argumentAfterMain(
            List.of("java", "org.apache.kafka.connect.cli.ConnectDistributed", "/no/such/file")));
    assertFalse(WorkerDefaults.readableFile(dir), "a directory");
  }

  @Test
  void theWarningIsGivenOncePerReason() {
    WorkerDefaults worker = WorkerDefaults.invisible("a reason of this test " + System.nanoTime());
    assertTrue(worker.warnOnceIfInvisible());
    assertFalse(worker.warnOnceIfInvisible());
    assertFalse(new WorkerDefaults(null, Map.of()).warnOnceIfInvisible());
  }

  @Test
  void aStartWaitsForTheRestExtensionsHandoff() throws Exception {
    MockTime time = new MockTime();
    try {
      CompletableFuture<WorkerDefaults> started =
          CompletableFuture.supplyAsync(
              () -> WorkerDefaults.atStart(time, WorkerDefaults::current));
      // The worker configures its REST extensions after it started the herder.
      while (!started.isDone() && time.milliseconds() < 1_000) {
        time.sleep(10);
        Thread.sleep(1);
      }
      assertFalse(started.isDone(), "the start gave up before the extension was configured");
      WorkerConfigHandoff.fromRestExtension(Map.of("bootstrap.servers", "from-extension:9092"));
      WorkerDefaults worker = started.get(30, TimeUnit.SECONDS);
      assertTrue(worker.visible());
      assertTrue(worker.fromRestExtension());
      assertEquals("from-extension:9092", worker.bootstrapServers());
    } finally {
      WorkerConfigHandoff.forgetRestExtension();
    }
  }

  @Test
  void aStartWithoutTheExtensionStaysInvisibleAfterTheWait() throws Exception {
    MockTime time = new MockTime();
    CompletableFuture<WorkerDefaults> started =
        CompletableFuture.supplyAsync(() -> WorkerDefaults.atStart(time, WorkerDefaults::current));
    long waited = 0;
    while (!started.isDone()) {
      time.sleep(100);
      waited += 100;
      Thread.sleep(1);
      assertTrue(waited < 10 * WorkerDefaults.EXTENSION_WAIT.toMillis(), "never gave up");
    }
    assertFalse(started.get().visible());
    assertTrue(time.milliseconds() >= WorkerDefaults.EXTENSION_WAIT.toMillis());
  }

  @Test
  void aVisibleConfigurationStartsWithoutWaiting() {
    MockTime time = new MockTime();
    WorkerDefaults file = new WorkerDefaults(dir, Map.of("bootstrap.servers", "b:9092"));
    long before = time.milliseconds();
    assertSame(file, WorkerDefaults.atStart(time, () -> file));
    assertEquals(before, time.milliseconds());
  }

  @Test
  void aConnectorsConverterSettingsWithoutItsClassNeverConfigureTheWorkersConverter()
      throws Exception {
    // Before: the connector's value.converter.* kept beside the worker's class and credentials,
    // so a connector chose where the worker's converter sent the worker's credentials. Kafka
    // builds the worker's converter from the worker's settings alone then.
    WorkerDefaults worker =
        new WorkerDefaults(
            dir,
            Map.of(
                "value.converter", "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url", "https://registry.internal",
                "value.converter.basic.auth.user.info", "worker:secret",
                "header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter"));
    Map<String, String> props =
        Map.of(
            "value.converter.schema.registry.url", "https://attacker.example",
            "value.converter.basic.auth.credentials.source", "USER_INFO",
            "header.converter.schemas.enable", "false",
            "key.converter", "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable", "false",
            "file", "/tmp/x");
    Map<String, String> plugin = LegacyConfigs.forPlugins(props, worker);
    assertEquals(worker.converter("value.converter"), subset(plugin, "value.converter"));
    assertEquals(
        Map.of("header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter"),
        subset(plugin, "header.converter"));
    // A converter whose class the connector sets keeps the connector's own settings.
    assertEquals("false", plugin.get("key.converter.schemas.enable"));
    assertEquals("/tmp/x", plugin.get("file"));
  }

  private static Map<String, String> subset(Map<String, String> props, String prefix) {
    Map<String, String> out = new HashMap<>();
    props.forEach(
        (k, v) -> {
          if (k.startsWith(prefix)) {
            out.put(k, v);
          }
        });
    return out;
  }

  @Test
  void converterDefaultsApplyOnlyWhenTheConnectorSetsNone() throws Exception {
    WorkerDefaults worker =
        new WorkerDefaults(
            dir,
            Map.of(
                "key.converter", "org.apache.kafka.connect.json.JsonConverter",
                "key.converter.schemas.enable", "true",
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable", "true"));
    Map<String, String> props =
        Map.of(
            "value.converter", "org.apache.kafka.connect.storage.StringConverter",
            "share.engine", "java",
            "file", "/tmp/x");
    Map<String, String> plugin = LegacyConfigs.forPlugins(props, worker);
    assertEquals("org.apache.kafka.connect.json.JsonConverter", plugin.get("key.converter"));
    assertEquals("true", plugin.get("key.converter.schemas.enable"));
    assertEquals("org.apache.kafka.connect.storage.StringConverter", plugin.get("value.converter"));
    assertTrue(!plugin.containsKey("value.converter.schemas.enable"));
    assertTrue(!plugin.containsKey("share.engine"));
  }

  @Test
  void theConfigurationHandedToTheRestExtensionIsPreferredToTheCommandLine() throws Exception {
    try {
      WorkerConfigHandoff.fromRestExtension(
          Map.of(
              "bootstrap.servers", "from-worker:9092 ",
              "group.id", "connect-cluster",
              "value.converter", "org.apache.kafka.connect.storage.StringConverter",
              "rest.extension.classes", "io.sharesink.connect.rest.ShareModeRestExtension"));
      WorkerDefaults worker = WorkerDefaults.current();
      assertTrue(worker.fromRestExtension());
      assertEquals("from-worker:9092", worker.settings().get("bootstrap.servers"));
      assertEquals(
          Map.of("value.converter", "org.apache.kafka.connect.storage.StringConverter"),
          worker.converter("value.converter"));
      assertTrue(
          ConnectorClients.of(worker, Map.of())
              .missingBootstrapMessage()
              .contains("handed to sharesink's REST extension"));
    } finally {
      WorkerConfigHandoff.forgetRestExtension();
    }
    // Forgotten (the extension closed): back to the command line, which names no worker file here.
    assertEquals(false, WorkerDefaults.current().fromRestExtension());
  }
}
