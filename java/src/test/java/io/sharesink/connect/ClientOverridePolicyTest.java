package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.file.FileStreamSinkConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClientOverridePolicyTest {

  private static WorkerDefaults worker(String policy) {
    return worker(
        Map.of("bootstrap.servers", "worker:9092", ClientOverridePolicy.POLICY_CONFIG, policy));
  }

  private static WorkerDefaults worker(Map<String, String> settings) {
    return new WorkerDefaults(null, settings);
  }

  private static Map<String, List<String>> refusals(WorkerDefaults worker, Map<String, String> c) {
    return ClientOverridePolicy.of(worker).refusals("files", FileStreamSinkConnector.class, c);
  }

  private static final Map<String, String> OVERRIDES =
      Map.of(
          "consumer.override.max.poll.records", "10",
          "consumer.override.sasl.jaas.config", "x required;",
          "consumer.override.group.protocol", "share",
          "share.consumer.client.id", "not an override");

  @Test
  void noneRefusesEveryOverrideInTheRuntimesWordsOnItsKey() {
    Map<String, List<String>> refused = refusals(worker("None"), OVERRIDES);
    assertEquals(
        List.of(
            "The 'None' policy does not allow 'max.poll.records' to be overridden in the connector"
                + " configuration."),
        refused.get("consumer.override.max.poll.records"));
    assertTrue(refused.containsKey("consumer.override.sasl.jaas.config"), refused::toString);
    // The switch is not a client setting, and share.consumer.* is sharesink's own.
    assertEquals(2, refused.size(), refused::toString);
  }

  @Test
  void theDefaultIsAllAsInKafka4() {
    assertEquals("All", ClientOverridePolicy.of(worker(Map.of())).name());
    assertEquals(Map.of(), refusals(worker(Map.of()), OVERRIDES));
  }

  @Test
  void principalAndAllowlistAndFullClassNamesWork() {
    Map<String, List<String>> principal = refusals(worker("Principal"), OVERRIDES);
    assertEquals(List.of("consumer.override.max.poll.records"), List.copyOf(principal.keySet()));

    Map<String, String> allowlist = new HashMap<>();
    allowlist.put(ClientOverridePolicy.POLICY_CONFIG, "Allowlist");
    allowlist.put("connector.client.config.override.allowlist", "max.poll.records");
    assertEquals(
        List.of("consumer.override.sasl.jaas.config"),
        List.copyOf(refusals(worker(allowlist), OVERRIDES).keySet()));

    assertEquals(
        2,
        refusals(
                worker(
                    "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy"),
                OVERRIDES)
            .size());
  }

  @Test
  void aPolicyThatCannotBeLoadedRefusesOverridesOnly() {
    WorkerDefaults missing = worker("com.example.NoSuchPolicy");
    Map<String, List<String>> refused = refusals(missing, OVERRIDES);
    assertEquals(2, refused.size(), refused::toString);
    String message = refused.get("consumer.override.max.poll.records").get(0);
    assertTrue(message.contains("com.example.NoSuchPolicy"), message);
    assertEquals(Map.of(), refusals(missing, Map.of("share.consumer.client.id", "c")));
  }

  @Test
  void startRefusesInTheWorkersWords() {
    ConnectException e =
        assertThrows(
            ConnectException.class,
            () ->
                ClientOverridePolicy.of(worker("None"))
                    .ensureAllowed(
                        "files",
                        FileStreamSinkConnector.class,
                        Map.of("consumer.override.max.poll.records", "10")));
    assertTrue(
        e.getMessage().startsWith("Client Config Overrides not allowed [[max.poll.records,10,"),
        e.getMessage());
    assertTrue(e.getMessage().contains("The 'None' policy does not allow"), e.getMessage());
    ClientOverridePolicy.of(worker("All"))
        .ensureAllowed(
            "files",
            FileStreamSinkConnector.class,
            Map.of("consumer.override.max.poll.records", "10"));
  }

  @Test
  void validationPutsTheRefusalOnTheOffendingKey(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("worker.properties");
    Files.writeString(
        file, "bootstrap.servers=127.0.0.1:1\nconnector.client.config.override.policy=None\n");
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1");
    props.put(ShareSinkConfig.WORKER_CONFIG_CONFIG, file.toString());
    props.put("consumer.override.max.poll.records", "10");
    Config config = new ShareSinkConnector().validate(props);
    ConfigValue value =
        config.configValues().stream()
            .filter(v -> v.name().equals("consumer.override.max.poll.records"))
            .findFirst()
            .orElseThrow();
    assertEquals(
        List.of(
            "The 'None' policy does not allow 'max.poll.records' to be overridden in the connector"
                + " configuration."),
        value.errorMessages());
  }
}
