package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest.ClientType;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.file.FileStreamSinkConnector;
import org.apache.kafka.connect.health.ConnectorType;
import org.junit.jupiter.api.Test;

/**
 * What a connector's client settings become, and what the worker's override policy says about them:
 * the classic runtime's rule (Connect's {@code Worker.baseConsumerConfigs}, {@code
 * baseProducerConfigs}, {@code adminConfigs} and {@code validateClientOverrides}) for every key
 * family share mode adds, under Connect's own policy classes.
 */
class ConnectorClientsTest {

  /** A worker with SASL settings of its own at every level, each with its own password. */
  static Map<String, String> securedWorker(String policy) {
    Map<String, String> w = new HashMap<>();
    w.put("bootstrap.servers", "worker:9092");
    w.put("group.id", "connect-cluster");
    w.put("security.protocol", "SASL_SSL");
    w.put("sasl.mechanism", "PLAIN");
    w.put("sasl.jaas.config", jaas("top-level-secret"));
    w.put("consumer.security.protocol", "SASL_SSL");
    w.put("consumer.sasl.jaas.config", jaas("consumer-secret"));
    w.put("consumer.max.poll.records", "200");
    w.put("producer.sasl.jaas.config", jaas("producer-secret"));
    w.put("producer.linger.ms", "20");
    w.put("admin.sasl.jaas.config", jaas("admin-secret"));
    w.put("offset.storage.topic", "connect-offsets");
    if (policy != null) {
      w.put(ClientOverridePolicy.POLICY_CONFIG, policy);
    }
    return w;
  }

  static String jaas(String password) {
    return "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\""
        + " password=\""
        + password
        + "\";";
  }

  private static ConnectorClients clients(Map<String, String> worker, Map<String, String> props) {
    return ConnectorClients.of(new WorkerDefaults(null, worker), props);
  }

  // ------------------------------------------------------------------------------------------
  // layers

  @Test
  void theShareConsumerStartsFromTheWorkersConsumerSettingsNotItsOwnPrincipal() {
    ConnectorClients c = clients(securedWorker(null), Map.of());
    Map<String, Object> consumer = c.consumer().settings();
    assertEquals("worker:9092", consumer.get("bootstrap.servers"));
    assertEquals(jaas("consumer-secret"), consumer.get("sasl.jaas.config"));
    assertEquals("200", consumer.get("max.poll.records"));
    // The top-level sasl.mechanism is the worker's own clients', as in Worker.baseConsumerConfigs.
    assertFalse(consumer.containsKey("sasl.mechanism"), consumer.toString());
    assertFalse(consumer.toString().contains("top-level-secret"), consumer.toString());
  }

  @Test
  void theDlqProducerStartsFromTheWorkersProducerSettings() {
    Map<String, Object> producer =
        clients(securedWorker(null), Map.of("producer.override.linger.ms", "5")).producer();
    assertEquals("worker:9092", producer.get("bootstrap.servers"));
    assertEquals(jaas("producer-secret"), producer.get("sasl.jaas.config"));
    assertEquals("5", producer.get("linger.ms"));
    assertFalse(producer.containsKey("security.protocol"), producer.toString());
    assertFalse(producer.toString().contains("top-level-secret"));
  }

  @Test
  void adminClientsStartFromTheTopLevelAndAdminSettingsAsConnectsAdminConfigs() {
    Map<String, Object> admin =
        clients(
                securedWorker(null),
                Map.of(
                    "admin.override.client.id", "mine",
                    "share.consumer.bootstrap.servers", "elsewhere:9092",
                    "share.consumer.sasl.jaas.config", jaas("connector-secret")))
            .admin();
    assertEquals("worker:9092", admin.get("bootstrap.servers"));
    assertEquals("SASL_SSL", admin.get("security.protocol"));
    assertEquals(jaas("admin-secret"), admin.get("sasl.jaas.config")); // admin.* over top level
    assertEquals("mine", admin.get("client.id"));
    // share.consumer.* is the consumer's only; worker keys no admin client knows are dropped.
    assertFalse(admin.toString().contains("elsewhere"), admin.toString());
    assertFalse(admin.toString().contains("connector-secret"), admin.toString());
    assertFalse(admin.containsKey("group.id"));
    assertFalse(admin.containsKey("max.poll.records"));
  }

