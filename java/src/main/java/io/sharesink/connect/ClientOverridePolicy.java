package io.sharesink.connect;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest.ClientType;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.health.ConnectorType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's {@code connector.client.config.override.policy}, asked as the classic runtime asks
 * it about a sink connector's client overrides (Connect's {@code AbstractHerder
 * .validateClientOverrides} and {@code Worker.connectorClientConfigOverrides}): one request per
 * client type, the overrides typed by that client's {@code ConfigDef}, the connector shown as the
 * legacy sink it runs. The runtime cannot ask for us: to it our connector is a source connector.
 *
 * <p>The policy is the worker's own class (the built-in ones live in connect-runtime on the
 * worker's class path; the connect-api interface is all this plugin compiles against), instantiated
 * and configured with the worker's configuration as the worker does. A policy that cannot be loaded
 * refuses every override: it exists to keep connectors from overriding settings, so not being able
 * to ask it must not allow them. For the same reason, when the worker's configuration cannot be
 * seen at all ({@link WorkerDefaults#visible()}), the policy is taken as {@code None}: every
 * override refused, each refusal naming how to make the configuration visible.
 */
final class ClientOverridePolicy {

  private static final Logger log = LoggerFactory.getLogger(ClientOverridePolicy.class);

  /** The worker's key (WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG). */
  static final String POLICY_CONFIG = "connector.client.config.override.policy";

  /** The worker's default since Kafka 3.0 (KIP-722), still in 4.4. */
  static final String POLICY_DEFAULT = "All";

  private static final String BUILT_IN_PACKAGE = "org.apache.kafka.connect.connector.policy.";
  private static final String SUFFIX = "ConnectorClientConfigOverridePolicy";

  /** The most restrictive of Kafka's built-in policies. */
  static final String POLICY_NONE = "None";

  private final String policyName;
  private final Map<String, ?> workerConfig;

  /** Why the worker's configuration cannot be seen, when this policy stands in for it. */
  private final String invisibleBecause;

  private ClientOverridePolicy(
      String policyName, Map<String, ?> workerConfig, String invisibleBecause) {
    this.policyName = policyName;
    this.workerConfig = workerConfig;
    this.invisibleBecause = invisibleBecause;
  }

  /**
   * The policy {@code worker} names, or Connect's default; {@code None} when the worker's
   * configuration cannot be seen (warned about once).
   */
  static ClientOverridePolicy of(WorkerDefaults worker) {
    if (!worker.visible()) {
      worker.warnOnceIfInvisible();
      return new ClientOverridePolicy(
          POLICY_NONE, Map.of(), worker.invisibleBecause().orElse("unknown"));
    }
    String name = worker.settings().get(POLICY_CONFIG);
    if (name == null || name.isBlank()) {
      name = POLICY_DEFAULT;
    }
    return new ClientOverridePolicy(name.trim(), worker.settings(), null);
  }

  /** The policy's name as the worker's setting would say it. */
  String name() {
    return invisibleBecause == null
        ? policyName
        : policyName + " (sharesink cannot see the worker's configuration)";
  }

  /**
   * What the policy says about one client's overrides: the refused ones, by client key, with the
   * policy's messages. Empty when there are none or all are allowed.
   *
   * @param connectorClass the legacy sink's class, which the policy sees as the runtime would show
   *     it
   * @param overrides the overrides by client key ({@code max.poll.records}), as written
   */
  Map<String, List<String>> refusals(
      String connectorName,
      Class<? extends Connector> connectorClass,
      ClientType clientType,
      Map<String, String> overrides) {
    Map<String, List<String>> refused = new LinkedHashMap<>();
    if (overrides.isEmpty()) {
      return refused;
    }
    if (invisibleBecause != null) {
      String message =
          "sharesink cannot see this worker's configuration, so it cannot ask the worker's "
              + POLICY_CONFIG
              + " about this override and allows none ("
              + invisibleBecause
              + "); to fix it, "
              + WorkerDefaults.HOW_TO_MAKE_VISIBLE;
      overrides.keySet().forEach(k -> refused.put(k, List.of(message)));
      return refused;
    }
    List<ConfigValue> answers;
    try {
      answers = ask(connectorName, connectorClass, clientType, typed(clientType, overrides));
    } catch (RuntimeException | LinkageError e) {
      log.warn(
          "Cannot ask the worker's {}={} about the connector's {} overrides; refusing them",
          POLICY_CONFIG,
          policyName,
          clientType,
          e);
      String message =
          "cannot check this override against the worker's "
              + POLICY_CONFIG
              + "="
              + policyName
              + " ("
              + e
              + "), so it is not allowed";
      overrides.keySet().forEach(k -> refused.put(k, List.of(message)));
      return refused;
    }
    for (ConfigValue answer : answers) {
      if (!answer.errorMessages().isEmpty()) {
        refused.put(answer.name(), List.copyOf(answer.errorMessages()));
      }
    }
    return refused;
  }

  /** The overrides typed as the runtime types them before asking the policy. */
  private static Map<String, Object> typed(ClientType clientType, Map<String, String> overrides) {
    Map<String, ConfigDef.ConfigKey> keys = configDef(clientType).configKeys();
    Map<String, Object> typed = new LinkedHashMap<>();
    overrides.forEach((key, value) -> typed.put(key, typed(keys.get(key), key, value)));
    return typed;
  }

  private static ConfigDef configDef(ClientType clientType) {
    return switch (clientType) {
      case PRODUCER -> ProducerConfig.configDef();
      case ADMIN -> AdminClientConfig.configDef();
      default -> ConsumerConfig.configDef();
    };
  }

  private static Object typed(ConfigDef.ConfigKey def, String clientKey, String value) {
    if (def == null) {
      return value;
    }
    try {
      return ConfigDef.parseType(clientKey, value, def.type);
    } catch (ConfigException e) {
      return value; // the policy judges the key; a bad value is the client's to report
    }
  }

  private List<ConfigValue> ask(
      String connectorName,
      Class<? extends Connector> connectorClass,
      ClientType clientType,
      Map<String, Object> overrides) {
    ConnectorClientConfigOverridePolicy policy = instantiate();
    try {
      policy.configure(workerConfig);
      List<ConfigValue> answers =
          policy.validate(
              new ConnectorClientConfigRequest(
                  connectorName, ConnectorType.SINK, connectorClass, overrides, clientType));
      return answers == null ? List.of() : answers;
    } finally {
      try {
        policy.close();
      } catch (Exception e) {
        log.debug("Closing {} failed", policyName, e);
      }
    }
  }

  private ConnectorClientConfigOverridePolicy instantiate() {
    Class<?> type = load();
    if (!ConnectorClientConfigOverridePolicy.class.isAssignableFrom(type)) {
      throw new ConnectException(
          type.getName() + " is not a " + ConnectorClientConfigOverridePolicy.class.getName());
    }
    return LegacyPlugins.newInstance(type.asSubclass(ConnectorClientConfigOverridePolicy.class));
  }

  /**
   * The class, by the names the worker accepts: a class name, or an alias (its simple name, with or
   * without the {@value #SUFFIX} suffix), tried through the worker's plugin loaders (which know
   * every installed policy's alias) and then as one of Kafka's built-in policies.
   */
  private Class<?> load() {
    List<String> candidates = new ArrayList<>();
    candidates.add(policyName);
    if (!policyName.contains(".")) {
      String simple = policyName.endsWith(SUFFIX) ? policyName : policyName + SUFFIX;
      candidates.add(BUILT_IN_PACKAGE + simple);
    }
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    ClassNotFoundException last = null;
    for (ClassLoader loader :
        new ClassLoader[] {context, ClientOverridePolicy.class.getClassLoader()}) {
      if (loader == null) {
        continue;
      }
      for (String candidate : candidates) {
        try {
          return loader.loadClass(candidate);
        } catch (ClassNotFoundException e) {
          last = e;
        }
      }
    }
    throw new ConnectException(
        "no ConnectorClientConfigOverridePolicy class named " + policyName + " on this worker",
        last);
  }
}
