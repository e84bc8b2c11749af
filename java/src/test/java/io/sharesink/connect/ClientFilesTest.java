package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.HostileFiles;
import io.sharesink.engine.SettingFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClientFilesTest {

  /** The engine's test data: key material and the PEM key rule both sides test against. */
  static final Path DATA = Path.of(System.getProperty("sharesink.test.data"));

  private static final Map<String, String> WORKER = Map.of("bootstrap.servers", "localhost:9092");

  @TempDir Path dir;

  /** A connector on WORKER whose host lookups fail the test: nothing may look up or connect. */
  private static ShareSinkConnector connector(Map<String, String> worker) {
    ShareSinkConnector connector =
        new ShareSinkConnector(
            host -> {
              throw new AssertionError("validation looked up " + host);
            });
    connector.workerDefaults = () -> new WorkerDefaults(null, worker);
    return connector;
  }

  private static Map<String, List<String>> errors(Config config) {
    Map<String, List<String>> errors = new LinkedHashMap<>();
    config.configValues().stream()
        .filter(v -> !v.errorMessages().isEmpty())
        .forEach(v -> errors.put(v.name(), v.errorMessages()));
    return errors;
  }

  private static Map<String, String> problems(Map<String, String> props) {
    return ClientFiles.problems(ConnectorClients.of(new WorkerDefaults(null, WORKER), props));
  }

  /** The hostile paths of issue 40, each with what its refusal says. */
  private Map<Path, String> hostilePaths(HostileFiles.Fifo fifo) throws Exception {
    Path directory = Files.createDirectory(dir.resolve("a-directory"));
    Path sparse = HostileFiles.sparse(dir.resolve("sparse.pem"), 3L << 30);
    Map<Path, String> paths = new LinkedHashMap<>();
    paths.put(Path.of("/dev/zero"), "/dev/zero is a character device, not a regular file");
    paths.put(fifo.path(), fifo.path() + " is a FIFO, not a regular file");
    paths.put(sparse, sparse + " holds more than " + SettingFiles.MAX_BYTES + " bytes");
    paths.put(directory, directory + " is a directory, not a regular file");
    return paths;
  }

  @Test
  void hostilePathsAreValidationErrorsOnTheirKeyForEveryClient() throws Exception {
    String ca = Files.readString(DATA.resolve("client-cert.pem"));
    List<String> keys =
        List.of(
            "share.consumer.ssl.truststore.location",
            "consumer.override.ssl.keystore.location",
            "producer.override.ssl.truststore.location",
            "admin.override.ssl.keystore.location",
            "share.consumer.sasl.oauthbearer.assertion.file");
    try (HostileFiles.Fifo fifo = new HostileFiles.Fifo(dir.resolve("trust.pem"), ca.getBytes())) {
      for (Map.Entry<Path, String> hostile : hostilePaths(fifo).entrySet()) {
        for (String key : keys) {
          Map<String, String> props = ShareSinkConfigTest.validConfig();
          props.put("share.consumer.security.protocol", "SSL");
          props.put("share.consumer.ssl.truststore.type", "PEM");
          props.put(key, hostile.getKey().toString());
          Map<String, List<String>> errors = errors(connector(WORKER).validate(props));
          assertEquals(List.of(key), List.copyOf(errors.keySet()), hostile + " " + errors);
          String message = String.join(" ", errors.get(key));
          assertTrue(message.startsWith(key + ": " + hostile.getValue()), message);
        }
      }
    }
  }

  @Test
  void startRefusesThemNamingTheKeyBeforeAnythingConnects() throws Exception {
    try (HostileFiles.Fifo fifo = new HostileFiles.Fifo(dir.resolve("trust.pem"), new byte[0])) {
      for (Map.Entry<Path, String> hostile : hostilePaths(fifo).entrySet()) {
        Map<String, String> props = ShareSinkConfigTest.validConfig();
        props.put("share.consumer.ssl.truststore.location", hostile.getKey().toString());
        ConfigException e =
            assertThrows(
                ConfigException.class,
                () ->
                    StartChecks.run(
                        new ShareSinkConfig(props),
                        props,
                        "files",
                        new WorkerDefaults(null, WORKER),
                        host -> {
                          throw new AssertionError("looked up " + host);
                        },
                        StartChecks.Order.SKIP));
        assertTrue(
            e.getMessage()
                .startsWith("share.consumer.ssl.truststore.location: " + hostile.getValue()),
            e.getMessage());
      }
    }
  }

  @Test
  void aKeytabInTheJaasLineAndFileUrlsAreFilesToo() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(
        "share.consumer.sasl.jaas.config",
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true"
            + " keyTab=\"/dev/zero\" principal=\"tenant@EXAMPLE\" secret=\"hunter2\";");
    props.put("admin.override.sasl.oauthbearer.token.endpoint.url", "file:///dev/zero");
    props.put("producer.override.sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks");
    Map<String, String> problems = problems(props);
    assertEquals(
        List.of(
            "share.consumer.sasl.jaas.config",
            "admin.override.sasl.oauthbearer.token.endpoint.url"),
        List.copyOf(problems.keySet()),
        problems.toString());
    String jaas = problems.get("share.consumer.sasl.jaas.config");
    assertTrue(
        jaas.startsWith(
            "share.consumer.sasl.jaas.config (its keyTab option): /dev/zero is a character device"),
        jaas);
    assertFalse(jaas.contains("hunter2"), "never a value of the line: " + jaas);
    assertEquals(
        Map.of("ticketCache", "/tmp/cc"),
        ClientFiles.jaasFiles("m required ticketCache=\"/tmp/cc\";"));
    assertEquals(Map.of(), ClientFiles.jaasFiles("not a jaas line"));
    assertEquals(Optional.of("/var/token"), ClientFiles.fileUrlPath("file:/var/token"));
    assertEquals(Optional.empty(), ClientFiles.fileUrlPath("https://idp/token"));
  }

  @Test
  void theWorkersOwnFilesAndMissingFilesAreLeftToTheClients() {
    Map<String, String> worker = new HashMap<>(WORKER);
    worker.put("consumer.ssl.truststore.location", "/dev/zero");
    worker.put("admin.ssl.keystore.location", "/dev/zero");
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put("share.consumer.ssl.keystore.location", dir.resolve("missing.p12").toString());
    assertEquals(
        Map.of(),
        ClientFiles.problems(ConnectorClients.of(new WorkerDefaults(null, worker), props)));
  }

  @Test
  void aPathThePolicyRefusesIsNotLookedAt() throws Exception {
    Map<String, String> worker = new HashMap<>(WORKER);
    worker.put("connector.client.config.override.policy", "None");
    try (HostileFiles.Fifo fifo = new HostileFiles.Fifo(dir.resolve("trust.pem"), new byte[0])) {
      Map<String, String> props = ShareSinkConfigTest.validConfig();
      props.put("share.consumer.ssl.truststore.location", fifo.path().toString());
      Map<String, List<String>> errors = errors(connector(worker).validate(props));
      String message = String.join(" ", errors.get("share.consumer.ssl.truststore.location"));
      assertFalse(message.contains("FIFO"), message);
      assertTrue(message.contains("None"), message);
    }
  }

  /** One row of the engine's tests/data/pem-key-rule.txt. */
  record PemKeyRow(
      String line, String keyPem, String keyPassword, boolean kafkaAccepts, String engine) {}

  static List<PemKeyRow> pemKeyRule() throws Exception {
    List<PemKeyRow> rows = new ArrayList<>();
    for (String line : Files.readAllLines(DATA.resolve("pem-key-rule.txt"))) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] cols = line.trim().split("\\s+");
      StringBuilder pem = new StringBuilder();
      for (String file : cols[0].split("\\+")) {
        pem.append(Files.readString(DATA.resolve(file)));
      }
      rows.add(
          new PemKeyRow(
              line,
              pem.toString(),
              cols[1].equals("-") ? null : cols[1],
              cols[2].equals("accepts"),
              cols[3]));
    }
    assertTrue(rows.size() >= 8, rows.toString());
    return rows;
  }

  /**
   * Validation says of a PEM key store what Kafka 4.4's client does (its own factory decides), on
   * the key the connector set, for the inline and the file form; the table's engine column, which
   * the engine's own test holds it to, never takes a key Kafka's client refuses, and where it
   * refuses one Kafka's client takes, share.engine=auto runs the Java client.
   */
  @Test
  void pemKeyStoresFollowKafkasRuleAtValidationAndInTheEngineChoice() throws Exception {
    String cert = Files.readString(DATA.resolve("client-cert.pem"));
    int row = 0;
    for (PemKeyRow rule : pemKeyRule()) {
      Path file =
          Files.writeString(dir.resolve("keystore-" + row++ + ".pem"), cert + rule.keyPem());
      Map<String, String> inline = new HashMap<>();
      inline.put("share.consumer.ssl.keystore.certificate.chain", cert);
      inline.put("share.consumer.ssl.keystore.key", rule.keyPem());
      Map<String, String> inFile = Map.of("share.consumer.ssl.keystore.location", file.toString());
      for (Map<String, String> form : List.of(inline, inFile)) {
        Map<String, String> props = ShareSinkConfigTest.validConfig();
        props.put("share.consumer.security.protocol", "SSL");
        props.put("share.consumer.ssl.keystore.type", "PEM");
        props.putAll(form);
        if (rule.keyPassword() != null) {
          props.put("share.consumer.ssl.key.password", rule.keyPassword());
        }
        String blamed =
            form.containsKey("share.consumer.ssl.keystore.key")
                ? "share.consumer.ssl.keystore.key"
                : "share.consumer.ssl.keystore.location";
        Map<String, String> problems = problems(props);
        if (rule.kafkaAccepts()) {
          assertEquals(Map.of(), problems, rule.line());
        } else {
          assertEquals(List.of(blamed), List.copyOf(problems.keySet()), rule.line());
          String message = problems.get(blamed);
          assertTrue(message.contains("Kafka's client refuses this PEM key store"), message);
          assertFalse(message.contains("BEGIN PRIVATE KEY-----\n"), "no key material: " + message);
          assertFalse(
              message.contains(rule.keyPem().lines().skip(1).findFirst().orElseThrow()),
              "no key material: " + message);
        }
        assertFalse(
            !rule.kafkaAccepts() && rule.engine().equals("accepts"),
            "the engine takes a key Kafka's client refuses: " + rule.line());
        if (rule.kafkaAccepts()) {
          EngineChoice choice =
              EngineChoice.choose(
                  ShareSinkConfig.ENGINE_AUTO,
                  ConnectorClients.of(new WorkerDefaults(null, WORKER), props)
                      .consumer()
                      .settings(),
                  Optional::empty);
          String expected =
              rule.engine().equals("accepts")
                  ? ShareSinkConfig.ENGINE_NATIVE
                  : ShareSinkConfig.ENGINE_JAVA;
          assertEquals(expected, choice.engine(), rule.line() + " " + choice.fallbackReason());
        }
      }
    }
  }

  @Test
  void aPemKeyStoreFromTheWorkerAloneIsTheOperatorsAffair() throws Exception {
    Map<String, String> worker = new HashMap<>(WORKER);
    worker.put("consumer.ssl.keystore.type", "PEM");
    worker.put("consumer.ssl.keystore.location", DATA.resolve("client-key.sec1.pem").toString());
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    ConnectorClients clients = ConnectorClients.of(new WorkerDefaults(null, worker), props);
    assertEquals(Map.of(), ClientFiles.problems(clients));
    // One key store setting of the connector's own makes the whole store its affair.
    props.put("share.consumer.ssl.key.password", "secret");
    clients = ConnectorClients.of(new WorkerDefaults(null, worker), props);
    assertEquals(
        List.of("share.consumer.ssl.key.password"),
        List.copyOf(ClientFiles.problems(clients).keySet()));
  }
}