  @Test
  void eachConsumerLayerOverridesTheOneBelow() {
    ConnectorClients c =
        clients(
            securedWorker(null),
            Map.of(
                "consumer.override.max.poll.records", "50",
                "consumer.override.fetch.min.bytes", "1024",
                "share.consumer.fetch.min.bytes", "4096"));
    ShareConsumerSettings layered = c.consumer();
    assertEquals("50", layered.settings().get("max.poll.records"));
    assertEquals("4096", layered.settings().get("fetch.min.bytes"));
    assertEquals("consumer.override.max.poll.records", layered.origin("max.poll.records"));
    assertEquals("share.consumer.fetch.min.bytes", layered.origin("fetch.min.bytes"));
    assertEquals("worker consumer.sasl.jaas.config", layered.origin("sasl.jaas.config"));
    assertEquals("worker bootstrap.servers", layered.origin("bootstrap.servers"));
  }

  // ------------------------------------------------------------------------------------------
  // the policy matrix

  /** One setting of every family share mode lets a connector add, by connector key. */
  static final Map<String, String> EVERY_FAMILY = everyFamily();

  private static Map<String, String> everyFamily() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("share.consumer.bootstrap.servers", "attacker:9092");
    m.put("share.consumer.security.protocol", "SASL_PLAINTEXT");
    m.put("share.consumer.sasl.jaas.config", jaas("connector-secret"));
    m.put("share.consumer.max.poll.records", "10");
    m.put("consumer.override.client.id", "mine");
    m.put("consumer.override.metric.reporters", "com.example.Reporter");
    m.put("consumer.override.sasl.login.class", "com.example.Login");
    m.put("share.group.id", "someone-elses-group");
    m.put("share.task.stuck.timeout.ms", "86400000"); // acts as the consumer's record hold
    m.put("producer.override.bootstrap.servers", "attacker:9092");
    m.put("producer.override.sasl.client.callback.handler.class", "com.example.Handler");
    m.put("admin.override.bootstrap.servers", "attacker:9092");
    m.put("admin.override.security.protocol", "SASL_PLAINTEXT");
    return m;
  }

  private static Set<String> refused(String policy, Map<String, String> moreWorker) {
    Map<String, String> worker = securedWorker(policy);
    worker.putAll(moreWorker);
    Map<String, String> props = new LinkedHashMap<>(EVERY_FAMILY);
    props.put(ShareModeForm.FLAG_CONFIG, "share");
    return new TreeSet<>(
        clients(worker, props).refusals("files", FileStreamSinkConnector.class).keySet());
  }

  @Test
  void noneRefusesEveryKeyOfEveryFamilyButTheSwitch() {
    assertEquals(new TreeSet<>(EVERY_FAMILY.keySet()), refused("None", Map.of()));
  }

  @Test
  void principalAllowsOnlyTheClientsPrincipalInEveryFamily() {
    Set<String> allowed = new TreeSet<>(EVERY_FAMILY.keySet());
    allowed.removeAll(refused("Principal", Map.of()));
    assertEquals(
        Set.of(
            "share.consumer.security.protocol",
            "share.consumer.sasl.jaas.config",
            "admin.override.security.protocol"),
        allowed);
  }

  @Test
  void allAllowsEverythingAsUnderTheClassicRuntime() {
    assertEquals(Set.of(), refused("All", Map.of()));
    assertEquals(Set.of(), refused(null, Map.of())); // Connect's default is All
  }

  @Test
  void anAllowlistDecidesByClientKeyWhateverTheFamily() {
    Set<String> refused =
        refused(
            "Allowlist",
            Map.of("connector.client.config.override.allowlist", "client.id,max.poll.records"));
    Set<String> allowed = new TreeSet<>(EVERY_FAMILY.keySet());
    allowed.removeAll(refused);
    assertEquals(Set.of("share.consumer.max.poll.records", "consumer.override.client.id"), allowed);
  }

  /** A policy of the operator's own: sees each request as the classic runtime would show it. */
  public static class RecordingPolicy implements ConnectorClientConfigOverridePolicy {
    static final List<ConnectorClientConfigRequest> REQUESTS = new ArrayList<>();

    @Override
    public List<ConfigValue> validate(ConnectorClientConfigRequest request) {
      REQUESTS.add(request);
      List<ConfigValue> answers = new ArrayList<>();
      request
          .clientProps()
          .forEach(
              (key, value) -> {
                ConfigValue v = new ConfigValue(key, value, List.of(), new ArrayList<>());
                if (!key.equals("client.id")) {
                  v.addErrorMessage("only client.id, says " + request.clientType());
                }
                answers.add(v);
              });
      return answers;
    }

    @Override
    public void configure(Map<String, ?> configs) {}

    @Override
    public void close() {}
  }

  @Test
  void aCustomPolicySeesASinkOfTheLegacyClassPerClientType() {
    RecordingPolicy.REQUESTS.clear();
    Set<String> refused = refused(RecordingPolicy.class.getName(), Map.of());
    assertFalse(refused.contains("consumer.override.client.id"));
    assertEquals(EVERY_FAMILY.size() - 1, refused.size(), refused::toString);
    assertEquals(3, RecordingPolicy.REQUESTS.size());
    for (ConnectorClientConfigRequest request : RecordingPolicy.REQUESTS) {
      assertEquals(ConnectorType.SINK, request.connectorType());
      assertEquals(FileStreamSinkConnector.class, request.connectorClass());
      assertEquals("files", request.connectorName());
    }
    Map<ClientType, ConnectorClientConfigRequest> byType = new HashMap<>();
    RecordingPolicy.REQUESTS.forEach(r -> byType.put(r.clientType(), r));
    assertEquals(Set.of(ClientType.values()), byType.keySet());
    ConnectorClientConfigRequest consumer = byType.get(ClientType.CONSUMER);
    // share.group.id is the consumer's group.id; values typed as the consumer's ConfigDef types.
    assertEquals("someone-elses-group", consumer.clientProps().get("group.id"));
    assertEquals(10, consumer.clientProps().get("max.poll.records"));
    assertFalse(consumer.clientProps().containsKey("group.protocol"));
    assertEquals(
        Set.of("bootstrap.servers", "sasl.client.callback.handler.class"),
        byType.get(ClientType.PRODUCER).clientProps().keySet());
    assertEquals(
        Set.of("bootstrap.servers", "security.protocol"),
        byType.get(ClientType.ADMIN).clientProps().keySet());
  }

  @Test
  void aPolicyThatCannotBeLoadedRefusesEveryOverride() {
    Set<String> refused = refused("com.example.NoSuchPolicy", Map.of());
    assertEquals(new TreeSet<>(EVERY_FAMILY.keySet()), refused);
  }

  @Test
  void startRefusesNamingKeysNeverValues() {
    ConnectorClients c = clients(securedWorker("None"), EVERY_FAMILY);
    ConnectException e =
        assertThrows(
            ConnectException.class, () -> c.ensureAllowed("files", FileStreamSinkConnector.class));
    String message = e.getMessage();
    assertTrue(message.contains("connector.client.config.override.policy=None"), message);
    for (String key : EVERY_FAMILY.keySet()) {
      assertTrue(message.contains(key), key + " in " + message);
    }
    for (String value : EVERY_FAMILY.values()) {
      assertFalse(message.contains(value), value + " in " + message);
    }
    assertFalse(message.contains("secret"), message);
    clients(securedWorker("All"), EVERY_FAMILY).ensureAllowed("f", FileStreamSinkConnector.class);
  }

  @Test
  void theRuntimeAlreadyAsksAboutAProducerAndSometimesAdminAndConsumerOverrides() {
    assertEquals(
        Set.of(ClientType.PRODUCER), clients(securedWorker(null), Map.of()).askedByTheRuntime());
    assertEquals(
        Set.of(ClientType.PRODUCER, ClientType.ADMIN),
        clients(securedWorker(null), Map.of("topic.creation.default.partitions", "1"))
            .askedByTheRuntime());
    Map<String, String> eos = securedWorker(null);
    eos.put("exactly.once.source.support", "enabled");
    assertEquals(
        Set.of(ClientType.PRODUCER, ClientType.ADMIN, ClientType.CONSUMER),
        clients(eos, Map.of()).askedByTheRuntime());
  }

  // ------------------------------------------------------------------------------------------
  // where the clients connect

  private static final BootstrapServers.HostResolver ANY_HOST = host -> {};

  @Test
  void aConsumerOnOtherServersThanTheAdminClientIsRefusedNamingTheAdminKey() {
    Map<String, String> problems =
        clients(securedWorker(null), Map.of("share.consumer.bootstrap.servers", "other:9092"))
            .connectionProblems(ANY_HOST);
    String message = problems.get("share.consumer.bootstrap.servers");
    assertTrue(
        message != null && message.contains("admin.override.bootstrap.servers"),
        problems::toString);
    // Pointing the admin client there too settles it; the same servers in another order as well.
    assertEquals(
        Map.of(),
        clients(
                securedWorker(null),
                Map.of(
                    "consumer.override.bootstrap.servers", "a:1,b:2",
                    "admin.override.bootstrap.servers", "b:2, a:1"))
            .connectionProblems(ANY_HOST));
    // The worker's own consumer.bootstrap.servers is the operator's choice, not checked.
    Map<String, String> worker = securedWorker(null);
    worker.put("consumer.bootstrap.servers", "consumers:9092");
    assertEquals(Map.of(), clients(worker, Map.of()).connectionProblems(ANY_HOST));
  }

  @Test
  void aWorkerConfigurationThatCannotBeSeenRefusesEveryOverrideAsNone() {
    // Before: no worker configuration seen was taken as an empty one, whose policy is Kafka's
    // default All, so every override went through.
    Map<String, String> props = new LinkedHashMap<>();
    props.put("consumer.override.max.poll.records", "5");
    props.put("share.consumer.security.protocol", "SASL_SSL");
    props.put("share.group.id", "someone-elses-group");
    props.put("producer.override.linger.ms", "5");
    props.put("admin.override.bootstrap.servers", "elsewhere:9092");
    ConnectorClients c =
        ConnectorClients.of(
            WorkerDefaults.invisible("nothing of it is visible in this test"), props);
    Map<String, List<String>> refused = c.refusals("c", FileStreamSinkConnector.class);
    assertEquals(props.keySet(), refused.keySet(), refused::toString);
    for (Map.Entry<String, List<String>> e : refused.entrySet()) {
      String m = String.join(" ", e.getValue());
      assertTrue(m.startsWith(e.getKey() + ": "), m);
      assertTrue(m.contains("cannot see this worker's configuration"), m);
      assertTrue(m.contains("rest.extension.classes"), m);
      assertTrue(m.contains("io.sharesink.connect.rest.ShareModeRestExtension"), m);
      assertTrue(m.contains("ConnectDistributed"), m);
      assertFalse(m.contains("elsewhere") || m.contains("someone-elses-group"), m);
    }
    ConnectException e =
        assertThrows(
            ConnectException.class, () -> c.ensureAllowed("c", FileStreamSinkConnector.class));
    assertTrue(e.getMessage().contains("policy=None"), e.getMessage());
    assertTrue(e.getMessage().contains("consumer.override.max.poll.records"), e.getMessage());
    // Validation asks about every client type itself then: sharesink's start would refuse them.
    assertEquals(Set.of(), c.askedByTheRuntime());
    // Without overrides there is nothing to refuse.
    assertEquals(
        Map.of(),
        ConnectorClients.of(WorkerDefaults.invisible("x"), Map.of())
            .refusals("c", FileStreamSinkConnector.class));
  }

  @Test
  void missingOrMalformedServersAreSaidOnTheKeyTheyCameFrom() {
    Map<String, String> noServers =
        clients(Map.of("bootstrap.servers", ""), Map.of()).connectionProblems(ANY_HOST);
    assertTrue(
        noServers.get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG).contains("no bootstrap servers"),
        noServers::toString);
    Map<String, String> malformed =
        clients(
                securedWorker(null),
                Map.of(
                    "consumer.override.bootstrap.servers", "no-port",
                    "admin.override.bootstrap.servers", "no-port"))
            .connectionProblems(ANY_HOST);
    assertTrue(malformed.containsKey("consumer.override.bootstrap.servers"), malformed::toString);
    assertTrue(malformed.containsKey("admin.override.bootstrap.servers"), malformed::toString);
    Map<String, String> worker = securedWorker(null);
    worker.put("bootstrap.servers", "no-port");
    Map<String, String> fromWorker = clients(worker, Map.of()).connectionProblems(ANY_HOST);
    assertTrue(
        fromWorker
            .get(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG)
            .contains("bootstrap.servers=no-port"),
        fromWorker::toString);
  }
}
